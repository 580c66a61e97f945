// The chat view: the messages of one chat (each element carries data-message-id), the
// composer, and the seed's chat highlighting (Task 8): the sc-highlight class on exactly
// the messages of smart_context.highlight_applied, removed when the filter is cleared.
// Text from users and models is set with textContent, never parsed as HTML.
(function () {
  'use strict';

  var listEl = document.getElementById('sc-messages');
  var selectEl = document.getElementById('sc-chat-select');
  var errorEl = document.getElementById('sc-chat-error');
  var byId = new Map();   // message id -> element

  var chat = window.scChat = {
    id: '',
    total: function () { return byId.size; },
    ready: null
  };

  function showError(e) { errorEl.textContent = e ? (e.message || String(e)) : ''; }

  function messageElement(m) {
    var el = document.createElement('div');
    el.className = 'sc-msg sc-role-' + (/^[a-z]+$/.test(m.role) ? m.role : 'other');
    el.dataset.messageId = m.id;
    var head = document.createElement('div');
    head.className = 'sc-msg-head';
    var role = document.createElement('span');
    role.className = 'sc-msg-role';
    role.textContent = m.role;
    head.appendChild(role);
    if (m.timestamp) {
      var ts = document.createElement('span');
      ts.className = 'sc-msg-time';
      ts.textContent = m.timestamp;
      head.appendChild(ts);
    }
    var body = document.createElement('div');
    body.className = 'sc-msg-body';
    body.textContent = m.content;
    el.appendChild(head);
    el.appendChild(body);
    (m.tool_calls || []).forEach(function (call) {  // an agent's tool calls
      var line = document.createElement('div');
      line.className = 'sc-msg-tool';
      var fn = call.function || {};
      line.textContent = '→ ' + fn.name + '(' + (fn.arguments || '') + ')';
      el.appendChild(line);
    });
    return el;
  }

  function addMessage(m) {
    if (byId.has(m.id)) return;
    var el = messageElement(m);
    byId.set(m.id, el);
    listEl.appendChild(el);
  }

  function render(messages) {
    byId.clear();
    var frag = document.createDocumentFragment();
    messages.forEach(function (m) {
      var el = messageElement(m);
      byId.set(m.id, el);
      frag.appendChild(el);
    });
    listEl.replaceChildren(frag);
    listEl.scrollTop = listEl.scrollHeight;
  }

  function clearHighlights() {
    listEl.querySelectorAll('[data-message-id].sc-highlight')
      .forEach(function (el) { el.classList.remove('sc-highlight'); });
  }

  function fillSelect(ids, current) {
    if (current && ids.indexOf(current) < 0) ids = ids.concat([current]);
    selectEl.replaceChildren();
    ids.forEach(function (id) {
      var opt = document.createElement('option');
      opt.value = id;
      opt.textContent = id;
      opt.selected = id === current;
      selectEl.appendChild(opt);
    });
  }

  // The chat to show: ?chat=ID, else the server's current chat, else the first one.
  function chooseChat(state, ids) {
    var asked = new URLSearchParams(location.search).get('chat');
    return asked || state.current_chat_id || ids[0] || 'chat';
  }

  chat.open = function (id) {
    chat.id = id;
    var url = new URL(location.href);
    url.searchParams.set('chat', id);
    history.replaceState(null, '', url);
    // ?new=1: a chat not written yet opens empty (it is created by its first message);
    // without it, an unknown id is an error naming the closest chats.
    return window.scGet('/api/chats/' + encodeURIComponent(id) + '?new=1').then(function (data) {
      render(data.messages);
      showError(null);
      window.dispatchEvent(new CustomEvent('smartcontext.chat_opened', {detail: data}));
      return data;
    });
  };

  chat.ready = Promise.all([window.scGet('/api/state'), window.scGet('/api/chats')])
    .then(function (r) {
      var state = r[0], ids = r[1].chats;
      var id = chooseChat(state, ids);
      fillSelect(ids, id);
      return chat.open(id).then(function (data) { return {state: state, chat: data}; });
    })
    .catch(function (e) { showError(e); throw e; });

  selectEl.addEventListener('change', function () { chat.open(selectEl.value).catch(showError); });

  document.getElementById('sc-new-chat').addEventListener('submit', function (e) {
    e.preventDefault();
    var input = document.getElementById('sc-new-chat-id');
    var id = input.value.trim();
    if (!id) return;
    input.value = '';
    chat.fillSelect(id);
    chat.open(id).catch(showError);
  });

  var composer = document.getElementById('sc-composer');
  var input = document.getElementById('sc-input');
  var sendBtn = document.getElementById('sc-send');

  chat.fillSelect = function (id) {
    fillSelect(Array.from(selectEl.options).map(function (o) { return o.value; }), id);
  };
  chat.showError = showError;
  chat.element = messageElement;
  chat.list = listEl;

  composer.addEventListener('submit', function (e) {
    e.preventDefault();
    var text = input.value;
    if (!text.trim() || !chat.id) return;
    if (chat.sendOverride && chat.sendOverride(text)) { input.value = ''; return; }
    var role = document.getElementById('sc-role').value;
    sendBtn.disabled = true;
    fetch('/api/chats/' + encodeURIComponent(chat.id) + '/messages', {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({role: role, content: text})
    }).then(function (r) { return r.json().then(function (d) { return {ok: r.ok, d: d}; }); })
      .then(function (res) {
        if (!res.ok || !res.d.success) throw new Error(res.d.error || 'the message was not added');
        addMessage(res.d.message);
        listEl.scrollTop = listEl.scrollHeight;
        input.value = '';
        showError(null);
      })
      .catch(showError)
      .finally(function () { sendBtn.disabled = false; input.focus(); });
  });

  input.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      composer.requestSubmit();
    }
  });

  // A message added elsewhere (another tab, the API).
  window.addEventListener('smartcontext.message_added', function (e) {
    var d = e.detail || {};
    if (d.chat_id === chat.id && d.message) addMessage(d.message);
  });

  // Smart Context: highlight messages included in the current filter.
  window.addEventListener('smart_context.highlight_applied', function (e) {
    var ids = (e.detail && e.detail.message_ids) ? e.detail.message_ids : [];
    clearHighlights();
    ids.forEach(function (id) {
      var el = byId.get(String(id));
      if (el) el.classList.add('sc-highlight');
    });
  });

  // Clear all highlights when the filter is cleared.
  window.addEventListener('smart_context.filter_changed', function (e) {
    var active = (e.detail && e.detail.active_topics) ? e.detail.active_topics : [];
    if (active.length === 0) clearHighlights();
  });
})();
