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
  var lit = new Set();    // the elements with sc-highlight

  var chat = window.scChat = {
    id: '',
    total: function () { return byId.size; },
    ready: null
  };

  function showError(e) { errorEl.textContent = e ? (e.message || String(e)) : ''; }

  function toolCallLine(call) {
    // Compact: the call on one line; its arguments when opened.
    var fn = call.function || {};
    var d = document.createElement('details');
    d.className = 'sc-msg-tool';
    var s = document.createElement('summary');
    var args = fn.arguments || '';
    s.textContent = '→ ' + fn.name + '(' + (args.length > 60 ? args.slice(0, 60) + '…' : args) + ')';
    var pre = document.createElement('pre');
    try { pre.textContent = JSON.stringify(JSON.parse(args), null, 2); } catch (e) { pre.textContent = args; }
    d.appendChild(s);
    d.appendChild(pre);
    return d;
  }

  function toolResult(m, body) {
    var d = document.createElement('details');
    d.className = 'sc-msg-tool';
    var s = document.createElement('summary');
    var ok = null;
    try { var r = JSON.parse(m.content); ok = r.status ? r.status === 'success' : r.success; } catch (e) { /* prose */ }
    s.textContent = (ok === false ? '✗ ' : '← ') + (m.name || 'tool') + ': ' +
      (ok === false ? 'error' : 'result') + ' (' + m.content.length + ' characters' + (m._compacted ? ', compacted' : '') + ')';
    var pre = document.createElement('pre');
    pre.textContent = m.content;
    d.appendChild(s);
    d.appendChild(pre);
    body.appendChild(d);
  }

  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many); }

  // What an answer was sent (the server's record on the assistant message): opening it
  // marks those messages in the chat.
  function sentDetails(m) {
    var sent = m.sent;
    var d = document.createElement('details');
    d.className = 'sc-sent';
    var s = document.createElement('summary');
    var ctx = sent.context || null;
    var total = (sent.history_tokens || 0) + (sent.turn_tokens || 0) + (sent.system_tokens || 0) +
      (sent.context_tokens || 0) + (sent.tools_tokens || 0);
    s.textContent = 'Sent: ' + sent.messages.length + ' of ' + plural(sent.total_messages, 'earlier message', 'earlier messages') +
      (ctx ? ', ' + plural(ctx.sections.length, 'section', 'sections') + ' of ' + plural(ctx.files.length, 'file', 'files') : '') +
      ', ' + total.toLocaleString('en') + ' tokens';
    d.appendChild(s);
    var ul = document.createElement('ul');
    function row(text, tokens, id) {
      var li = document.createElement('li');
      if (id) {
        var a = document.createElement('button');
        a.type = 'button';
        a.className = 'sc-link sc-sent-jump';
        a.dataset.target = id;
        a.textContent = text;
        li.appendChild(a);
      } else {
        li.appendChild(document.createTextNode(text));
      }
      var t = document.createElement('span');
      t.className = 'sc-tokens';
      t.textContent = ' ' + tokens.toLocaleString('en') + ' tokens';
      li.appendChild(t);
      ul.appendChild(li);
    }
    row('System prompt', sent.system_tokens || 0);
    if (ctx) ctx.sections.forEach(function (c) { row('Context: ' + c.path + (c.name ? ' · ' + c.name : ''), c.tokens); });
    sent.messages.forEach(function (h) {
      var el = byId.get(String(h.id));
      var text = el ? el.querySelector('.sc-msg-body').textContent : '';
      row(h.role + ': ' + (text.length > 50 ? text.slice(0, 50) + '…' : text || h.id), h.tokens, h.id);
    });
    row('This question (and tool rounds)', sent.turn_tokens || 0);
    if (sent.tools_tokens) row('Tool descriptions', sent.tools_tokens);
    var mode = document.createElement('p');
    mode.className = 'sc-muted';
    mode.textContent = 'History: ' + (sent.mode === 'topics' ? 'the selected topics' : sent.mode === 'auto' ?
      'the automatic filter (the question as query)' : 'every message') +
      (sent.active_topics ? ' (' + sent.active_topics.join(', ') + ')' : '');
    d.appendChild(mode);
    d.appendChild(ul);
    d.dataset.ids = JSON.stringify(sent.messages.map(function (h) { return String(h.id); }));
    d.addEventListener('toggle', function () { markSent(d); });
    return d;
  }

  function markSent(d) {
    listEl.querySelectorAll('.sc-was-sent').forEach(function (el) { el.classList.remove('sc-was-sent'); });
    if (!d.open) return;
    // One answer's record at a time.
    listEl.querySelectorAll('details.sc-sent[open]').forEach(function (o) { if (o !== d) o.open = false; });
    JSON.parse(d.dataset.ids).forEach(function (id) {
      var el = byId.get(id);
      if (el) el.classList.add('sc-was-sent');
    });
  }

  // A message's elements are cloned from these (a third faster than building them one by
  // one, for the 5,000 of a long chat on load).
  var msgProto = document.createElement('div');
  (function () {
    var head = document.createElement('div');
    head.className = 'sc-msg-head';
    var role = document.createElement('span');
    role.className = 'sc-msg-role';
    head.appendChild(role);
    var body = document.createElement('div');
    body.className = 'sc-msg-body';
    msgProto.appendChild(head);
    msgProto.appendChild(body);
  })();
  var timeProto = document.createElement('span');
  timeProto.className = 'sc-msg-time';

  function messageElement(m) {
    var el = msgProto.cloneNode(true);
    el.className = 'sc-msg sc-role-' + (/^[a-z]+$/.test(m.role) ? m.role : 'other');
    el.setAttribute('data-message-id', m.id);
    var head = el.firstChild;
    head.firstChild.textContent = m.role;
    if (m.timestamp) {
      var ts = timeProto.cloneNode(false);
      ts.textContent = m.timestamp;
      head.appendChild(ts);
    }
    if (m.stopped) {
      var st = document.createElement('span');
      st.textContent = 'stopped';
      head.appendChild(st);
    }
    var body = el.lastChild;
    if (m.role === 'tool') {
      el.classList.add('sc-compact');
      toolResult(m, body);
      return el;
    }
    window.scMarkdown.into(body, m.content);
    (m.tool_calls || []).forEach(function (call) { el.appendChild(toolCallLine(call)); });
    if (m.sent && m.sent.messages) el.appendChild(sentDetails(m));
    return el;
  }

  // Saved messages go in blocks of BLOCK (app.css: a block out of view is neither laid
  // out nor painted); the answer being written sits after them, outside any block.
  var BLOCK = 64;

  function newBlock() {
    var b = document.createElement('div');
    b.className = 'sc-block';
    return b;
  }

  // A block out of view has an estimated height until it is first shown, so a scroll
  // lands off by the difference once the blocks it brings into view are laid out: it is
  // made again over the next frames.
  function settle(scroll) {
    var frames = 0;
    scroll();
    (function again() {
      if (frames++ < 3) requestAnimationFrame(function () { scroll(); again(); });
    })();
  }

  function toBottom() { settle(function () { listEl.scrollTop = listEl.scrollHeight; }); }

  function reveal(el) { settle(function () { el.scrollIntoView({block: 'center'}); }); }

  function addMessage(m) {
    if (byId.has(m.id)) return;
    var el = messageElement(m);
    byId.set(m.id, el);
    var last = listEl.lastElementChild;
    if (!last || last.className !== 'sc-block' || last.childElementCount >= BLOCK) {
      last = newBlock();
      listEl.appendChild(last);
    }
    last.appendChild(el);
  }

  function render(messages) {
    byId.clear();
    lit.clear();
    var frag = document.createDocumentFragment();
    var block = null;
    messages.forEach(function (m, i) {
      if (i % BLOCK === 0) block = frag.appendChild(newBlock());
      var el = messageElement(m);
      byId.set(m.id, el);
      block.appendChild(el);
    });
    listEl.replaceChildren(frag);
    toBottom();
  }

  // Only the messages whose mark changes are touched: after each answer the same ids come
  // again, and a style change to a thousand messages is what a click would wait for.
  function highlight(ids) {
    var want = new Set();
    ids.forEach(function (id) {
      var el = byId.get(String(id));
      if (el) want.add(el);
    });
    lit.forEach(function (el) { if (!want.has(el)) el.classList.remove('sc-highlight'); });
    want.forEach(function (el) { if (!lit.has(el)) el.classList.add('sc-highlight'); });
    lit = want;
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

  // The page's later scripts (the panel) listen for chat_opened: a chat read before they
  // have run is shown once the document is parsed, when they all have.
  var parsed = document.readyState === 'loading' ? new Promise(function (resolve) {
    document.addEventListener('DOMContentLoaded', resolve, {once: true});
  }) : Promise.resolve();

  // ?new=1: a chat not written yet opens empty (it is created by its first message);
  // without it, an unknown id is an error naming the closest chats.
  function readChat(id) {
    return {asked: performance.now(), data: window.scGet('/api/chats/' + encodeURIComponent(id) + '?new=1')};
  }

  // read: the chat's read already under way (readChat), else it is read now; state: the
  // server's state read beside it at start (the panel then does not read it again).
  chat.open = function (id, read, state) {
    chat.id = id;
    var url = new URL(location.href);
    url.searchParams.set('chat', id);
    history.replaceState(null, '', url);
    read = read || readChat(id);
    var asked = read.asked;
    return Promise.all([read.data, parsed]).then(function (r) {
      var data = r[0];
      render(data.messages);
      showError(null);
      // asked: when the file was asked for, so that topics pushed meanwhile win (panel.js).
      window.dispatchEvent(new CustomEvent('smartcontext.chat_opened',
        {detail: Object.assign({asked: asked, state: state || null}, data)}));
      return data;
    });
  };

  // A chat named in the address is read beside the state and the list of chats, not after.
  var named = new URLSearchParams(location.search).get('chat');
  var early = named ? readChat(named) : null;
  if (early) early.data.catch(function () {});  // its error is shown when it is opened
  chat.ready = Promise.all([window.scGet('/api/state'), window.scGet('/api/chats')])
    .then(function (r) {
      var state = r[0], ids = r[1].chats;
      var id = chooseChat(state, ids);
      fillSelect(ids, id);
      return chat.open(id, id === named ? early : null, state).then(function (data) { return {state: state, chat: data}; });
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
  chat.toolCall = toolCallLine;
  chat.list = listEl;
  chat.toBottom = toBottom;

  // A line of an answer's record: the message it names, scrolled to and focused.
  listEl.addEventListener('click', function (e) {
    var btn = e.target.closest('.sc-sent-jump');
    if (!btn) return;
    var el = byId.get(btn.dataset.target);
    if (!el) return;
    el.tabIndex = -1;
    reveal(el);
    el.focus({preventScroll: true});
  });

  // The transcript editor: the message is added with the chosen role, nobody answers.
  function addToTranscript(text) {
    var role = document.getElementById('sc-role').value;
    sendBtn.disabled = true;
    return fetch('/api/chats/' + encodeURIComponent(chat.id) + '/messages', {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({role: role, content: text})
    }).then(function (r) { return r.json().then(function (d) { return {ok: r.ok, d: d}; }); })
      .then(function (res) {
        if (!res.ok || !res.d.success) throw new Error(res.d.error || 'the message was not added');
        addMessage(res.d.message);
        toBottom();
        input.value = '';
        showError(null);
      })
      .catch(showError)
      .finally(function () { sendBtn.disabled = false; input.focus(); });
  }

  // Send: the model answers when one is configured (reply.js), else the transcript editor.
  composer.addEventListener('submit', function (e) {
    e.preventDefault();
    var text = input.value;
    if (!text.trim() || !chat.id || sendBtn.disabled) return;  // Enter while an answer is written
    if (chat.sendOverride && chat.sendOverride(text)) { input.value = ''; return; }
    addToTranscript(text);
  });

  document.getElementById('sc-add').addEventListener('click', function () {
    var text = input.value;
    if (text.trim() && chat.id) addToTranscript(text);
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
    highlight((e.detail && e.detail.message_ids) ? e.detail.message_ids : []);
    filtered(true);
  });

  // Clear all highlights when the filter is cleared.
  window.addEventListener('smart_context.filter_changed', function (e) {
    var active = (e.detail && e.detail.active_topics) ? e.detail.active_topics : [];
    if (active.length === 0) {
      highlight([]);
      filtered(false);
    }
  });

  // "Show only what is in context" and the jumps to the next message in or out of it. In
  // context: the messages the topic filter keeps (highlighted), or every message when no
  // topic is selected. Each action is said in the view's status line (a live region).
  var onlyEl = document.getElementById('sc-only-context');
  var nextInBtn = document.getElementById('sc-next-in');
  var nextOutBtn = document.getElementById('sc-next-out');
  var viewStatusEl = document.getElementById('sc-view-status');
  var isFiltered = false;
  var lastJump = null;

  function say(text) { viewStatusEl.textContent = text; }

  function saved() { return Array.prototype.slice.call(listEl.querySelectorAll('.sc-msg[data-message-id]')); }

  // What the view shows (the CSS of .sc-only-context), without asking for a layout.
  function shown(el) { return !(onlyEl.checked && isFiltered) || el.classList.contains('sc-highlight'); }

  function inContext(el) { return !isFiltered || el.classList.contains('sc-highlight'); }

  function describeView() {
    var all = saved();
    var kept = all.filter(inContext).length;
    if (!isFiltered) return 'Every message is in context (no topic selected): all ' + plural(all.length, 'message', 'messages') + ' shown.';
    return onlyEl.checked ? 'Showing the ' + kept + ' of ' + plural(all.length, 'message', 'messages') + ' in context.' :
      'Showing all ' + plural(all.length, 'message', 'messages') + '; ' + kept + ' in context (marked).';
  }

  function applyView() {
    listEl.classList.toggle('sc-only-context', onlyEl.checked && isFiltered);
    nextOutBtn.disabled = onlyEl.checked && isFiltered;  // none of those is shown
  }

  function filtered(on) {
    if (on === isFiltered) return;
    isFiltered = on;
    applyView();
    if (onlyEl.checked) say(describeView());
  }

  onlyEl.addEventListener('change', function () {
    applyView();
    say(describeView());
  });

  // From the message last jumped to (or focused), else from the first one in view.
  function startIndex(all) {
    var at = lastJump && all.indexOf(lastJump);
    if (document.activeElement && document.activeElement.dataset && all.indexOf(document.activeElement) >= 0) {
      at = all.indexOf(document.activeElement);
    }
    if (typeof at === 'number' && at >= 0) return at;
    // Block by block: a message's position in a block out of view would lay that block out.
    var top = listEl.getBoundingClientRect().top + 1;
    var bottoms = new Map();
    for (var i = 0; i < all.length; i++) {
      var b = all[i].parentNode;
      if (!bottoms.has(b)) bottoms.set(b, b.getBoundingClientRect().bottom);
      if (bottoms.get(b) <= top) continue;
      if (all[i].getBoundingClientRect().bottom > top) return i - 1;
    }
    return -1;
  }

  function jump(wantIn) {
    var all = saved().filter(shown);
    var matches = all.filter(function (el) { return inContext(el) === wantIn; });
    var what = wantIn ? 'in context' : 'not in context';
    if (!matches.length) {
      say(wantIn ? 'No message is in context.' : (isFiltered ? 'Every message shown is in context.' :
        'Every message is in context: no topic is selected.'));
      return;
    }
    var from = startIndex(all);
    var wrapped = false;
    var target = null;
    for (var i = from + 1; i < all.length; i++) {
      if (inContext(all[i]) === wantIn) { target = all[i]; break; }
    }
    if (!target) { target = matches[0]; wrapped = true; }
    lastJump = target;
    target.tabIndex = -1;
    reveal(target);
    target.focus({preventScroll: true});
    var role = target.querySelector('.sc-msg-role').textContent;
    var text = target.querySelector('.sc-msg-body').textContent.trim();
    say((wrapped && from >= 0 ? 'Back to the first. ' : '') + 'Message ' + (matches.indexOf(target) + 1) + ' of ' +
      matches.length + ' ' + what + ', from ' + role + ': ' + (text.length > 80 ? text.slice(0, 80) + '…' : text));
  }

  nextInBtn.addEventListener('click', function () { jump(true); });
  nextOutBtn.addEventListener('click', function () { jump(false); });

  // Another chat: its own highlights come with it.
  window.addEventListener('smartcontext.chat_opened', function () { lastJump = null; say(''); });
})();
