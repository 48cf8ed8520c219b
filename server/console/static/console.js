// myriarchd console: live refresh of the page's live regions over
// Server-Sent Events, and the one-time login link. No framework, no inline
// code (the pages run under a Content-Security-Policy without unsafe-inline).
(function () {
  'use strict';

  // A login link carries its secret in the fragment, which never reaches a
  // server: move it into the form, drop it from the address bar, submit.
  var login = document.getElementById('login-form');
  if (login) {
    var m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (m) {
      history.replaceState(null, '', location.pathname + location.search);
      login.elements.token.value = decodeURIComponent(m[1]);
      login.submit();
    }
    return;
  }

  // "/" jumps to the agent search box.
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) { return; }
    var q = document.getElementById('f-q');
    if (q) { e.preventDefault(); q.focus(); q.select(); }
  });

  var src = document.body.getAttribute('data-events');
  if (!src || !window.EventSource || !window.fetch || !window.DOMParser) { return; }
  var status = document.getElementById('live-status');
  function say(text) { if (status) { status.textContent = text; } }

  // Fetch this page again and swap every [data-live] region for its new
  // version (the filter form and anything being typed stay as they are).
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (r.redirected || r.status === 401) { location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (!html) { return; }
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var focused = document.activeElement && document.activeElement.id;
        document.querySelectorAll('[data-live]').forEach(function (el) {
          var next = doc.getElementById(el.id);
          if (next) { el.replaceWith(document.importNode(next, true)); }
        });
        if (focused) {
          var f = document.getElementById(focused);
          if (f && f !== document.activeElement) { f.focus(); }
        }
        document.body.setAttribute('data-refreshed', String(Date.now()));
      })
      .catch(function () { say('refresh failed'); })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  var es = new EventSource(src);
  es.addEventListener('open', function () { say('live'); });
  es.addEventListener('error', function () { say('reconnecting…'); });
  es.addEventListener('change', refresh);
  es.addEventListener('logout', function () { es.close(); location.href = '/login'; });
})();
