// Toasts announce a new job on the operator's home.
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
  if (!box || !one("[data-queue]")) return; // the home only
  const t = document.createElement("div");
  t.className = "toast";
  t.setAttribute("role", "status");
  t.dataset.testid = "toast";
  const text = document.createElement("span");
  text.textContent = "New job in " + queue + (title ? ": " + title : "");
  const form = document.createElement("form");
  form.method = "post";
  form.action = jobId ? "/jobs/" + encodeURIComponent(jobId) + "/claim" : "/queues/" + encodeURIComponent(queue) + "/claim";
  const csrf = document.createElement("input");
  csrf.type = "hidden"; csrf.name = "_csrf"; csrf.value = document.body.dataset.csrf || "";
  const claim = document.createElement("button");
  claim.type = "submit"; claim.className = "primary small"; claim.textContent = "Claim";
  form.append(csrf, claim);
  const close = document.createElement("button");
  close.type = "button"; close.className = "link"; close.textContent = "×";
  close.setAttribute("aria-label", "Dismiss");
  close.addEventListener("click", () => { t.remove(); });
  t.append(text, form, close);
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
