// Times come in UTC from the server, numbers as plain decimals: show them
// in the viewer's own zone and locale.
import { all } from "./dom.js";

/** @type {Intl.DateTimeFormatOptions} */
const dateTime = { dateStyle: "medium", timeStyle: "medium" };
/** @type {Intl.DateTimeFormatOptions} */
const timeOnly = { timeStyle: "medium" };
/** @type {Intl.DateTimeFormatOptions} */
const short = { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };

/**
 * localTimes shows the times under root in the viewer's zone.
 * @param {ParentNode} root
 */
function localTimes(root) {
  all("time[datetime]", root).forEach((el) => {
    const iso = el.getAttribute("datetime") || "";
    if (el.hasAttribute("data-date-only")) {
      // A calendar date, the same day in every zone.
      const ymd = iso.split("-").map(Number);
      const day = new Date(ymd[0], ymd[1] - 1, ymd[2]);
      if (!isNaN(day.getTime())) el.textContent = day.toLocaleDateString(undefined, { dateStyle: "medium" });
      return;
    }
    const d = new Date(iso);
    if (isNaN(d.getTime())) return;
    if (el.hasAttribute("data-ago")) {
      // Said as how long ago: the exact time, in the viewer's zone, on hover.
      el.title = d.toLocaleString(undefined, dateTime);
      return;
    }
    el.textContent = d.toLocaleString(undefined, el.hasAttribute("data-time-only") ? timeOnly :
      el.hasAttribute("data-short") ? short : dateTime);
    el.title = iso;
  });
}

// Numbers of a job's details in the viewer's locale's way: 3156.0 as
// 3,156, an amount of money as CHF 3,156.00 (the exact value on hover).
const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 20 });

/**
 * localNumbers shows the numbers under root in the viewer's locale.
 * @param {ParentNode} root
 */
function localNumbers(root) {
  all("data[data-number]", root).forEach((el) => {
    const value = /** @type {HTMLDataElement} */ (el).value;
    const n = Number(value);
    if (!isFinite(n) || Math.abs(n) > Number.MAX_SAFE_INTEGER) return;
    let money = null;
    try {
      if (el.dataset.currency) money = new Intl.NumberFormat(undefined, { style: "currency", currency: el.dataset.currency });
    } catch { /* not a currency this browser knows: a plain number */ }
    el.textContent = (money || number).format(n);
    el.title = value;
  });
}

/** startLocal shows the page's times and numbers, and each swap's. */
export function startLocal() {
  localTimes(document);
  localNumbers(document);
  // Right after a swap, before the browser paints the server's UTC.
  document.addEventListener("htmx:afterSwap", (e) => {
    const root = /** @type {Element} */ (e.target);
    localTimes(root);
    localNumbers(root);
  });
}
