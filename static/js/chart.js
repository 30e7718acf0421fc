// A queue's day charts: the quarter hour under the pointer (a mouse or a
// finger), or chosen with the arrow keys once a chart has the focus, says
// its time and value in the line under the chart, and to screen readers as
// the chart's value. The server renders the charts and each quarter
// hour's value in words; this only picks one. On a phone's width the
// charts start folded, so a queue's jobs come first.
import { all, one } from "./dom.js";

const SLOT = 15 * 60 * 1000;
/** @type {Intl.DateTimeFormatOptions} */
const hourMinute = { hour: "numeric", minute: "2-digit" };

/**
 * The chart's quarter hours' values in words, oldest first.
 * @param {HTMLElement} chart
 */
function points(chart) {
  return (chart.dataset.points || "").split("|");
}

/** @param {number} ms */
function clock(ms) {
  return new Date(ms).toLocaleTimeString(undefined, hourMinute);
}

/**
 * show marks quarter hour i of the chart and says its time and value.
 * @param {HTMLElement} chart
 * @param {number} i
 */
function show(chart, i) {
  const p = points(chart);
  i = Math.max(0, Math.min(p.length - 1, i));
  const from = Date.parse(chart.dataset.start || "") + i * SLOT;
  const text = clock(from) + "–" + (i === p.length - 1 ? "now" : clock(from + SLOT)) + ": " + p[i];
  chart.setAttribute("aria-valuenow", String(i));
  chart.setAttribute("aria-valuetext", text);
  const cursor = one(".cursor", chart);
  if (cursor) {
    cursor.setAttribute("x", String(i));
    cursor.setAttribute("visibility", "visible");
  }
  const readout = readoutOf(chart);
  if (readout) {
    if (readout.dataset.rest === undefined) readout.dataset.rest = readout.textContent || "";
    readout.textContent = text;
  }
}

/**
 * hide puts the chart's line back to what it says of the whole day.
 * @param {HTMLElement} chart
 */
function hide(chart) {
  const cursor = one(".cursor", chart);
  if (cursor) cursor.setAttribute("visibility", "hidden");
  const readout = readoutOf(chart);
  if (readout && readout.dataset.rest !== undefined) readout.textContent = readout.dataset.rest;
}

/** @param {HTMLElement} chart */
function readoutOf(chart) {
  const fig = chart.closest("figure");
  return fig ? one("[data-readout]", fig) : null;
}

/**
 * chartAt is the chart the event happened in, if any.
 * @param {Event} e
 */
function chartAt(e) {
  const t = /** @type {Element | null} */ (e.target);
  return t && t.closest ? /** @type {HTMLElement | null} */ (t.closest("[data-chart]")) : null;
}

/** @param {PointerEvent} e */
function pointed(e) {
  const chart = chartAt(e);
  if (!chart) return;
  const box = chart.getBoundingClientRect();
  show(chart, Math.floor((e.clientX - box.left) / box.width * points(chart).length));
}

// Keys move by a quarter hour, an hour (Page Up/Down), or to either end.
/** @type {Record<string, (i: number, last: number) => number>} */
const moves = {
  ArrowLeft: (i) => i - 1, ArrowDown: (i) => i - 1,
  ArrowRight: (i) => i + 1, ArrowUp: (i) => i + 1,
  PageDown: (i) => i - 4, PageUp: (i) => i + 4,
  Home: () => 0, End: (_i, last) => last,
};

// Which quarter hour a focused chart had chosen, kept across a fetch that
// replaces the chart (htmx gives the focus back to the chart of the same id).
/** @type {Map<string, number>} */
const chosen = new Map();

/** startCharts follows the pointer and the keys over the day's charts. */
export function startCharts() {
  if (matchMedia("(max-width: 640px)").matches) {
    all("details[data-fold-narrow]").forEach((d) => { /** @type {HTMLDetailsElement} */ (d).open = false; });
  }
  document.addEventListener("pointermove", pointed);
  document.addEventListener("pointerdown", pointed);
  document.addEventListener("pointerout", (e) => {
    const chart = chartAt(e);
    const to = /** @type {Node | null} */ (e.relatedTarget);
    if (chart && !(to && chart.contains(to)) && document.activeElement !== chart) hide(chart);
  });
  document.addEventListener("focusin", (e) => {
    const chart = chartAt(e);
    if (chart) show(chart, chosen.get(chart.id) ?? Number(chart.getAttribute("aria-valuenow")));
  });
  document.addEventListener("focusout", (e) => {
    const chart = chartAt(e);
    if (chart) hide(chart);
  });
  document.addEventListener("keydown", (e) => {
    const chart = chartAt(e);
    const move = chart && moves[e.key];
    if (!chart || !move) return;
    e.preventDefault();
    show(chart, move(Number(chart.getAttribute("aria-valuenow")), points(chart).length - 1));
    chosen.set(chart.id, Number(chart.getAttribute("aria-valuenow")));
  });
}
