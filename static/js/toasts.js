// Toasts announce a new job on the operator's home, as the page's
// template (#new-job) shows one.
import { one } from "./dom.js";

/**
 * toast announces a new job; its Claim button claims that very job (the
 * server says so if it is gone, and offers the next).
 * @param {string} queue
 * @param {string | undefined} title
 * @param {string | undefined} jobId
 */
export function toast(queue, title, jobId) {
  const box = document.getElementById("toasts");
  const made = /** @type {HTMLTemplateElement | null} */ (document.getElementById("new-job"));
  if (!box || !made || !jobId) return; // the home only
  const t = /** @type {HTMLElement} */ (made.content.firstElementChild?.cloneNode(true));
  const slot = (/** @type {string} */ name) => one('[data-slot="' + name + '"]', t);
  const q = slot("queue"), named = slot("title"), titled = slot("titled");
  if (q) q.textContent = queue;
  if (named) named.textContent = title || "";
  if (titled) titled.hidden = !title;
  const form = /** @type {HTMLFormElement | null} */ (one("form[data-job-action]", t));
  if (form) form.action = (form.dataset.jobAction || "").replace("{job}", encodeURIComponent(jobId));
  one("[data-dismiss]", t)?.addEventListener("click", () => { t.remove(); });
  box.prepend(t);
  while (box.children.length > 3) box.lastElementChild?.remove();
  // It goes after 10 s, but not while the pointer is on it or it has the
  // focus.
  const expire = () => {
    if (t.matches(":hover, :focus-within")) { setTimeout(expire, 2000); return; }
    t.remove();
  };
  setTimeout(expire, 10000);
}
