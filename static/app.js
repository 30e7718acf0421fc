// claimdesk: countdowns, confirmations, keyboard shortcuts, CSRF for htmx.
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

  // Countdowns tick every second; a work page's shows its "time is up"
  // notice and disables its buttons when the deadline passes.
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Date.parse(el.dataset.deadline) - now;
      if (isNaN(left)) return;
      el.classList.toggle("soon", left > 0 && left <= 60000);
      el.classList.toggle("expired", left <= 0);
      el.textContent = left > 0 ? format(left) : "expired";
      var warn = el.dataset.warnTarget && document.querySelector(el.dataset.warnTarget);
      if (warn) warn.hidden = !(left > 0 && left <= 60000);
      if (left <= 0 && el.dataset.expireTarget) lose(el.dataset.expireTarget);
    });
  }
  // lose shows why this work page's reservation ended, and disables its
  // buttons: the server would refuse them anyway.
  function lose(notice) {
    if (acting) return;
    var el = document.querySelector(notice);
    if (!el || !el.hidden) return;
    document.querySelectorAll("#expired, #taken, #soon").forEach(function (n) { n.hidden = true; });
    el.hidden = false;
    document.querySelectorAll(".actions button").forEach(function (b) { b.disabled = true; });
    var timer = document.querySelector("[data-testid=timer]");
    if (timer) timer.hidden = true;
  }
  tick();
  setInterval(tick, 1000);

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

  function toast(queue, title) {
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
    form.action = "/queues/" + encodeURIComponent(queue) + "/claim";
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

  function onNotice(n) {
    var work = document.querySelector("[data-job-id][data-held]");
    switch (n.type) {
      case "queue.changed":
        setCount(n.queue, n.ready - (n.held || 0));
        break;
      case "job.available":
        toast(n.queue, n.title);
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
        if (work && work.dataset.jobId === n.job_id) lose("#expired");
        break;
      case "reservation.released":
      case "reservation.completed":
        // Another tab, or a supervisor, ended it: this page can do no more.
        if (work && work.dataset.jobId === n.job_id) lose("#taken");
        break;
      case "job.finished":
        if (work && work.dataset.jobId === n.job_id) lose("#taken");
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
          return;
        }
        onNotice(n);
      };
      ws.onclose = function () {
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
