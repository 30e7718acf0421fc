// claimdesk: countdowns, local times, live notices, confirmations,
// keyboard shortcuts, CSRF for htmx.
// Small on purpose; the server renders everything else.
(function () {
  "use strict";

  // Every htmx request carries the page's CSRF token.
  document.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = document.body.dataset.csrf;
  });

  function format(ms) {
    var s = Math.round(ms / 1000);
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    var mm = (h > 0 && m < 10 ? "0" : "") + m, ss = (r < 10 ? "0" : "") + r;
    return h > 0 ? h + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  // Countdowns tick every second; a work page's says that the time ran out
  // and disables its buttons when the deadline passes.
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Date.parse(el.dataset.deadline) - now;
      if (isNaN(left)) return;
      el.classList.toggle("soon", left > 0 && left <= 60000);
      el.classList.toggle("expired", left <= 0);
      el.textContent = left > 0 ? format(left) : "expired";
      // Once the reservation ended (for whatever reason), the notice says
      // why; the countdown neither warns nor guesses any more.
      var ended = el.dataset.expireTarget && document.querySelector(el.dataset.expireTarget);
      var over = ended && !ended.hidden;
      var warn = el.dataset.warnTarget && document.querySelector(el.dataset.warnTarget);
      if (warn) warn.hidden = over || !(left > 0 && left <= 60000);
      if (left <= 0 && ended && !over) lose("expired", "system");
    });
  }
  // endedWords says why a reservation of the viewer's ended, by action of
  // actor, in the server's words (views/history.go, outcomePhrases); ""
  // for an action it has no words for.
  function endedWords(box, action, actor) {
    var phrases = {};
    try { phrases = JSON.parse(box.dataset.outcomes || "{}"); } catch (e) { /* no words: say less */ }
    var kind = actor === document.body.dataset.user ? "own" : actor === "system" ? "system" : "other";
    var words = (phrases[kind] || {})[action];
    return words ? words.split("{actor}").join(actor) : "";
  }

  // lose says why this work page's reservation ended (action of actor),
  // and disables its buttons: the server would refuse them anyway. A later
  // notice may correct the words (the countdown runs out before the
  // server's notice comes).
  function lose(action, actor) {
    if (acting) return;
    var box = document.getElementById("ended");
    if (!box) return;
    var words = endedWords(box, action, actor);
    if (!box.hidden && !words) return;
    var why = box.querySelector("[data-ended-why]");
    if (why) why.textContent = "This reservation ended" + (words ? ": " + words : "") + ".";
    box.hidden = false;
    var soon = document.getElementById("soon");
    if (soon) soon.hidden = true;
    document.querySelectorAll(".actions button").forEach(function (b) { b.disabled = true; });
    var timer = document.querySelector("[data-testid=timer]");
    if (timer) timer.hidden = true;
  }
  tick();
  setInterval(tick, 1000);

  // Times come in UTC from the server; show them in the viewer's own.
  var dateTime = { dateStyle: "medium", timeStyle: "medium" }, timeOnly = { timeStyle: "medium" };
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var iso = el.getAttribute("datetime"), d = new Date(iso);
      if (isNaN(d)) return;
      el.textContent = d.toLocaleString(undefined, el.hasAttribute("data-time-only") ? timeOnly : dateTime);
      el.title = iso;
    });
  }
  localTimes(document);
  // Right after a swap, before the browser paints the server's UTC.
  document.addEventListener("htmx:afterSwap", function (e) { localTimes(e.target); });

  // Destructive buttons ask first. Once a form is on its way, notices
  // about what it did are no news to this page.
  var acting = false;
  document.addEventListener("submit", function (e) {
    var msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !window.confirm(msg)) { e.preventDefault(); return; }
    acting = true;
  }, true);

  // Live updates: a websocket brings notices; the page patches what it can
  // at once and asks the server for fresh fragments (htmx, "refresh" event).
  var refreshTimer = null;
  function refresh() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(function () {
      document.body.dispatchEvent(new Event("refresh"));
    }, 150);
  }

  // setCount shows how many jobs of the queue can be claimed now.
  function setCount(queue, ready) {
    document.querySelectorAll('[data-queue="' + CSS.escape(queue) + '"]').forEach(function (card) {
      var n = card.querySelector("[data-testid=ready-count]");
      if (n) n.textContent = ready;
      var b = card.querySelector("button[data-claim]");
      if (b) b.disabled = ready === 0;
    });
  }

  // toast announces a new job; its Claim button claims that very job (the
  // server says so if it is gone, and offers the next).
  function toast(queue, title, jobId) {
    var box = document.getElementById("toasts");
    if (!box || !document.querySelector("[data-queue]")) return; // the home only
    var t = document.createElement("div");
    t.className = "toast";
    t.setAttribute("role", "status");
    t.dataset.testid = "toast";
    var text = document.createElement("span");
    text.textContent = "New job in " + queue + (title ? ": " + title : "");
    var form = document.createElement("form");
    form.method = "post";
    form.action = jobId ? "/jobs/" + encodeURIComponent(jobId) + "/claim" : "/queues/" + encodeURIComponent(queue) + "/claim";
    var csrf = document.createElement("input");
    csrf.type = "hidden"; csrf.name = "_csrf"; csrf.value = document.body.dataset.csrf;
    var claim = document.createElement("button");
    claim.type = "submit"; claim.className = "primary small"; claim.textContent = "Claim";
    form.append(csrf, claim);
    var close = document.createElement("button");
    close.type = "button"; close.className = "link"; close.textContent = "×";
    close.setAttribute("aria-label", "Dismiss");
    close.addEventListener("click", function () { t.remove(); });
    t.append(text, form, close);
    box.prepend(t);
    while (box.children.length > 3) box.lastChild.remove();
    setTimeout(function () { t.remove(); }, 10000);
  }

  // A page that watches a job (a supervisor's view of it) fetches it
  // afresh when a notice names it, or when notices may have been missed.
  function jobChanged(id) {
    var sel = id ? '[data-watch-job="' + CSS.escape(id) + '"]' : "[data-watch-job]";
    document.querySelectorAll(sel).forEach(function (el) { el.dispatchEvent(new Event("job-changed")); });
  }

  function onNotice(n) {
    if (n.job_id) jobChanged(n.job_id);
    var work = document.querySelector("[data-job-id][data-held]");
    switch (n.type) {
      case "queue.changed":
        setCount(n.queue, n.ready - (n.held || 0));
        break;
      case "job.available":
        toast(n.queue, n.title, n.job_id);
        break;
      case "reservation.extended":
        if (work && work.dataset.jobId === n.job_id && n.deadline) {
          document.querySelectorAll("[data-deadline]").forEach(function (el) { el.dataset.deadline = n.deadline; });
        }
        break;
      case "reservation.expiring":
        if (work && work.dataset.jobId === n.job_id) {
          var soon = document.getElementById("soon");
          if (soon) soon.hidden = false;
        }
        break;
      case "reservation.expired":
      case "reservation.released":
      case "reservation.completed":
        // The deadline, another tab, or a supervisor ended it: this page
        // can do no more, and says why.
        if (work && work.dataset.jobId === n.job_id) lose(n.action, n.actor);
        break;
    }
    refresh();
  }

  function connect() {
    var live = document.getElementById("live");
    if (!live || !window.WebSocket) return;
    var delay = 500;
    function open() {
      var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
      ws.onopen = function () { delay = 500; };
      ws.onmessage = function (e) {
        var n = JSON.parse(e.data);
        if (n.type === "snapshot") {
          live.dataset.state = "live";
          live.textContent = "live";
          n.queues.forEach(function (q) { setCount(q.queue, q.ready - q.held); });
          refresh(); // resync after a (re)connect: notices may have been missed
          jobChanged();
          return;
        }
        if (n.type === "resync") jobChanged();
        onNotice(n);
      };
      ws.onclose = function (e) {
        // The session ended (the account was disabled, or its password
        // changed): reloading leads to the login page.
        if (e.code === 4001) { location.reload(); return; }
        live.dataset.state = "reconnecting";
        live.textContent = "reconnecting…";
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    open();
  }
  connect();

  // Single-key shortcuts (c: claim next), never while typing.
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var b = document.querySelector('[data-hotkey="' + e.key + '"]');
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
})();
