// When the server cannot be reached (the live connection is down for more
// than a moment, a request could not be sent, or the browser is offline) a
// banner says so and forms wait; both come back by themselves once the
// live connection is up again.
import { all } from "./dom.js";

const box = document.getElementById("offline");
/** @type {ReturnType<typeof setTimeout> | null} */
let timer = null;
let probing = false;

/** The banner's state: on while the server cannot be reached. */
export const offline = {
  on: false,

  /**
   * set shows or hides the banner, and lets the page's buttons wait.
   * @param {boolean} on
   */
  set(on) {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!box || this.on === on) return;
    this.on = on;
    box.hidden = !on;
    document.body.classList.toggle("is-offline", on);
    fit();
    all("main form[method=post] button[type=submit], main button[form]").forEach((b) => {
      if (on) b.setAttribute("aria-disabled", "true"); else b.removeAttribute("aria-disabled");
    });
  },

  /** focus takes the viewer to the banner (a form that waits). */
  focus() {
    if (box) box.focus();
  },

  /**
   * lost says the live connection dropped: if it is still down in a
   * moment, the page asks the server itself (the live connection alone
   * may be refused, or not let through by a proxy).
   */
  lost() {
    if (this.on || timer) return;
    timer = setTimeout(() => {
      timer = null;
      const live = document.getElementById("live");
      if (live && live.dataset.state === "live") return;
      reachable().catch(probe);
    }, 2500);
  },
};

// fit tells the bars that stick to the top (the work page's time left)
// how tall the banner is, to stick below it.
function fit() {
  const h = offline.on && box ? box.offsetHeight + "px" : "0px";
  document.documentElement.style.setProperty("--banner-h", h);
}

/** @returns {Promise<void>} */
function reachable() {
  return fetch("/healthz", { cache: "no-store" }).then((r) => {
    if (!r.ok) throw new Error(String(r.status));
  });
}

// A request that could not be sent, or the browser going offline, may
// leave the live connection up: the page then asks the server itself,
// every few seconds, until it answers.
function probe() {
  offline.set(true);
  if (probing) return;
  probing = true;
  const again = () => {
    reachable().then(() => {
      probing = false;
      offline.set(false);
    }).catch(() => { setTimeout(again, 3000); });
  };
  again();
}

/** startOffline watches for the server going out of reach. */
export function startOffline() {
  if (box) {
    box.tabIndex = -1;
    window.addEventListener("resize", fit);
  }
  document.addEventListener("htmx:sendError", probe);
  window.addEventListener("offline", probe);
}
