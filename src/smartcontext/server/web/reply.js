// The chat with the model: when a model is configured (GET /api/model), Send asks it to
// answer this chat (POST /api/chats/{id}/reply). The answer streams in as NDJSON: the text
// as it is written, the tool calls as they are made; Stop ends it (POST .../stop), keeping
// what was written. Once it is done the chat is read again, as saved (tool results
// compacted, and what the answer was sent). With no model the page says how to configure
// one, and Send adds the message with the chosen role (the transcript editor).
// Text is inserted with textContent only.
(function () {
  'use strict';

  var chat = window.scChat;
  var sendBtn = document.getElementById('sc-send');
  var stopBtn = document.getElementById('sc-stop');
  var addBtn = document.getElementById('sc-add');
  var noteEl = document.getElementById('sc-model-note');
  var modelEl = document.getElementById('sc-model-name');
  var model = null;  // {configured, model} or {configured: false, how}
  var running = null;  // the chat id whose answer is being written

  // What each answer may be sent ([chat] history_tokens and context_tokens), in the panel.
  function showBudgets(b) {
    var el = document.getElementById('sc-budgets');
    var n = function (x) { return x.toLocaleString('en'); };
    el.replaceChildren();
    el.append('Each answer is sent the selected topics’ messages, or else ' +
      (b.history_tokens ? 'the earlier messages the automatic filter picks within ' + n(b.history_tokens) + ' tokens' :
        'every earlier message') + ' (instructions always), and ' +
      (b.context_tokens ? 'the folder’s context within ' + n(b.context_tokens) + ' tokens' : 'no context from the folder') +
      '. Set in smartcontext.toml: ');
    var code = document.createElement('code');
    code.textContent = '[chat] history_tokens, context_tokens';
    el.append(code, '.');
    el.hidden = false;
  }

  window.scGet('/api/model').then(function (m) {
    model = m;
    if (m.configured) {
      modelEl.textContent = 'Answers by ' + m.model;
      if (m.budgets) showBudgets(m.budgets);
      addBtn.hidden = false;
      sendBtn.textContent = 'Send';
    } else {
      document.getElementById('sc-model-how').textContent = m.how;
      noteEl.hidden = false;
      sendBtn.textContent = 'Add';
    }
    document.documentElement.dataset.model = m.configured ? 'yes' : 'no';
  }).catch(chat.showError);

  function pending(text) {
    var el = chat.element({id: '', role: 'user', content: text});
    el.removeAttribute('data-message-id');  // not saved yet: never highlighted
    var reply = chat.element({id: '', role: 'assistant', content: ''});
    reply.removeAttribute('data-message-id');
    reply.classList.add('sc-pending');
    reply.setAttribute('aria-busy', 'true');
    chat.list.appendChild(el);
    chat.list.appendChild(reply);
    chat.toBottom();
    return reply;
  }

  function onEvent(reply, ev, firstToken) {
    var body = reply.querySelector('.sc-msg-body');
    if (ev.type === 'delta') {
      firstToken();
      body.textContent += ev.text;
    } else if (ev.type === 'assistant') body.textContent = ev.text || '';
    else if (ev.type === 'tool_call') reply.appendChild(chat.toolCall({function: {name: ev.name, arguments: ev.arguments}}));
    else if (ev.type === 'tool_result' && !ev.success) {
      var line = document.createElement('div');
      line.className = 'sc-msg-tool';
      line.textContent = '✗ ' + ev.name + ': ' + ev.error;
      reply.appendChild(line);
    }
    chat.toBottom();
  }

  function busy(on) {
    sendBtn.disabled = on;
    stopBtn.hidden = !on;
    document.documentElement.dataset.answering = on ? 'yes' : 'no';
  }

  async function send(id, text) {
    var reply = pending(text);
    var failure = null;
    var started = performance.now();
    var first = false;
    function firstToken() {
      if (first) return;
      first = true;
      // The time to the first streamed token, for the benchmark and the curious.
      document.documentElement.dataset.firstToken = String(Math.round(performance.now() - started));
    }
    running = id;
    busy(true);
    try {
      var response = await fetch('/api/chats/' + encodeURIComponent(id) + '/reply', {
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
          onEvent(reply, ev, firstToken);
        });
      }
    } catch (e) {
      failure = e;
    } finally {
      running = null;
      busy(false);
      if (chat.id === id) await chat.open(id).catch(function (e) { failure = failure || e; });  // as saved
      chat.showError(failure);
      document.getElementById('sc-input').focus();
    }
  }

  stopBtn.addEventListener('click', function () {
    if (!running) return;
    window.request('chats/' + encodeURIComponent(running) + '/stop', {}).catch(chat.showError);
  });

  chat.sendOverride = function (text) {
    if (!model || !model.configured || running) return false;
    send(chat.id, text);
    return true;
  };
})();
