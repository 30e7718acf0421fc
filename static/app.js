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
      var target = el.dataset.expireTarget && document.querySelector(el.dataset.expireTarget);
      if (left <= 0 && target && target.hidden) {
        target.hidden = false;
        document.querySelectorAll(".actions button").forEach(function (b) { b.disabled = true; });
      }
    });
  }
  tick();
  setInterval(tick, 1000);

  // Destructive buttons ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !window.confirm(msg)) e.preventDefault();
  }, true);

  // Single-key shortcuts (c: claim next), never while typing.
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var b = document.querySelector('[data-hotkey="' + e.key + '"]');
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
})();
