// Live updates: a websocket brings notices, and the page patches what they
// carry (counts) at once, with no request. Fragments are fetched afresh
// (htmx, on the body's "refresh" and "refresh-slow" events) only for what
// notices do not carry: "refresh" when the viewer's own reservations
// changed, after a resync or a reconnect; "refresh-slow", at most about
// once a second, when others' reservations or a batch changed (the
// supervisor's tables). Each waits a random moment, so that a floor of
// open pages does not fetch all at once; one that comes while a fetch is
// under way is kept until it ends. Every fragment also polls every 15 s,
// which heals what a lost notice left behind. internal/handlers/ws.go
// sends the notices; cmd/bench's floor scenario models these requests
// (keep the two in step).
import { all, one } from "./dom.js";
import { lose } from "./countdown.js";
import { isActing } from "./forms.js";
import { heardCounts, setCounts } from "./counts.js";
import { offline } from "./offline.js";
import { alertNewWork } from "./settings.js";
import { toast } from "./toasts.js";

/**
 * A notice, as internal/notify sends it (the fields the page reads).
 * @typedef {import("./counts.js").Counts & {
 *   type: string, job_id?: string, title?: string, operator?: string,
 *   deadline?: string, action?: string, actor?: string, reason?: string, paused?: boolean,
 * }} Notice
 */

/**
 * refresher schedules the body's event: at least gap ms apart, after a
 * random moment up to jitter ms.
 * @param {string} event
 * @param {number} gap
 * @param {number} jitter
 */
function refresher(event, gap, jitter) {
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  let last = 0, waiting = false;
  function fire() {
    timer = null;
    if (one(".htmx-request")) { waiting = true; return; }
    last = Date.now();
    document.body.dispatchEvent(new Event(event));
  }
  return {
    /**
     * soon asks for a refresh within a random moment up to spread ms
     * (jitter by default), at least gap ms after the last.
     * @param {number} [spread]
     */
    soon(spread) {
      if (timer) return;
      const wait = Math.max(0, last + gap - Date.now()) + 50 + Math.random() * (spread || jitter);
      timer = setTimeout(fire, wait);
    },
    /** settled is told when a fetch ended: a refresh kept meanwhile goes. */
    settled() {
      if (waiting && !one(".htmx-request")) { waiting = false; this.soon(); }
    },
  };
}
const mine = refresher("refresh", 0, 200), others = refresher("refresh-slow", 1000, 400);
// After a reconnect or a resync every page fetches: spread them wide.
const RESYNC_SPREAD = 2000;

/**
 * jobChanged has a page that watches a job (a supervisor's view of it)
 * fetch it afresh: when a notice names it, or (no id) when notices may
 * have been missed.
 * @param {string} [id]
 */
function jobChanged(id) {
  const sel = id ? '[data-watch-job="' + CSS.escape(id) + '"]' : "[data-watch-job]";
  all(sel).forEach((el) => { el.dispatchEvent(new Event("job-changed")); });
}

/**
 * extended shows the new deadline of the page's reservation. Extended
 * elsewhere (another tab), More time's box fetches itself afresh, for
 * what the server offers now; extended by this page, its answer brought
 * the box already.
 * @param {string} deadline
 */
function extended(deadline) {
  all("[data-deadline]").forEach((el) => { el.dataset.deadline = deadline; });
  const box = document.getElementById("extend");
  if (box && !isActing() && Date.parse(box.dataset.renderedFor || "") !== Date.parse(deadline)) {
    box.dispatchEvent(new Event("extended-elsewhere"));
  }
}

/** @param {Notice} n */
function onNotice(n) {
  if (n.job_id) jobChanged(n.job_id);
  const work = one("[data-job-id][data-held]");
  switch (n.type) {
    case "queue.changed":
      heardCounts(n);
      // An operator's card of a queue with routed jobs counts what they
      // may claim, which the notice does not say: the home says it afresh.
      if (one('[data-queue="' + CSS.escape(n.queue) + '"][data-routed]')) mine.soon();
      // What notices do not carry: the supervisor's "dead today",
      // "completed last hour" and "oldest waiting", a queue's tabs and charts.
      others.soon();
      return;
    case "job.available": {
      const card = one('[data-queue="' + CSS.escape(n.queue) + '"]');
      if (!card || !card.hasAttribute("data-paused")) {
        toast(n.queue, n.title, n.job_id);
        if (card && document.hidden) alertNewWork(n.queue, n.title);
      }
      return;
    }
    case "queue.settings":
      // Paused or resumed: the claim buttons follow at once, and the page
      // fetches what it says of the queue.
      all('[data-queue="' + CSS.escape(n.queue) + '"]').forEach((card) => {
        card.toggleAttribute("data-paused", !!n.paused);
        const b = /** @type {HTMLButtonElement | null} */ (one("button[data-claim]", card));
        if (b && n.paused) b.disabled = true;
      });
      mine.soon();
      return;
    case "reservation.extended":
      if (work && work.dataset.jobId === n.job_id && n.deadline) extended(n.deadline);
      break;
    case "reservation.expiring":
      // The server warns a minute ahead; a short lease's page warns later
      // (its countdown's data-warn-ms), in the words it has.
      if (work && work.dataset.jobId === n.job_id) {
        const soon = document.getElementById("soon");
        const timer = one("[data-warn-target='#soon']");
        const left = n.deadline ? Date.parse(n.deadline) - Date.now() : 0;
        if (soon && (!timer || left <= Number(timer.dataset.warnMs) + 1000)) soon.hidden = false;
      }
      return;
    case "reservation.expired":
    case "reservation.released":
    case "reservation.completed":
      // The deadline, another tab, or a supervisor ended it: this page can
      // do no more, and says why.
      if (work && work.dataset.jobId === n.job_id) lose(n.action || "", n.actor || "", n.reason || "");
      break;
    case "reservation.created":
      break;
    case "resync":
      jobChanged();
      mine.soon(RESYNC_SPREAD);
      return;
    default: // job.finished, job.sla (the due times' counts), batch.changed, batch.finished
      others.soon();
      return;
  }
  // A reservation changed: the viewer's own (the home lists them), or, for
  // a supervisor, anyone's.
  if (n.operator === document.body.dataset.user) mine.soon(); else others.soon();
}

// Close codes of a live connection refused for a cap on them
// (internal/handlers/live.go), and how long a paused page waits, about,
// before it tries again.
const CLOSE_TOO_MANY_FROM_ADDRESS = 4002;
const CLOSE_TOO_MANY_FOR_USER = 4003;
const PAUSED_RETRY = 60000;

/**
 * pause says that live updates are paused and why (the server's words),
 * or, with no reason, hides the words again.
 * @param {HTMLElement} live
 * @param {string} reason
 */
function pause(live, reason) {
  const box = document.getElementById("live-paused");
  if (!box) return;
  box.hidden = !reason;
  if (!reason) return;
  live.dataset.state = "paused";
  live.textContent = "paused";
  box.textContent = "Live updates paused: " + reason + ". This page does not change by itself meanwhile: reload it to see what is new. It tries again in about a minute.";
}

function connect() {
  const live = document.getElementById("live");
  if (!live || !window.WebSocket) return;
  let delay = 500;
  function open() {
    if (!live) return;
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    ws.onopen = () => { delay = 500; };
    ws.onmessage = (e) => {
      const n = JSON.parse(e.data);
      if (n.type === "snapshot") {
        offline.set(false);
        pause(live, "");
        live.dataset.state = "live";
        live.textContent = "live";
        /** @type {import("./counts.js").Counts[]} */ (n.queues).forEach(setCounts);
        // After a (re)connect: notices may have been missed.
        mine.soon(RESYNC_SPREAD);
        jobChanged();
        return;
      }
      // Notices close together come as one message.
      /** @type {Notice[]} */ (n.type === "notices" ? n.notices : [n]).forEach(onNotice);
    };
    ws.onclose = (e) => {
      // The session ended (the account was disabled, or its password
      // changed): reloading leads to the login page.
      if (e.code === 4001) { location.reload(); return; }
      // Refused for a cap on live connections: the server is there, so
      // the page says why it is not live, and tries again a while later.
      if (e.code === CLOSE_TOO_MANY_FROM_ADDRESS || e.code === CLOSE_TOO_MANY_FOR_USER) {
        pause(live, e.reason);
        setTimeout(open, PAUSED_RETRY * (0.5 + Math.random()));
        return;
      }
      live.dataset.state = "reconnecting";
      live.textContent = "reconnecting…";
      offline.lost();
      // A restarted server meets its pages one by one, not all at once.
      setTimeout(open, delay * (0.5 + Math.random()));
      delay = Math.min(delay * 2, 10000);
    };
  }
  open();
}

/** startLive opens the live connection and follows its notices. */
export function startLive() {
  ["htmx:afterSettle", "htmx:afterRequest"].forEach((type) => {
    document.addEventListener(type, () => {
      setTimeout(() => { mine.settled(); others.settled(); }, 0);
    });
  });
  connect();
}
