// This browser's settings (the "Keyboard & alerts" box): single-key
// shortcuts on or off, and how to be told of new work while the tab is
// hidden; and the shortcuts themselves.
import { all, one } from "./dom.js";
import { isActing } from "./forms.js";

const store = {
  /**
   * @param {string} k
   * @param {string} d
   * @returns {string}
   */
  get(k, d) { try { return localStorage.getItem("claimdesk." + k) || d; } catch { return d; } },
  /**
   * @param {string} k
   * @param {string} v
   */
  set(k, v) { try { localStorage.setItem("claimdesk." + k, v); } catch { /* kept for this page only */ } },
};

function hotkeysOn() {
  return store.get("hotkeys", "on") === "on";
}

// applyHotkeys shows the buttons' keys, to the eye and to assistive
// technology, only while single-key shortcuts are on.
function applyHotkeys() {
  const on = hotkeysOn();
  document.documentElement.classList.toggle("no-hotkeys", !on);
  all("[data-hotkey]").forEach((b) => {
    if (on) b.setAttribute("aria-keyshortcuts", b.dataset.hotkey || ""); else b.removeAttribute("aria-keyshortcuts");
  });
}

let alerted = 0;

/**
 * alertNewWork tells of a new job while the tab is hidden, as the viewer
 * chose: a short tone, or a browser notification; at most once in 10 s.
 * @param {string} queue
 * @param {string | undefined} title
 */
export function alertNewWork(queue, title) {
  const how = store.get("alert", "none");
  if (how === "none" || Date.now() - alerted < 10000) return;
  alerted = Date.now();
  if (how === "sound") tone();
  if (how === "notify" && window.Notification && Notification.permission === "granted") {
    const note = new Notification("New job in " + queue, { body: title || "", tag: "claimdesk-new-work" });
    note.onclick = () => { window.focus(); note.close(); };
  }
}

function tone() {
  const Audio = window.AudioContext;
  if (!Audio) return;
  const ctx = new Audio(), osc = ctx.createOscillator(), gain = ctx.createGain();
  osc.frequency.value = 880;
  gain.gain.setValueAtTime(0.08, ctx.currentTime);
  gain.gain.exponentialRampToValueAtTime(0.0001, ctx.currentTime + 0.35);
  osc.connect(gain).connect(ctx.destination);
  osc.onended = () => { ctx.close(); };
  osc.start();
  osc.stop(ctx.currentTime + 0.35);
}

const dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("settings"));

/**
 * buttonWords is what a button says, without its key.
 * @param {HTMLElement} b
 * @returns {string}
 */
function buttonWords(b) {
  if (b.dataset.hotkeyWords) return b.dataset.hotkeyWords;
  const copy = /** @type {HTMLElement} */ (b.cloneNode(true));
  all("kbd", copy).forEach((k) => { k.remove(); });
  return (copy.textContent || "").replace(/\s+/g, " ").trim();
}

/**
 * setting is the settings box's input for the setting k.
 * @param {HTMLDialogElement} d
 * @param {string} k
 * @returns {HTMLInputElement[]}
 */
function setting(d, k) {
  return /** @type {HTMLInputElement[]} */ (all("[data-setting=" + k + "]", d));
}

// The settings box lists the page's shortcuts, from its buttons.
function openSettings() {
  if (!dialog || dialog.open) return;
  const list = one("[data-shortcut-list]", dialog);
  if (!list) return;
  /** @type {Set<string>} */
  const seen = new Set();
  all("[data-page-key]", list).forEach((el) => { el.remove(); });
  all("main [data-hotkey]").forEach((b) => {
    const key = b.dataset.hotkey || "";
    if (seen.has(key)) return;
    seen.add(key);
    const dt = document.createElement("dt"), kbd = document.createElement("kbd"), dd = document.createElement("dd");
    kbd.textContent = key;
    dt.append(kbd);
    dd.textContent = buttonWords(b);
    dt.dataset.pageKey = dd.dataset.pageKey = "";
    list.append(dt, dd);
  });
  const none = one("[data-no-shortcuts]", dialog);
  if (none) none.hidden = seen.size > 0;
  setting(dialog, "hotkeys").forEach((c) => { c.checked = hotkeysOn(); });
  const how = store.get("alert", "none");
  setting(dialog, "alert").forEach((r) => { r.checked = r.value === how; });
  dialog.showModal();
}

/**
 * changed keeps a setting the viewer changed in the box.
 * @param {HTMLDialogElement} d
 * @param {Event} e
 */
function changed(d, e) {
  const el = /** @type {HTMLInputElement} */ (e.target);
  if (el.dataset.setting === "hotkeys") {
    store.set("hotkeys", el.checked ? "on" : "off");
    applyHotkeys();
  }
  if (el.dataset.setting !== "alert") return;
  const problem = one("[data-alert-problem]", d);
  if (problem) problem.hidden = true;
  if (el.value !== "notify") { store.set("alert", el.value); return; }
  /** @param {string} words */
  const refused = (words) => {
    if (problem) {
      problem.textContent = words;
      problem.hidden = false;
    }
    const was = store.get("alert", "none");
    setting(d, "alert").forEach((r) => { r.checked = r.value === was; });
  };
  if (!window.Notification) { refused("This browser does not show notifications."); return; }
  Promise.resolve(Notification.requestPermission()).then((p) => {
    if (p === "granted") store.set("alert", "notify");
    else refused("Notifications are blocked for claimdesk in this browser's settings.");
  });
}

/**
 * typing reports whether t takes letters: a text box does, a radio
 * button or a checkbox does not.
 * @param {EventTarget | null} t
 * @returns {boolean}
 */
function typing(t) {
  if (!(t instanceof HTMLElement)) return false;
  return t.isContentEditable || /^(TEXTAREA|SELECT)$/.test(t.tagName) ||
    t instanceof HTMLInputElement && !/^(radio|checkbox|button|submit)$/.test(t.type);
}

/** startSettings applies the settings and listens for shortcuts. */
export function startSettings() {
  applyHotkeys();
  document.addEventListener("htmx:afterSwap", applyHotkeys);
  document.addEventListener("click", (e) => {
    const t = /** @type {Element} */ (e.target);
    if (t.closest && t.closest("[data-open-settings]")) openSettings();
  });
  if (dialog) dialog.addEventListener("change", (e) => changed(dialog, e));
  // Single-key shortcuts (c: claim next; on the work page n, d, m, g, s, f),
  // never while typing, and none while they are turned off; ? opens the
  // box that lists them.
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat || isActing() || !hotkeysOn() || (dialog && dialog.open)) return;
    if (typing(e.target)) return;
    if (e.key === "?") { e.preventDefault(); openSettings(); return; }
    const b = /** @type {HTMLButtonElement | null} */ (one('main [data-hotkey="' + CSS.escape(e.key) + '"]'));
    if (!b || b.disabled) return;
    e.preventDefault();
    // A disclosure's shortcut opens it at its first field.
    const box = b.tagName === "SUMMARY" ? b.parentElement : null;
    if (!(box instanceof HTMLDetailsElement)) { b.click(); return; }
    box.open = true;
    const field = one("input:not([type=hidden]), textarea", box);
    if (field) field.focus();
  });
}
