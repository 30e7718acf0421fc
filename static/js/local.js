// Times come in UTC from the server, numbers as plain decimals: show them
// in the viewer's own zone and locale.
import { all } from "./dom.js";

/**
 * The viewer's locale as the server read it from Accept-Language (the
 * one that also reads the numbers the forms send); the browser's own when
 * it names none this browser knows.
 * @type {string | undefined}
 */
const locale = (() => {
  try {
    return Intl.getCanonicalLocales(document.documentElement.dataset.locale || [])[0];
  } catch {
    return undefined;
  }
})();

/** @type {Intl.DateTimeFormatOptions} */
const dateTime = { dateStyle: "medium", timeStyle: "medium" };
/** @type {Intl.DateTimeFormatOptions} */
const timeOnly = { timeStyle: "medium" };
/** @type {Intl.DateTimeFormatOptions} */
const short = { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
// A chart's axis, narrow: 23:00 rather than 11:00 PM.
/** @type {Intl.DateTimeFormatOptions} */
const axis = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };

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
      if (!isNaN(day.getTime())) el.textContent = day.toLocaleDateString(locale, { dateStyle: "medium" });
      return;
    }
    const d = new Date(iso);
    if (isNaN(d.getTime())) return;
    if (el.hasAttribute("data-ago")) {
      // How long ago stays; the whole time on hover, in the viewer's zone.
      el.title = d.toLocaleString(locale, dateTime);
      return;
    }
    el.textContent = unbroken(d, el.hasAttribute("data-time-only") ? timeOnly :
      el.hasAttribute("data-short") ? short : el.hasAttribute("data-axis") ? axis : dateTime);
    el.title = iso;
  });
}

/**
 * unbroken says a time in the viewer's locale with the options, its time
 * of day kept on one line: a narrow column may break "Nov 26, 9:22 PM"
 * after the date, never before the PM.
 * @param {Date} d
 * @param {Intl.DateTimeFormatOptions} options
 * @returns {string}
 */
function unbroken(d, options) {
  const parts = new Intl.DateTimeFormat(locale, options).formatToParts(d);
  return parts.map((p, i) => (p.type === "literal" && parts[i + 1]?.type === "dayPeriod" ? p.value.replace(/\s/g, "\u00a0") : p.value)).join("");
}

// Numbers of a job's details in the viewer's locale's way (the one the
// server read from Accept-Language, which also reads what the forms
// send): 3156.0 as 3,156, an amount of money as CHF 3,156.00, a rate as
// 8.1 % (the exact value on hover).
const number = new Intl.NumberFormat(locale, { maximumFractionDigits: 20 });
const percent = new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 2 });

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
      if (el.dataset.currency) money = new Intl.NumberFormat(locale, { style: "currency", currency: el.dataset.currency });
    } catch { /* not a currency this browser knows: a plain number */ }
    el.textContent = (money || (el.hasAttribute("data-percent") ? percent : number)).format(n);
    el.title = value;
  });
}

/** startLocal shows the page's times and numbers, and each swap's. */
export function startLocal() {
  // Forms that read times as the viewer means them send the viewer's zone.
  all("input[data-tz]", document).forEach((el) => {
    const input = /** @type {HTMLInputElement} */ (el);
    if (!input.value) input.value = Intl.DateTimeFormat().resolvedOptions().timeZone;
  });
  localTimes(document);
  localNumbers(document);
  // Right after a swap (an out-of-band one too), before the browser
  // paints the server's UTC.
  ["htmx:afterSwap", "htmx:oobAfterSwap"].forEach((type) => {
    document.addEventListener(type, (e) => {
      const root = /** @type {Element} */ (e.target);
      localTimes(root);
      localNumbers(root);
    });
  });
}
