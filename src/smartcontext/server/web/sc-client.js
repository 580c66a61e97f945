// The page's link to the server.
//   window.request(method, params): POST /api/<method> with JSON, resolves with the answer
//     ({"success": true, ...}); rejects with an Error carrying the server's message.
//   The WebSocket /ws: every server event {event, data} is dispatched as
//     window.dispatchEvent(new CustomEvent(event, {detail: data})), as the seed's panel expects.
//   Indexing progress (smartcontext.index_progress) is shown in #sc-index-status.
(function () {
  'use strict';

  async function readAnswer(response) {
    var text = await response.text();
    var data;
    try { data = JSON.parse(text); } catch (e) { data = {success: false, error: text || response.statusText}; }
    if (!response.ok || data.success === false) {
      var err = new Error(data.error || ('HTTP ' + response.status));
      err.status = response.status;
      err.answer = data;
      throw err;
    }
    return data;
  }

  window.request = function (method, params) {
    return fetch('/api/' + method, {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(params || {})
    }).then(readAnswer);
  };

  window.scGet = function (path) {
    return fetch(path, {headers: {'Accept': 'application/json'}}).then(readAnswer);
  };

  var retryMs = 500;

  function connect() {
    var scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    var ws = new WebSocket(scheme + location.host + '/ws');
    ws.onopen = function () {
      retryMs = 500;
      document.documentElement.dataset.ws = 'open';
    };
    ws.onmessage = function (msg) {
      var ev;
      try { ev = JSON.parse(msg.data); } catch (e) { return; }
      if (!ev || typeof ev.event !== 'string') return;
      window.dispatchEvent(new CustomEvent(ev.event, {detail: ev.data || {}}));
    };
    ws.onclose = function () {
      document.documentElement.dataset.ws = 'closed';
      // Reconnect; the page re-reads its state on smartcontext.connected, so nothing missed
      // while the server was away stays wrong.
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10000);
    };
  }

  function showIndex(text) {
    var el = document.getElementById('sc-index-status');
    if (el) el.textContent = text;
  }

  window.addEventListener('smartcontext.index_progress', function (e) {
    var d = e.detail || {};
    if (d.phase === 'done') showIndex('Index ready');
    else if (d.phase === 'error') showIndex('Index: ' + (d.error || 'failed'));
    else showIndex((d.phase === 'embed' ? 'Embedding ' : 'Indexing ') + d.done + ' / ' + d.total);
  });

  function describeStatus(s) {
    if (!s.indexed) return 'No index yet';
    return s.files + ' files, ' + s.items + ' items indexed';
  }

  window.scGet('/api/status').then(function (s) {
    var el = document.getElementById('sc-index-status');
    if (el && !el.textContent) showIndex(describeStatus(s));
  }).catch(function () {});

  connect();
})();
