// A queue's counts, wherever the page shows them: the operator's queue
// cards, the supervisor's table, and the tab's title.
import { all, htmx, one } from "./dom.js";

/**
 * A queue's counts, as a queue.changed notice or the snapshot carries them.
 * @typedef {object} Counts
 * @property {string} queue
 * @property {number} ready
 * @property {number} [held]
 * @property {number} [claimable] what a claim may take now: the server's count
 * @property {number} [scheduled]
 * @property {number} [reserved]
 * @property {number} [dead]
 */

/**
 * showCount sets the number in a "· N in progress"-like note, hidden at 0.
 * @param {HTMLElement | null} el
 * @param {number | undefined} n
 */
function showCount(el, n) {
  if (!el || n === undefined) return;
  el.hidden = !(n > 0);
  const num = one("[data-n]", el);
  if (num) num.textContent = String(n);
}

/** @param {Counts} n */
function setQueueCounts(n) {
  const ready = n.claimable;
  all('[data-queue="' + CSS.escape(n.queue) + '"]').forEach((card) => {
    if (ready === undefined) return;
    // A queue with routed jobs: the card counts what this operator may
    // claim, which the queue's counts do not say; the home's fetch, which
    // the notice asks for (live.js), does.
    if (card.hasAttribute("data-routed")) {
      showCount(one("[data-in-progress]", card), n.reserved);
      return;
    }
    const count = one("[data-claimable]", card);
    if (count) count.textContent = String(ready);
    const b = /** @type {HTMLButtonElement | null} */ (one("button[data-claim]", card));
    if (b) b.disabled = ready === 0 || card.hasAttribute("data-paused");
    const waiting = one("[data-waiting]", card);
    // How long the next job has waited is not in a notice: say only
    // whether one does, until the next fetch says since when.
    if (waiting && ready === 0) waiting.textContent = "Nothing waiting";
    if (waiting && ready > 0 && waiting.dataset.waiting === "none") waiting.textContent = "A job is waiting";
    if (waiting) waiting.dataset.waiting = ready > 0 ? "some" : "none";
    showCount(one("[data-in-progress]", card), n.reserved);
    showCount(one("[data-batch-wait]", card), n.held);
  });
  // The supervisor's table: how many died today is not in a notice; its
  // fetch (refresh-slow) says.
  all('[data-stats-queue="' + CSS.escape(n.queue) + '"]').forEach((row) => {
    /** @type {("ready" | "scheduled" | "reserved" | "dead")[]} */
    const kinds = ["ready", "scheduled", "reserved", "dead"];
    kinds.forEach((k) => {
      const cell = one('[data-count="' + k + '"]', row);
      const v = n[k];
      if (cell && v !== undefined) cell.textContent = String(v);
    });
  });
}

// The tab's title says how many jobs wait in the queues the page shows (an
// operator's, or all for a supervisor), so a tab in the background tells
// when there is work.
const baseTitle = document.title;
function showWaiting() {
  const cells = all("[data-queue] [data-claimable], [data-stats-queue] [data-count=ready]");
  if (!cells.length) return;
  let n = 0;
  cells.forEach((c) => { n += Number(c.textContent) || 0; });
  document.title = (n > 0 ? "(" + n + ") " : "") + baseTitle;
}

/**
 * setCounts shows a queue's counts (a queue.changed notice, or the
 * snapshot's) wherever the page shows them.
 * @param {Counts} n
 */
export function setCounts(n) {
  setQueueCounts(n);
  showWaiting();
}

// A fragment fetched before a notice arrived may show counts older than
// the notice's: after each swap, the counts of every notice that came
// since its request went out are shown again. (A fragment newer than such
// a notice is followed by the notices of what it shows.)
/** @type {Map<string, {n: Counts, at: number}>} queue → latest counts, and when they came */
const heard = new Map();

/**
 * heardCounts keeps a queue.changed notice's counts, and shows them.
 * @param {Counts} n
 */
export function heardCounts(n) {
  heard.set(n.queue, { n, at: Date.now() });
  setCounts(n);
}

/** startCounts keeps the counts shown current across fetches. */
export function startCounts() {
  showWaiting();
  document.addEventListener("htmx:afterSettle", showWaiting);
  document.addEventListener("htmx:beforeSend", (e) => {
    const d = htmx(e);
    if (d.xhr) d.xhr.sentAt = Date.now();
  });
  document.addEventListener("htmx:afterSwap", (e) => {
    const d = htmx(e);
    const sent = d.xhr && d.xhr.sentAt;
    if (!sent) return;
    heard.forEach((h) => {
      if (h.at >= sent) setCounts(h.n);
    });
  });
}
