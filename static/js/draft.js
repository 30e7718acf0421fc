// Drafts: the work page saves what its holder types in the complete form
// as the job's draft (the form's data-draft is where), a moment after they
// stop typing and as the page is left, and says when it did. If the job is
// taken from them, the next holder and the supervisors find it there.
import { one } from "./dom.js";

// PAUSE_MS is how long typing stops before the draft is saved.
const PAUSE_MS = 1500;

/** @type {HTMLFormElement | null} */
let pending = null; // the form typed in since its draft was last saved
let timer = 0;

/**
 * draftForm is the form of the work page that keeps a draft, if el is in
 * it.
 * @param {EventTarget | null} el
 * @returns {HTMLFormElement | null}
 */
function draftForm(el) {
  const form = el instanceof Element ? el.closest("form[data-draft]") : null;
  return form instanceof HTMLFormElement ? form : null;
}

/**
 * said shows how the last save went, in the form's status line.
 * @param {HTMLFormElement} form
 * @param {string} words
 */
function said(form, words) {
  const status = one("[data-draft-status]", form);
  if (status) status.textContent = words;
}

/** save sends the pending draft now. */
async function save() {
  const form = pending;
  clearTimeout(timer);
  pending = null;
  if (!form || !form.isConnected || !form.dataset.draft) return;
  try {
    const res = await fetch(form.dataset.draft, { method: "POST", body: new FormData(form), credentials: "same-origin" });
    said(form, res.ok ? "Draft saved at " + new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) + "." : "The draft could not be saved.");
  } catch {
    said(form, "The draft could not be saved: no connection.");
  }
}

/**
 * typed notes that the form changed, and saves its draft once typing
 * pauses.
 * @param {Event} e
 */
function typed(e) {
  const form = draftForm(e.target);
  if (!form) return;
  pending = form;
  clearTimeout(timer);
  timer = window.setTimeout(save, PAUSE_MS);
}

/** left saves the pending draft as the page goes, if the browser lets it. */
function left() {
  const form = pending;
  if (!form || !form.dataset.draft) return;
  clearTimeout(timer);
  pending = null;
  navigator.sendBeacon(form.dataset.draft, new FormData(form));
}

/** startDrafts keeps the work page's drafts. */
export function startDrafts() {
  document.addEventListener("input", typed);
  document.addEventListener("change", typed);
  // Completing sends what was typed as the result: no draft to save.
  document.addEventListener("submit", (e) => {
    if (draftForm(e.target)) {
      clearTimeout(timer);
      pending = null;
    }
  });
  addEventListener("pagehide", left);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") left();
  });
}
