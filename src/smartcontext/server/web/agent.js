// Agent sessions in the chat view: a chat whose id starts with "agent-" is answered by the
// agent (POST /api/agent/sessions/{id}/messages). Its answer streams in as NDJSON: the
// text as it is written, the tool calls as they are made; once it is done the chat is read
// again, as saved (tool results compacted). Text is inserted with textContent only.
(function () {
  'use strict';

  var chat = window.scChat;
  var roleEl = document.getElementById('sc-role');
  var sendBtn = document.getElementById('sc-send');

  function isAgent(id) { return /^agent-/.test(id || ''); }

  window.addEventListener('smartcontext.chat_opened', function () {
    roleEl.hidden = isAgent(chat.id);  // the agent's messages are always the user's
  });

  document.getElementById('sc-new-agent').addEventListener('click', function () {
    window.request('agent/sessions', {}).then(function (s) {
      chat.fillSelect(s.id);
      return chat.open(s.id);
    }).catch(chat.showError);
  });

  function pending(text) {
    var el = chat.element({id: '', role: 'user', content: text});
    el.removeAttribute('data-message-id');  // not saved yet: never highlighted
    var reply = chat.element({id: '', role: 'assistant', content: ''});
    reply.removeAttribute('data-message-id');
    reply.classList.add('sc-pending');
    chat.list.appendChild(el);
    chat.list.appendChild(reply);
    chat.list.scrollTop = chat.list.scrollHeight;
    return reply;
  }

  function addLine(reply, cls, text) {
    var line = document.createElement('div');
    line.className = cls;
    line.textContent = text;
    reply.appendChild(line);
  }

  function onEvent(reply, ev) {
    var body = reply.querySelector('.sc-msg-body');
    if (ev.type === 'delta') body.textContent += ev.text;
    else if (ev.type === 'assistant') body.textContent = ev.text || '';
    else if (ev.type === 'tool_call') addLine(reply, 'sc-msg-tool', '→ ' + ev.name + '(' + (ev.arguments || '') + ')');
    else if (ev.type === 'tool_result' && !ev.success) addLine(reply, 'sc-msg-tool', '✗ ' + ev.name + ': ' + ev.error);
    chat.list.scrollTop = chat.list.scrollHeight;
  }

  async function send(id, text) {
    var reply = pending(text);
    var failure = null;
    sendBtn.disabled = true;
    try {
      var response = await fetch('/api/agent/sessions/' + encodeURIComponent(id) + '/messages', {
        method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text: text})
      });
      if (!response.ok) {
        var err = await response.json().catch(function () { return {}; });
        throw new Error(err.error || ('HTTP ' + response.status));
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffer = '';
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) break;
        buffer += decoder.decode(chunk.value, {stream: true});
        var lines = buffer.split('\n');
        buffer = lines.pop();
        lines.forEach(function (line) {
          if (!line.trim()) return;
          var ev = JSON.parse(line);
          if (ev.type === 'result' && !ev.success) failure = new Error(ev.error);
          onEvent(reply, ev);
        });
      }
    } catch (e) {
      failure = e;
    } finally {
      sendBtn.disabled = false;
      if (chat.id === id) await chat.open(id).catch(function (e) { failure = failure || e; });  // as saved
      chat.showError(failure);
    }
  }

  chat.sendOverride = function (text) {
    if (!isAgent(chat.id)) return false;
    send(chat.id, text);
    return true;
  };
})();
