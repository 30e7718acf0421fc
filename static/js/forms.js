// Forms: the CSRF token on htmx requests, confirmations before what cannot
// be undone or drops what was typed, a supervisor's reason asked with the
// confirmation, waiting while offline, the answer to
// a form sent in place, and the way to the first problem of a refused one.
import { htmx, one } from "./dom.js";
import { offline } from "./offline.js";

// Once a form is on its way, notices about what it did are no news to
// this page.
let acting = false;

/**
 * isActing reports whether a form of the page is on its way.
 * @returns {boolean}
 */
export function isActing() {
  return acting;
}

/**
 * typedIn reports whether anything in the form differs from what the
 * page came with: text typed, a choice made.
 * @param {HTMLFormElement} form
 * @returns {boolean}
 */
function typedIn(form) {
  return Array.from(form.elements).some((e) => {
    const el = /** @type {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | HTMLButtonElement} */ (e);
    if (/^(hidden|submit|button)$/.test(el.type) || ("readOnly" in el && el.readOnly) || el.disabled) return false;
    if (el instanceof HTMLInputElement && (el.type === "checkbox" || el.type === "radio")) return el.checked !== el.defaultChecked;
    if (el instanceof HTMLSelectElement && !el.multiple) {
      // With no option marked selected the browser shows the first it
      // may ("Choose…"): still no choice made.
      let shown = -1;
      Array.from(el.options).some((o) => {
        if (o.defaultSelected) { shown = o.index; return true; }
        if (shown < 0 && !o.disabled) shown = o.index;
        return false;
      });
      return el.selectedIndex !== shown;
    }
    if (el instanceof HTMLSelectElement) return Array.from(el.options).some((o) => o.selected !== o.defaultSelected);
    if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) return el.value !== el.defaultValue;
    return false;
  });
}

// asked is the form whose reason was just given: sent without asking again.
/** @type {HTMLFormElement | null} */
let asked = null;

/**
 * askReason asks for the reason of a supervisor's change in the page's
 * reason box (views.reasonDialog) instead of a bare confirmation: the form
 * says the question (data-confirm) and whether its queue requires a reason
 * (data-reason "required"); going ahead puts the reason in the form's
 * hidden "reason" field and sends it.
 * @param {HTMLFormElement} form
 * @param {HTMLButtonElement | null} button the button the form was sent
 * with: it asks its own question (data-confirm), and the form goes where
 * it sends it
 */
function askReason(form, button) {
  const dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("reason-dialog"));
  const field = /** @type {HTMLInputElement | null} */ (form.elements.namedItem("reason"));
  if (!dialog || !field) return;
  const box = /** @type {HTMLFormElement} */ (one("form", dialog));
  const text = /** @type {HTMLTextAreaElement} */ (one("textarea", dialog));
  const go = /** @type {HTMLButtonElement} */ (one("[data-reason-go]", dialog));
  const ask = one("[data-reason-ask]", dialog);
  if (ask) ask.textContent = (button && button.dataset.confirm) || form.dataset.confirm || "";
  const required = form.dataset.reason === "required";
  text.required = required;
  text.value = "";
  const hint = one("[data-reason-hint]", dialog);
  if (hint) hint.textContent = required ? "required in this queue" : "optional";
  go.textContent = (button && button.textContent) || "Go ahead";
  go.classList.toggle("danger", !!button && button.classList.contains("danger"));
  const held = new FormData(form);
  box.onsubmit = (e) => {
    const sub = /** @type {SubmitEvent} */ (e).submitter;
    if (!sub || !sub.hasAttribute("data-reason-go")) return; // Back
    field.value = text.value.trim();
    asked = form;
    // A page that refreshes itself (the live reservations, a job's page)
    // may have replaced the form while the box was open: the form as it
    // was, with the job as it was shown, is sent all the same, with what
    // it held when asked. (A choice the fetch kept for the new page,
    // hx-preserve, moved there out of this form.)
    if (!form.isConnected) {
      held.forEach((value, name) => {
        if (form.elements.namedItem(name) || typeof value !== "string") return;
        const kept = document.createElement("input");
        kept.type = "hidden";
        kept.name = name;
        kept.value = value;
        form.append(kept);
      });
      form.hidden = true;
      document.body.append(form);
    }
    form.requestSubmit(button && button.form === form ? button : null);
  };
  dialog.showModal();
  text.focus();
}

/**
 * submitted asks first where a form says so, and holds forms back while
 * the server cannot be reached.
 * @param {SubmitEvent} e
 */
function submitted(e) {
  const form = /** @type {HTMLFormElement} */ (e.target);
  if (form.method === "dialog") return; // closes a box; sends nothing
  // A form about what is ticked, with nothing ticked, says so instead.
  const needs = form.dataset.needs;
  if (needs && !document.querySelector(needs)) {
    e.preventDefault();
    e.stopPropagation();
    window.alert(form.dataset.needsWords);
    return;
  }
  if (form.dataset.reason && asked !== form) {
    e.preventDefault();
    e.stopPropagation();
    if (offline.on) offline.focus();
    else askReason(form, /** @type {HTMLButtonElement | null} */ (e.submitter));
    return;
  }
  const reasoned = asked === form;
  asked = null;
  // A button that sends the form elsewhere asks its own question.
  const by = e.submitter;
  let msg = reasoned ? "" : (by && by.dataset.confirm) || form.dataset.confirm;
  // Leaving the job (give back, skip, failure) drops what was typed to
  // complete it, a draft it started from too: ask first, whether by
  // button or by key.
  const drops = form.dataset.drops ? document.getElementById(form.dataset.drops) : null;
  if (!msg && drops instanceof HTMLFormElement && (typedIn(drops) || "resumed" in drops.dataset)) msg = form.dataset.dropsAsk;
  // Offline, a form would only lead to the browser's error page, and
  // what was typed would be gone: it waits until the server is back.
  if (offline.on || (msg && !window.confirm(msg))) {
    e.preventDefault();
    e.stopPropagation(); // nor does htmx send it
    if (offline.on) offline.focus();
    return;
  }
  acting = true;
}

/** startForms wires the page's forms. */
export function startForms() {
  // Every htmx request carries the page's CSRF token.
  document.addEventListener("htmx:configRequest", (e) => {
    htmx(e).headers["X-CSRF-Token"] = document.body.dataset.csrf || "";
  });
  document.addEventListener("submit", submitted, true);
  // A form answered in place (htmx) and not taken, or More time, leaves
  // the page as it was; one taken leads away (HX-Redirect). (The event's
  // elt is not the form when the answer replaced it: it bubbles from the
  // nearest element still in the page. The request's verb says what it
  // was.)
  document.addEventListener("htmx:afterRequest", (e) => {
    const d = htmx(e);
    if (d.requestConfig && d.requestConfig.verb === "post" && !(d.xhr && d.xhr.getResponseHeader("HX-Redirect"))) acting = false;
  });
  // A form answered in place that fails otherwise than the page expects
  // (the job is gone, the session ended, the server failed) shows the
  // answer's words in place of the page, as a form sent without the
  // script would.
  document.addEventListener("htmx:beforeSwap", (e) => {
    const d = htmx(e);
    if (d.xhr.status < 400 || !d.elt.matches || !d.elt.matches("form[hx-post]")) return;
    d.shouldSwap = true;
    d.isError = false;
    d.target = /** @type {Element} */ (document.querySelector("main"));
    d.selectOverride = "main";
    d.swapOverride = "outerHTML";
  });
  // A form answered with problems takes the operator to the first of them.
  document.addEventListener("htmx:afterSwap", (e) => {
    const root = /** @type {Element} */ (e.target);
    const problem = one(".field-problem, .problem[role=alert]", root);
    if (!problem) return;
    // The control the problem describes, else the nearest around it.
    const box = (problem.id && one('[aria-describedby~="' + CSS.escape(problem.id) + '"]', root)) ||
      /** @type {HTMLElement | null} */ (problem.closest("label, fieldset, form, details"));
    const controls = "input:not([type=hidden]), select, textarea, button";
    const field = box && (box.matches(controls) ? box : one(controls, box));
    if (field) field.focus();
  });
}
