// Small typed helpers over the DOM, shared by the page's modules.

/**
 * all returns the elements under root that match sel.
 * @param {string} sel
 * @param {ParentNode} [root]
 * @returns {HTMLElement[]}
 */
export function all(sel, root = document) {
  return /** @type {HTMLElement[]} */ (Array.from(root.querySelectorAll(sel)));
}

/**
 * one returns the first element under root that matches sel, or null.
 * @param {string} sel
 * @param {ParentNode} [root]
 * @returns {HTMLElement | null}
 */
export function one(sel, root = document) {
  return /** @type {HTMLElement | null} */ (root.querySelector(sel));
}

/**
 * format shows a duration in ms as m:ss, or h:mm:ss from an hour.
 * @param {number} ms
 * @returns {string}
 */
export function format(ms) {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
  const mm = (h > 0 && m < 10 ? "0" : "") + m, ss = (r < 10 ? "0" : "") + r;
  return h > 0 ? h + ":" + mm + ":" + ss : mm + ":" + ss;
}

/**
 * The detail of the htmx events the page listens to (the fields it reads).
 * @typedef {object} HtmxDetail
 * @property {XMLHttpRequest & {sentAt?: number}} xhr
 * @property {Element} elt
 * @property {Element} target
 * @property {{verb: string}} [requestConfig]
 * @property {Record<string, string>} headers
 * @property {boolean} [shouldSwap]
 * @property {boolean} [isError]
 * @property {Element | null} [swapTarget]
 * @property {string} [selectOverride]
 * @property {string} [swapOverride]
 */

/**
 * htmx returns the detail of an htmx event.
 * @param {Event} e
 * @returns {HtmxDetail}
 */
export function htmx(e) {
  return /** @type {CustomEvent<HtmxDetail>} */ (e).detail;
}
