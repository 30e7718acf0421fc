// Countdowns tick every second; a work page's says that the time ran out
// and disables its buttons when the deadline passes, and offers More time
// only when it would add some.
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
 * endedWords says why a reservation of the viewer's ended, by action of
 * actor, in the server's words (views/history.go, outcomePhrases); "" for
 * an action it has no words for.
 * @param {HTMLElement} box
 * @param {string} action
 * @param {string} actor
 * @returns {string}
 */
function endedWords(box, action, actor) {
  /** @type {Record<string, Record<string, string>>} */
  let phrases = {};
  try { phrases = JSON.parse(box.dataset.outcomes || "{}"); } catch { /* no words: say less */ }
  const kind = actor === document.body.dataset.user ? "own" : actor === "system" ? "system" : "other";
  const words = (phrases[kind] || {})[action];
  return words ? words.split("{actor}").join(actor) : "";
}

/**
 * lose says why this work page's reservation ended (action of actor), and
 * disables its buttons: the server would refuse them anyway. A later
 * notice may correct the words (the countdown runs out before the
 * server's notice comes).
 * @param {string} action
 * @param {string} actor
 */
export function lose(action, actor) {
  if (isActing()) return;
  const box = document.getElementById("ended");
  if (!box) return;
  const words = endedWords(box, action, actor);
  if (!box.hidden && !words) return;
  const why = one("[data-ended-why]", box);
  if (why) why.textContent = "This reservation ended" + (words ? ": " + words : "") + ".";
  box.hidden = false;
  const soon = document.getElementById("soon");
  if (soon) soon.hidden = true;
  all(".work .actions button, .workbar button").forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = true; });
  const bar = one(".workbar"); // its time and action are void now
  if (bar) bar.hidden = true;
}

// More time is offered only when it would add time (a press right after a
// claim would not), and says how much: the deadline would become now plus
// the lease, never past the longest hold.
function extendOffer() {
  const button = /** @type {HTMLButtonElement | null} */ (one("button[data-extend-ms]"));
  const clock = one("[data-testid=countdown]");
  if (!button || !clock) return;
  const now = Date.now(), deadline = Date.parse(clock.dataset.deadline || "");
  const lease = Number(button.dataset.extendMs), until = Date.parse(button.dataset.holdUntil || "");
  let target = now + lease;
  if (!isNaN(until)) target = Math.min(target, until);
  const gain = target - deadline, worth = gain >= Math.max(lease / 10, 5000);
  const hint = document.getElementById("extend-hint");
  const work = button.closest(".work");
  if (work && work.querySelector("#ended:not([hidden])")) {
    if (hint) hint.textContent = ""; // nothing to add to a reservation that ended
    return;
  }
  button.disabled = !worth;
  if (hint) hint.textContent = hint.dataset.extendHint +
    (worth ? " · adds " + format(gain) : " · adds time once some of it has passed");
}

function everySecond() {
  tick();
  extendOffer();
}

/** startCountdown runs the page's countdowns. */
export function startCountdown() {
  everySecond();
  setInterval(everySecond, 1000);
}
