// claimdesk: countdowns, local times, live notices, confirmations,
// keyboard shortcuts and settings, the offline banner, CSRF for htmx.
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
      var warnAt = Number(el.dataset.warnMs) || 60000; // the lease's last fifth (views.warnWithin)
      el.classList.toggle("soon", left > 0 && left <= warnAt);
      el.classList.toggle("expired", left <= 0);
      el.textContent = left > 0 ? format(left) : "expired";
      // Once the reservation ended (for whatever reason), the notice says
      // why; the countdown neither warns nor guesses any more.
      var ended = el.dataset.expireTarget && document.querySelector(el.dataset.expireTarget);
      var over = ended && !ended.hidden;
      var warn = el.dataset.warnTarget && document.querySelector(el.dataset.warnTarget);
      if (warn) warn.hidden = over || !(left > 0 && left <= warnAt);
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
    document.querySelectorAll(".work .actions button, .workbar button").forEach(function (b) { b.disabled = true; });
    var bar = document.querySelector(".workbar"); // its time and action are void now
    if (bar) bar.hidden = true;
  }
  // More time is offered only when it would add time (a press right after
  // a claim would not), and says how much: the deadline would become now
  // plus the lease, never past the longest hold.
  function extendOffer() {
    var button = document.querySelector("button[data-extend-ms]");
    var clock = document.querySelector("[data-testid=countdown]");
    if (!button || !clock) return;
    var now = Date.now(), deadline = Date.parse(clock.dataset.deadline);
    var lease = Number(button.dataset.extendMs), until = Date.parse(button.dataset.holdUntil || "");
    var target = now + lease;
    if (!isNaN(until)) target = Math.min(target, until);
    var gain = target - deadline, worth = gain >= Math.max(lease / 10, 5000);
    var hint = document.getElementById("extend-hint");
    if (button.closest(".work").querySelector("#ended:not([hidden])")) {
      if (hint) hint.textContent = ""; // nothing to add to a reservation that ended
      return;
    }
    button.disabled = !worth;
    if (hint) hint.textContent = hint.dataset.extendHint +
      (worth ? " · adds " + format(gain) : " · adds time once some of it has passed");
  }
  function everySecond() { tick(); extendOffer(); }
  everySecond();
  setInterval(everySecond, 1000);

  // Times come in UTC from the server; show them in the viewer's own.
  var dateTime = { dateStyle: "medium", timeStyle: "medium" }, timeOnly = { timeStyle: "medium" },
    short = { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var iso = el.getAttribute("datetime"), d = new Date(iso);
      if (el.hasAttribute("data-date-only")) {
        // A calendar date, the same day in every zone.
        var ymd = iso.split("-").map(Number);
        d = new Date(ymd[0], ymd[1] - 1, ymd[2]);
        if (!isNaN(d)) el.textContent = d.toLocaleDateString(undefined, { dateStyle: "medium" });
        return;
      }
      if (isNaN(d)) return;
      el.textContent = d.toLocaleString(undefined, el.hasAttribute("data-time-only") ? timeOnly :
        el.hasAttribute("data-short") ? short : dateTime);
      el.title = iso;
    });
  }
  // Numbers of a job's details in the viewer's locale's way: 3156.0 as
  // 3,156, an amount of money as CHF 3,156.00 (the exact value on hover).
  var number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 20 });
  function localNumbers(root) {
    root.querySelectorAll("data[data-number]").forEach(function (el) {
      var n = Number(el.value);
      if (!isFinite(n) || Math.abs(n) > Number.MAX_SAFE_INTEGER) return;
      var money = null;
      try {
        if (el.dataset.currency) money = new Intl.NumberFormat(undefined, { style: "currency", currency: el.dataset.currency });
      } catch (e) { /* not a currency this browser knows: a plain number */ }
      el.textContent = (money || number).format(n);
      el.title = el.value;
    });
  }
  localTimes(document);
  localNumbers(document);
  // Right after a swap, before the browser paints the server's UTC. A
  // form answered with problems takes the operator to the first of them.
  document.addEventListener("htmx:afterSwap", function (e) {
    localTimes(e.target); localNumbers(e.target);
    var problem = e.target.querySelector && e.target.querySelector(".field-problem, .problem[role=alert]");
    if (!problem) return;
    // The control the problem describes, else the nearest around it.
    var box = (problem.id && e.target.querySelector('[aria-describedby~="' + CSS.escape(problem.id) + '"]')) ||
      problem.closest("label, fieldset, form, details");
    var controls = "input:not([type=hidden]), select, textarea, button";
    var field = box && (box.matches(controls) ? box : box.querySelector(controls));
    if (field) field.focus();
  });

  // When the server cannot be reached (the live connection is down for
  // more than a moment, a request could not be sent, or the browser is
  // offline) a banner says so and forms wait; both come back by
  // themselves once the live connection is up again.
  var offline = {
    on: false,
    box: document.getElementById("offline"),
    timer: null,
    set: function (on) {
      clearTimeout(this.timer);
      this.timer = null;
      if (!this.box || this.on === on) return;
      this.on = on;
      this.box.hidden = !on;
      document.body.classList.toggle("is-offline", on);
      this.fit();
      document.querySelectorAll("main form[method=post] button[type=submit], main button[form]").forEach(function (b) {
        if (on) b.setAttribute("aria-disabled", "true"); else b.removeAttribute("aria-disabled");
      });
    },
    // fit tells the bars that stick to the top (the work page's time
    // left) how tall the banner is, to stick below it.
    fit: function () {
      var h = this.on ? this.box.offsetHeight + "px" : "0px";
      document.documentElement.style.setProperty("--banner-h", h);
    },
    // lost says the live connection dropped: if it is still down in a
    // moment, the page asks the server itself (the live connection alone
    // may be refused, or not let through by a proxy).
    lost: function () {
      var self = this;
      if (self.on || self.timer) return;
      self.timer = setTimeout(function () {
        self.timer = null;
        if (live && live.dataset.state === "live") return;
        reachable().catch(probe);
      }, 2500);
    },
  };
  var live = document.getElementById("live");
  function reachable() {
    return fetch("/healthz", { cache: "no-store" }).then(function (r) { if (!r.ok) throw new Error(r.status); });
  }
  if (offline.box) {
    offline.box.tabIndex = -1;
    window.addEventListener("resize", function () { offline.fit(); });
  }
  // A request that could not be sent, or the browser going offline, may
  // leave the live connection up: the page then asks the server itself,
  // every few seconds, until it answers.
  function probe() {
    offline.set(true);
    if (offline.probing) return;
    offline.probing = true;
    (function again() {
      reachable().then(function () {
        offline.probing = false;
        offline.set(false);
      }).catch(function () { setTimeout(again, 3000); });
    })();
  }
  document.addEventListener("htmx:sendError", probe);
  // A form answered in place that fails otherwise than the page expects
  // (the job is gone, the session ended, the server failed) shows the
  // answer's words in place of the page, as a form sent without the
  // script would.
  document.addEventListener("htmx:beforeSwap", function (e) {
    var d = e.detail;
    if (d.xhr.status < 400 || !d.elt.matches || !d.elt.matches("form[hx-post]")) return;
    d.shouldSwap = true;
    d.isError = false;
    d.target = document.querySelector("main");
    d.selectOverride = "main";
    d.swapOverride = "outerHTML";
  });
  window.addEventListener("offline", probe);

  // Destructive buttons ask first. Once a form is on its way, notices
  // about what it did are no news to this page.
  var acting = false;
  // typedIn reports whether anything in the form differs from what the
  // page came with: text typed, a choice made.
  function typedIn(form) {
    return Array.prototype.some.call(form.elements, function (el) {
      if (/^(hidden|submit|button)$/.test(el.type) || el.readOnly || el.disabled) return false;
      if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
      if (el.tagName === "SELECT" && !el.multiple) {
        // With no option marked selected the browser shows the first it
        // may ("Choose…"): still no choice made.
        var shown = -1;
        Array.prototype.some.call(el.options, function (o) {
          if (o.defaultSelected) { shown = o.index; return true; }
          if (shown < 0 && !o.disabled) shown = o.index;
          return false;
        });
        return el.selectedIndex !== shown;
      }
      if (el.tagName === "SELECT") return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
      return el.value !== el.defaultValue;
    });
  }
  document.addEventListener("submit", function (e) {
    if (e.target.method === "dialog") return; // closes a box; sends nothing
    // A form about what is ticked, with nothing ticked, says so instead.
    var needs = e.target.dataset && e.target.dataset.needs;
    if (needs && !document.querySelector(needs)) {
      e.preventDefault();
      e.stopPropagation();
      window.alert(e.target.dataset.needsWords);
      return;
    }
    var msg = e.target.dataset && e.target.dataset.confirm;
    // Leaving the job (give back, skip, failure) drops what was typed to
    // complete it: ask first, whether by button or by key.
    var drops = e.target.dataset && e.target.dataset.drops && document.getElementById(e.target.dataset.drops);
    if (!msg && drops && typedIn(drops)) msg = e.target.dataset.dropsAsk;
    // Offline, a form would only lead to the browser's error page, and
    // what was typed would be gone: it waits until the server is back.
    if (offline.on || (msg && !window.confirm(msg))) {
      e.preventDefault();
      e.stopPropagation(); // nor does htmx send it
      if (offline.on) offline.box.focus();
      return;
    }
    acting = true;
  }, true);
  // A form answered in place (htmx) and not taken, or More time, leaves
  // the page as it was; one taken leads away (HX-Redirect).
  // (The event's elt is not the form when the answer replaced it: it
  // bubbles from the nearest element still in the page. The request's
  // verb says what it was.)
  document.addEventListener("htmx:afterRequest", function (e) {
    var xhr = e.detail.xhr, cfg = e.detail.requestConfig;
    if (cfg && cfg.verb === "post" && !(xhr && xhr.getResponseHeader("HX-Redirect"))) acting = false;
  });

  // Live updates: a websocket brings notices, and the page patches what
  // they carry (counts) at once, with no request. Fragments are fetched
  // afresh (htmx, on the body's "refresh" and "refresh-slow" events) only
  // for what notices do not carry: "refresh" when the viewer's own
  // reservations changed, after a resync or a reconnect; "refresh-slow",
  // at most about once a second, when others' reservations or a batch
  // changed (the supervisor's tables). Each waits a random moment, so
  // that a floor of open pages does not fetch all at once; one that comes
  // while a fetch is under way is kept until it ends. Every fragment also
  // polls every 15 s, which heals what a lost notice left behind.
  // internal/handlers/ws.go sends the notices; cmd/bench's floor scenario
  // models these requests (keep the two in step).
  function refresher(event, gap, jitter) {
    var timer = null, last = 0, waiting = false;
    function fire() {
      timer = null;
      if (document.querySelector(".htmx-request")) { waiting = true; return; }
      last = Date.now();
      document.body.dispatchEvent(new Event(event));
    }
    return {
      // soon asks for a refresh within a random moment up to spread ms
      // (jitter by default), at least gap ms after the last.
      soon: function (spread) {
        if (timer) return;
        var wait = Math.max(0, last + gap - Date.now()) + 50 + Math.random() * (spread || jitter);
        timer = setTimeout(fire, wait);
      },
      // settled is told when a fetch ended: a refresh kept meanwhile goes.
      settled: function () {
        if (waiting && !document.querySelector(".htmx-request")) { waiting = false; this.soon(); }
      },
    };
  }
  var mine = refresher("refresh", 0, 200), others = refresher("refresh-slow", 1000, 400);
  // After a reconnect or a resync every page fetches: spread them wide.
  var RESYNC_SPREAD = 2000;
  ["htmx:afterSettle", "htmx:afterRequest"].forEach(function (type) {
    document.addEventListener(type, function () {
      setTimeout(function () { mine.settled(); others.settled(); }, 0);
    });
  });

  // A fragment fetched before a notice arrived may show counts older than
  // the notice's: after each swap, the counts of every notice that came
  // since its request went out are shown again. (A fragment newer than
  // such a notice is followed by the notices of what it shows.)
  var heard = {}; // queue -> {n: latest counts, at: when they came}
  document.addEventListener("htmx:beforeSend", function (e) {
    if (e.detail.xhr) e.detail.xhr.sentAt = Date.now();
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    var sent = e.detail.xhr && e.detail.xhr.sentAt;
    if (!sent) return;
    Object.keys(heard).forEach(function (q) {
      if (heard[q].at >= sent) setCounts(heard[q].n);
    });
  });

  // setCounts shows a queue's counts (a queue.changed notice, or the
  // snapshot's) wherever the page shows them: the operator's queue cards
  // and the supervisor's table.
  function setCounts(n) {
    setQueueCounts(n);
    showWaiting();
  }
  function setQueueCounts(n) {
    var held = n.held || 0, ready = n.ready - held;
    document.querySelectorAll('[data-queue="' + CSS.escape(n.queue) + '"]').forEach(function (card) {
      var count = card.querySelector("[data-testid=ready-count]");
      if (count) count.textContent = ready;
      var b = card.querySelector("button[data-claim]");
      if (b) b.disabled = ready === 0 || card.hasAttribute("data-paused");
      var waiting = card.querySelector("[data-waiting]");
      // How long the next job has waited is not in a notice: say only
      // whether one does, until the next fetch says since when.
      if (waiting && ready === 0) waiting.textContent = "Nothing waiting";
      if (waiting && ready > 0 && waiting.dataset.waiting === "none") waiting.textContent = "A job is waiting";
      if (waiting) waiting.dataset.waiting = ready > 0 ? "some" : "none";
      showCount(card.querySelector("[data-in-progress]"), n.reserved);
      showCount(card.querySelector("[data-batch-wait]"), held);
    });
    document.querySelectorAll('[data-stats-queue="' + CSS.escape(n.queue) + '"]').forEach(function (row) {
      ["ready", "scheduled", "reserved", "dead"].forEach(function (k) {
        var cell = row.querySelector('[data-count="' + k + '"]');
        if (!cell || n[k] === undefined) return;
        var link = cell.querySelector("a");
        if (k === "dead" && n.dead > 0 && !link) {
          link = document.createElement("a");
          link.className = "bad count-link";
          link.href = "/supervisor/queues/" + encodeURIComponent(n.queue) + "?state=dead";
          cell.textContent = "";
          cell.append(link);
        }
        if (link && !(n[k] > 0)) { cell.textContent = "0"; return; }
        (link || cell).textContent = n[k];
      });
    });
  }

  // The tab's title says how many jobs wait in the queues the page shows
  // (an operator's, or all for a supervisor), so a tab in the background
  // tells when there is work.
  var baseTitle = document.title;
  function showWaiting() {
    var cells = document.querySelectorAll("[data-queue] [data-testid=ready-count], [data-stats-queue] [data-count=ready]");
    if (!cells.length) return;
    var n = 0;
    cells.forEach(function (c) { n += Number(c.textContent) || 0; });
    document.title = (n > 0 ? "(" + n + ") " : "") + baseTitle;
  }
  showWaiting();
  document.addEventListener("htmx:afterSettle", showWaiting);

  // showCount sets the number in a "· N in progress"-like note, hidden at 0.
  function showCount(el, n) {
    if (!el || n === undefined) return;
    el.hidden = !(n > 0);
    var num = el.querySelector("[data-n]");
    if (num) num.textContent = n;
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
    // It goes after 10 s, but not while the pointer is on it or it has
    // the focus.
    function expire() {
      if (t.matches(":hover, :focus-within")) { setTimeout(expire, 2000); return; }
      t.remove();
    }
    setTimeout(expire, 10000);
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
        heard[n.queue] = { n: n, at: Date.now() };
        setCounts(n);
        others.soon(); // the supervisor's "done last hour" and "oldest waiting"
        return;
      case "job.available":
        var card = document.querySelector('[data-queue="' + CSS.escape(n.queue) + '"]');
        if (!card || !card.hasAttribute("data-paused")) {
          toast(n.queue, n.title, n.job_id);
          if (card && document.hidden) alertNewWork(n.queue, n.title);
        }
        return;
      case "queue.settings":
        // Paused or resumed: the claim buttons follow at once, and the
        // page fetches what it says of the queue.
        document.querySelectorAll('[data-queue="' + CSS.escape(n.queue) + '"]').forEach(function (card) {
          card.toggleAttribute("data-paused", !!n.paused);
          var b = card.querySelector("button[data-claim]");
          if (b && n.paused) b.disabled = true;
        });
        mine.soon();
        return;
      case "reservation.extended":
        if (work && work.dataset.jobId === n.job_id && n.deadline) {
          document.querySelectorAll("[data-deadline]").forEach(function (el) { el.dataset.deadline = n.deadline; });
        }
        break;
      case "reservation.expiring":
        // The server warns a minute ahead; a short lease's page warns
        // later (its countdown's data-warn-ms), in the words it has.
        if (work && work.dataset.jobId === n.job_id) {
          var soon = document.getElementById("soon");
          var timer = document.querySelector("[data-warn-target='#soon']");
          var left = n.deadline ? Date.parse(n.deadline) - Date.now() : 0;
          if (soon && (!timer || left <= Number(timer.dataset.warnMs) + 1000)) soon.hidden = false;
        }
        return;
      case "reservation.expired":
      case "reservation.released":
      case "reservation.completed":
        // The deadline, another tab, or a supervisor ended it: this page
        // can do no more, and says why.
        if (work && work.dataset.jobId === n.job_id) lose(n.action, n.actor);
        break;
      case "reservation.created":
        break;
      case "resync":
        jobChanged();
        mine.soon(RESYNC_SPREAD);
        return;
      default: // job.finished, batch.changed, batch.finished
        others.soon();
        return;
    }
    // A reservation changed: the viewer's own (the home lists them), or,
    // for a supervisor, anyone's.
    if (n.operator === document.body.dataset.user) mine.soon(); else others.soon();
  }

  function connect() {
    if (!live || !window.WebSocket) return;
    var delay = 500;
    function open() {
      var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
      ws.onopen = function () { delay = 500; };
      ws.onmessage = function (e) {
        var n = JSON.parse(e.data);
        if (n.type === "snapshot") {
          offline.set(false);
          live.dataset.state = "live";
          live.textContent = "live";
          n.queues.forEach(setCounts);
          // After a (re)connect: notices may have been missed.
          mine.soon(RESYNC_SPREAD);
          jobChanged();
          return;
        }
        // Notices close together come as one message.
        (n.type === "notices" ? n.notices : [n]).forEach(onNotice);
      };
      ws.onclose = function (e) {
        // The session ended (the account was disabled, or its password
        // changed): reloading leads to the login page.
        if (e.code === 4001) { location.reload(); return; }
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
  connect();

  // This browser's settings (the "Keyboard & alerts" box): single-key
  // shortcuts on or off, and how to be told of new work while the tab is
  // hidden.
  var settings = {
    get: function (k, d) { try { return localStorage.getItem("claimdesk." + k) || d; } catch (e) { return d; } },
    set: function (k, v) { try { localStorage.setItem("claimdesk." + k, v); } catch (e) { /* kept for this page only */ } },
  };
  function hotkeysOn() { return settings.get("hotkeys", "on") === "on"; }
  // applyHotkeys shows the buttons' keys, to the eye and to assistive
  // technology, only while single-key shortcuts are on.
  function applyHotkeys() {
    var on = hotkeysOn();
    document.documentElement.classList.toggle("no-hotkeys", !on);
    document.querySelectorAll("[data-hotkey]").forEach(function (b) {
      if (on) b.setAttribute("aria-keyshortcuts", b.dataset.hotkey); else b.removeAttribute("aria-keyshortcuts");
    });
  }
  applyHotkeys();
  document.addEventListener("htmx:afterSwap", applyHotkeys);

  // alertNewWork tells of a new job while the tab is hidden, as the
  // viewer chose: a short tone, or a browser notification; at most once
  // in 10 s.
  var alerted = 0;
  function alertNewWork(queue, title) {
    var how = settings.get("alert", "none");
    if (how === "none" || Date.now() - alerted < 10000) return;
    alerted = Date.now();
    if (how === "sound") tone();
    if (how === "notify" && window.Notification && Notification.permission === "granted") {
      var note = new Notification("New job in " + queue, { body: title || "", tag: "claimdesk-new-work" });
      note.onclick = function () { window.focus(); note.close(); };
    }
  }
  function tone() {
    var Audio = window.AudioContext || window.webkitAudioContext;
    if (!Audio) return;
    var ctx = new Audio(), osc = ctx.createOscillator(), gain = ctx.createGain();
    osc.frequency.value = 880;
    gain.gain.setValueAtTime(0.08, ctx.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, ctx.currentTime + 0.35);
    osc.connect(gain).connect(ctx.destination);
    osc.onended = function () { ctx.close(); };
    osc.start();
    osc.stop(ctx.currentTime + 0.35);
  }

  // The settings box lists the page's shortcuts, from its buttons.
  var dialog = document.getElementById("settings");
  function buttonWords(b) {
    var copy = b.cloneNode(true);
    copy.querySelectorAll("kbd").forEach(function (k) { k.remove(); });
    return copy.textContent.replace(/\s+/g, " ").trim();
  }
  function openSettings() {
    if (!dialog || dialog.open) return;
    var list = dialog.querySelector("[data-shortcut-list]"), seen = {};
    list.querySelectorAll("[data-page-key]").forEach(function (el) { el.remove(); });
    document.querySelectorAll("main [data-hotkey]").forEach(function (b) {
      var key = b.dataset.hotkey;
      if (seen[key]) return;
      seen[key] = true;
      var dt = document.createElement("dt"), kbd = document.createElement("kbd"), dd = document.createElement("dd");
      kbd.textContent = key;
      dt.append(kbd);
      dd.textContent = buttonWords(b);
      dt.dataset.pageKey = dd.dataset.pageKey = "";
      list.append(dt, dd);
    });
    dialog.querySelector("[data-no-shortcuts]").hidden = Object.keys(seen).length > 0;
    dialog.querySelector("[data-setting=hotkeys]").checked = hotkeysOn();
    var how = settings.get("alert", "none");
    dialog.querySelectorAll("[data-setting=alert]").forEach(function (r) { r.checked = r.value === how; });
    dialog.showModal();
  }
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("[data-open-settings]")) openSettings();
  });
  if (dialog) dialog.addEventListener("change", function (e) {
    var el = e.target;
    if (el.dataset.setting === "hotkeys") {
      settings.set("hotkeys", el.checked ? "on" : "off");
      applyHotkeys();
    }
    if (el.dataset.setting !== "alert") return;
    var problem = dialog.querySelector("[data-alert-problem]");
    problem.hidden = true;
    if (el.value !== "notify") { settings.set("alert", el.value); return; }
    function refused(words) {
      problem.textContent = words;
      problem.hidden = false;
      dialog.querySelector("[data-setting=alert][value=" + settings.get("alert", "none") + "]").checked = true;
    }
    if (!window.Notification) { refused("This browser does not show notifications."); return; }
    Promise.resolve(Notification.requestPermission()).then(function (p) {
      if (p === "granted") settings.set("alert", "notify");
      else refused("Notifications are blocked for claimdesk in this browser's settings.");
    });
  });

  // Single-key shortcuts (c: claim next; on the work page n, d, m, g),
  // never while typing, and none while they are turned off; ? opens the
  // box that lists them.
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat || acting || !hotkeysOn() || (dialog && dialog.open)) return;
    // Not while typing: in a text box, but a radio button or a checkbox
    // takes no letters.
    var t = e.target;
    if (t && (t.isContentEditable || /^(TEXTAREA|SELECT)$/.test(t.tagName) ||
      t.tagName === "INPUT" && !/^(radio|checkbox|button|submit)$/.test(t.type))) return;
    if (e.key === "?") { e.preventDefault(); openSettings(); return; }
    var b = document.querySelector('main [data-hotkey="' + CSS.escape(e.key) + '"]');
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
})();
