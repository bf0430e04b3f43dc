// Live inbox: listen to the approvals event stream and, on any change,
// fetch the inbox again and swap its lists in place. The page is complete
// without this file; it only saves a reload.
(function () {
  "use strict";
  var root = document.querySelector("[data-live-events]");
  if (!root || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var status = document.getElementById("live-status");
  var pending = false;
  var timer = null;

  function setStatus(text) { if (status) status.textContent = text; }

  function known() {
    var ids = {};
    document.querySelectorAll("[data-request-id]").forEach(function (el) { ids[el.getAttribute("data-request-id")] = true; });
    return ids;
  }

  function refresh() {
    if (pending) return;
    pending = true;
    var before = known();
    fetch(window.location.pathname + window.location.search, { credentials: "same-origin", headers: { "Accept": "text/html", "X-Invoiced-Live-Refresh": "1" } })
      .then(function (r) {
        if (r.redirected || !r.ok) throw new Error("inbox: " + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        root.querySelectorAll("[data-live-region]").forEach(function (el) {
          var fresh = doc.querySelector('[data-live-region="' + el.getAttribute("data-live-region") + '"]');
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
        document.querySelectorAll("[data-request-id]").forEach(function (el) {
          if (!before[el.getAttribute("data-request-id")]) el.classList.add("new");
        });
        setStatus("Live: updated " + new Date().toLocaleTimeString());
      })
      .catch(function () { setStatus("Live updates paused; reload the page to see changes."); })
      .then(function () { pending = false; });
  }

  // "approval" is one request's change, "resync" says changes may have
  // been missed. Several often arrive together (a quorum's two decisions): coalesce them into one refresh.
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 150);
  }

  var es = new EventSource(root.getAttribute("data-live-events"), { withCredentials: true });
  es.onopen = function () { setStatus("Live: new requests appear here without reloading."); };
  es.onmessage = schedule;
  ["approval", "resync"].forEach(function (name) {
    es.addEventListener(name, schedule);
  });
  es.onerror = function () { setStatus("Live updates reconnecting…"); };
})();
