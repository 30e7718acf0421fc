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

// The quarter hour chosen with the keys in each chart (by id), and the
// chart and quarter hour under the pointer: kept across a fetch that
// replaces the charts, so that the new ones go on saying it (htmx gives
// the focus back to the chart of the same id).
/** @type {Map<string, number>} */
const chosen = new Map();
/** @type {{id: string, i: number} | null} */
let under = null;

/**
 * leave ends the pointer's stay over the chart: it goes back to the
 * quarter hour chosen with the keys if it has the focus, else to what it
 * says of the whole day.
 * @param {HTMLElement} chart
 */
function leave(chart) {
  under = null;
  if (document.activeElement === chart) show(chart, keyed(chart)); else hide(chart);
}

// left ends the pointer's stay over the chart it was over where no event
// of that chart says so: a fetch that replaced the chart under the
// pointer leaves the chart's own pointerout to the old, detached one,
// whose events never reach the document.
function left() {
  const chart = under && document.getElementById(under.id);
  under = null;
  if (chart) leave(chart);
}

// The pointer moved, or touched: off the chart it was over, it has left
// that chart.
/** @param {PointerEvent} e */
function pointed(e) {
  const chart = chartAt(e);
  if (under && under.id !== chart?.id) left();
  if (!chart) return;
  const box = chart.getBoundingClientRect();
  under = { id: chart.id, i: Math.floor((e.clientX - box.left) / box.width * points(chart).length) };
  show(chart, under.i);
}

/**
 * keyed is the quarter hour chosen with the keys in the chart: now, until
 * the keys move.
 * @param {HTMLElement} chart
 */
function keyed(chart) {
  return chosen.get(chart.id) ?? points(chart).length - 1;
}

// Keys move by a quarter hour, an hour (Page Up/Down), or to either end.
/** @type {Record<string, (i: number, last: number) => number>} */
const moves = {
  ArrowLeft: (i) => i - 1, ArrowDown: (i) => i - 1,
  ArrowRight: (i) => i + 1, ArrowUp: (i) => i + 1,
  PageDown: (i) => i - 4, PageUp: (i) => i + 4,
  Home: () => 0, End: (_i, last) => last,
};

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
    if (!chart || (to && chart.contains(to))) return;
    leave(chart);
  });
  // Out of the window, as straight from a chart a fetch replaced.
  document.documentElement.addEventListener("pointerleave", () => { if (under) left(); });
  // New charts from a fetch: the one under the pointer says on.
  document.addEventListener("htmx:oobAfterSwap", (e) => {
    const chart = under ? document.getElementById(under.id) : null;
    const root = /** @type {Element} */ (e.target);
    if (under && chart && root.contains(chart)) show(chart, under.i);
  });
  document.addEventListener("focusin", (e) => {
    const chart = chartAt(e);
    if (chart) show(chart, keyed(chart));
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
    show(chart, move(keyed(chart), points(chart).length - 1));
    chosen.set(chart.id, Number(chart.getAttribute("aria-valuenow")));
  });
}
