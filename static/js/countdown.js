// Countdowns tick every second; a work page's says that the time ran out
// and disables its buttons when the deadline passes.
import { all, format, one } from "./dom.js";
import { isActing } from "./forms.js";

function tick() {
  const now = Date.now();
  all("[data-deadline]").forEach((el) => {
    const left = Date.parse(el.dataset.deadline || "") - now;
    if (isNaN(left)) return;
    const warnAt = Number(el.dataset.warnMs) || 60000; // the lease's last fifth (views.warnWithin)
    el.classList.toggle("soon", left > 0 && left <= warnAt);
    el.classList.toggle("expired", left <= 0);
    el.textContent = left > 0 ? format(left) : "expired";
    // Once the reservation ended (for whatever reason), the notice says
    // why; the countdown neither warns nor guesses any more.
    const ended = el.dataset.expireTarget ? one(el.dataset.expireTarget) : null;
    const over = !!ended && !ended.hidden;
    const warn = el.dataset.warnTarget ? one(el.dataset.warnTarget) : null;
    if (warn) warn.hidden = over || !(left > 0 && left <= warnAt);
    if (left <= 0 && ended && !over) lose("expired", "system");
  });
}

/**
 * endedSentence says why a reservation of the viewer's ended, by action of
 * actor and, when they said, why (reason), in the server's sentence
 * (views/history.go, outcomePhrases); "" for an action it has no sentence
 * for.
 * @param {HTMLElement} box
 * @param {string} action
 * @param {string} actor
 * @param {string} reason
 * @returns {string}
 */
function endedSentence(box, action, actor, reason) {
  /** @type {Record<string, Record<string, string>>} */
  let sentences = {};
  try { sentences = JSON.parse(box.dataset.outcomes || "{}"); } catch { /* none: say less */ }
  let kind = actor === document.body.dataset.user ? "own" : actor === "system" ? "system" : "other";
  if (kind === "other" && reason && (sentences.other_why || {})[action]) kind = "other_why";
  const sentence = (sentences[kind] || {})[action];
  return sentence ? sentence.split("{actor}").join(actor).split("{reason}").join(reason) : "";
}

/**
 * lose says why this work page's reservation ended (action of actor), and
 * disables its buttons: the server would refuse them anyway. A later
 * notice may correct the words (the countdown runs out before the
 * server's notice comes).
 * @param {string} action
 * @param {string} actor
 * @param {string} [reason] why, if the actor said
 */
export function lose(action, actor, reason = "") {
  if (isActing()) return;
  const box = document.getElementById("ended");
  if (!box) return;
  const sentence = endedSentence(box, action, actor, reason);
  if (!box.hidden && !sentence) return;
  // With no sentence for it, the page's own says the reservation ended.
  const why = one("[data-ended-why]", box);
  if (why && sentence) why.textContent = sentence;
  box.hidden = false;
  const soon = document.getElementById("soon");
  if (soon) soon.hidden = true;
  all(".work .actions button, .workbar button").forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = true; });
  const bar = one(".workbar"); // its time and action are void now
  if (bar) bar.hidden = true;
  const hint = document.getElementById("extend-hint"); // nothing to add to it
  if (hint) hint.hidden = true;
}

/** startCountdown runs the page's countdowns. */
export function startCountdown() {
  tick();
  setInterval(tick, 1000);
}
