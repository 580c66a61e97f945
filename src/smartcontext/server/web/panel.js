// The Smart Context panel (the seed's Task 7): the bubble cloud of the chat's topics, the
// locked "Instructions & Preferences" indicator, the similarity toggle and the status line.
// Commands go out through window.request('execute_command', ...); the backend's events
// arrive as CustomEvents on window. The filter state lives on the server (the seed's
// plugin holds it; Smart Context keeps it in .smartcontext/chat_state.json), so a reload
// reads it back. Labels are set with textContent, never as HTML.
(function () {
  'use strict';

  var scTopics = [];
  var scActive = new Set();
  var scSimilarity = true;
  var pushed = null;  // the last topics_updated: {chat_id, at, topics}

  var bubblesEl = document.getElementById('sc-bubbles');
  var statusEl = document.getElementById('sc-status');
  var stickyEl = document.getElementById('sc-sticky-count');
  var toggleEl = document.getElementById('sc-toggle');

  function note(text) {
    var span = document.createElement('span');
    span.className = 'sc-no-topics';
    span.textContent = text;
    return span;
  }

  function setStatus(text) { statusEl.textContent = text; }

  function statusFor(included) {
    var total = window.scChat.total();
    if (!total || included >= total) return 'All messages in context';
    return included + ' of ' + total + ' messages in context';
  }

  function scRender() {
    var sticky = scTopics.find(function (t) { return t.sticky; });
    stickyEl.textContent = sticky ? (sticky.count || (sticky.message_ids || []).length) : 0;

    var regular = scTopics.filter(function (t) { return !t.sticky; });
    if (!regular.length) {
      // The empty state says why, and what makes topics appear.
      bubblesEl.replaceChildren(note(window.scChat.total() ?
        'No topics yet: they are extracted after each answer, or now with “Extract topics now”.' :
        'No topics yet: this chat has no messages. Topics appear once it has some, after the first answer.'));
      return;
    }
    // Rendering replaces the bubbles: the one that had the keyboard focus gets it back.
    var focused = bubblesEl.contains(document.activeElement) ? document.activeElement.dataset.label : null;
    var maxCount = Math.max.apply(null, regular.map(function (t) { return t.count || 1; }));
    var hasFilter = scSimilarity && scActive.size > 0;
    var frag = document.createDocumentFragment();
    regular.forEach(function (t) {
      var el = document.createElement('div');
      el.className = 'sc-bubble';
      if (hasFilter) el.classList.add(scActive.has(t.label) ? 'sc-active' : 'sc-dim');
      if (!scSimilarity) el.classList.add('sc-inert');
      el.dataset.label = t.label;
      el.setAttribute('role', 'button');
      el.setAttribute('aria-pressed', scActive.has(t.label) ? 'true' : 'false');
      el.setAttribute('aria-disabled', scSimilarity ? 'false' : 'true');
      el.tabIndex = scSimilarity ? 0 : -1;
      var n = t.count || 0;
      el.title = t.label + ': ' + n + (n === 1 ? ' message' : ' messages') + '. ' + (scSimilarity ?
        (scActive.has(t.label) ? 'Selected: click to send every message again.' :
          'Click to send only its messages (and the instructions) with the next question.') :
        'Turn the similarity filter on to select topics.');
      el.setAttribute('aria-describedby', 'sc-bubble-hint');
      el.setAttribute('aria-label', t.label + ', ' + n + (n === 1 ? ' message' : ' messages'));
      // Sized by count: the biggest topic at 1.45em, a topic of one message near 0.85em.
      el.style.fontSize = (0.85 + 0.6 * ((t.count || 1) / maxCount)).toFixed(2) + 'em';
      el.textContent = t.label;
      frag.appendChild(el);
    });
    bubblesEl.replaceChildren(frag);
    if (focused !== null && focused !== undefined) {
      var again = Array.prototype.find.call(bubblesEl.children, function (b) { return b.dataset.label === focused; });
      if (again) again.focus();
    }
  }

  // Selections sent and not answered yet: the server settles them (filter_changed).
  var sending = 0;
  function sendFilter() {
    sending += 1;
    return window.request('execute_command', {
      command: 'smart_context.set_filter',
      args: {topics: Array.from(scActive), chat_id: window.scChat.id}
    }).catch(function (e) {
      setStatus('Filter failed: ' + e.message);
      // Refused (a label gone meanwhile): what is selected is what the topics still hold.
      var labels = new Set(scTopics.map(function (t) { return t.label; }));
      scActive = new Set(Array.from(scActive).filter(function (l) { return labels.has(l); }));
      scRender();
    }).finally(function () { sending -= 1; });
  }

  // The bubbles explain themselves on first use: the help is open until the user has
  // selected a topic or closed it (remembered in localStorage).
  var HELP_KEY = 'smartcontext.bubbles_help';
  var helpEl = document.getElementById('sc-bubbles-help');
  function helpSeen() {
    try { localStorage.setItem(HELP_KEY, 'seen'); } catch (e) { /* shown again next time */ }
  }
  try { helpEl.open = localStorage.getItem(HELP_KEY) !== 'seen'; } catch (e) { helpEl.open = true; }
  helpEl.addEventListener('toggle', function () { if (!helpEl.open) helpSeen(); });

  // What became of a selection when the topics were extracted again (the server's
  // filter_changed carries renamed and lost): said until dismissed or the next change.
  var topicNoteEl = document.getElementById('sc-topic-note-text');
  var topicNoteClose = document.getElementById('sc-topic-note-close');
  function topicNote(text) {
    topicNoteEl.textContent = text || '';
    topicNoteClose.hidden = !text;
  }
  topicNoteClose.addEventListener('click', function () {
    topicNote('');
    toggleEl.focus();
  });
  function quoted(l) { return '“' + l + '”'; }
  function describeCarry(d) {
    var parts = [];
    Object.keys(d.renamed || {}).forEach(function (old) {
      parts.push(quoted(old) + ' is now ' + quoted(d.renamed[old]) + ', still selected.');
    });
    var lost = d.lost || [];
    if (lost.length) {
      parts.push((lost.length === 1 ? 'The selected topic ' + quoted(lost[0]) + ' is gone' :
        'The selected topics ' + lost.map(quoted).join(', ') + ' are gone') +
        ': ' + (lost.length === 1 ? 'its' : 'their') + ' messages are no longer selected.');
      if (!(d.active_topics || []).length) parts.push('Every message is in context again.');
    }
    return parts.length ? 'The topics were extracted again after the answer. ' + parts.join(' ') : '';
  }

  window.scToggleTopic = function (label) {
    if (!scSimilarity) return;
    helpSeen();
    topicNote('');
    if (scActive.has(label)) scActive.delete(label);
    else scActive.add(label);
    if (scActive.size) setStatus('Filtering…');
    scRender();
    return sendFilter();
  };

  window.scToggleSimilarity = function (enabled) {
    scSimilarity = enabled;
    if (!enabled) scActive.clear();  // the server clears it too, and says so (filter_changed)
    scRender();
    return window.request('execute_command', {
      command: 'smart_context.set_similarity_mode',
      args: {enabled: enabled}
    }).catch(function (e) { setStatus('Mode change failed: ' + e.message); });
  };

  bubblesEl.addEventListener('click', function (e) {
    var el = e.target.closest('.sc-bubble');
    if (el) window.scToggleTopic(el.dataset.label);
  });
  bubblesEl.addEventListener('keydown', function (e) {
    var el = e.target.closest('.sc-bubble');
    if (el && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      window.scToggleTopic(el.dataset.label);
    }
  });
  toggleEl.addEventListener('change', function () { window.scToggleSimilarity(toggleEl.checked); });

  document.getElementById('sc-extract').addEventListener('click', function () {
    if (!window.scChat.id) return;
    setStatus('Extracting topics…');
    window.request('chats/' + encodeURIComponent(window.scChat.id) + '/topics', {method: 'auto'})
      .catch(function (e) { setStatus('Extraction failed: ' + e.message); });
  });

  // Backend pushes new topics after each response.
  window.addEventListener('smart_context.topics_updated', function (e) {
    var d = e.detail || {};
    if (!d.topics || (d.chat_id && d.chat_id !== window.scChat.id)) return;
    scTopics = d.topics;
    pushed = {chat_id: window.scChat.id, at: performance.now(), topics: d.topics};
    // A selection still on its way was made against the topics just replaced: the server
    // carries it to the new labels and says so (filter_changed); dropping it here would
    // undo the click.
    if (sending) { scRender(); return; }
    // Topics are regenerated: a selected label that is gone is dropped, here and on the server.
    var labels = new Set(scTopics.map(function (t) { return t.label; }));
    var kept = Array.from(scActive).filter(function (l) { return labels.has(l); });
    var changed = kept.length !== scActive.size;
    scActive = new Set(kept);
    scRender();
    if (changed || scActive.size) refreshFilter();
    else setStatus('All messages in context');
  });

  // A filter still active is set again when the chat grows, so the new messages are weighed
  // too and the highlights and the status line follow (once per burst of messages).
  var refreshTimer = null;
  function refreshFilter() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(sendFilter, 150);
  }

  window.addEventListener('smartcontext.message_added', function (e) {
    var d = e.detail || {};
    if (d.chat_id !== window.scChat.id) return;
    if (scSimilarity && scActive.size) refreshFilter();
    // The empty state says whether the chat has messages yet.
    if (!scTopics.some(function (t) { return !t.sticky; })) scRender();
  });

  // filter_changed events seen: a state read sent before one of them is older than it.
  var filterSeq = 0;
  window.addEventListener('smart_context.filter_changed', function (e) {
    var d = e.detail || {};
    // The seed's relay for chat views that listen for it.
    window.dispatchEvent(new CustomEvent('smart_context.highlight_request', {detail: d}));
    if (d.chat_id && d.chat_id !== window.scChat.id) return;
    filterSeq += 1;
    if (d.renamed || d.lost) topicNote(describeCarry(d));
    scActive = new Set(d.active_topics || []);
    scRender();
    if (!scActive.size) setStatus('All messages in context');
  });

  window.addEventListener('smart_context.highlight_applied', function (e) {
    var d = e.detail || {};
    // A selected topic that matched no message: the server's line names it (else the
    // filter falls back to every message and the bubble looks as if it did nothing).
    if (scActive.size) setStatus(d.status_line || statusFor((d.message_ids || []).length));
  });

  // Read the server's state: on load (so a reload keeps the filter), on switching chats and
  // after the WebSocket reconnects (events may have been missed meanwhile).
  function restore(chatData) {
    // The state read at start comes with the first chat (read before this script ran:
    // every filter_changed seen here is newer than it).
    var seq = chatData.state ? 0 : filterSeq;
    var read = chatData.state ? Promise.resolve(chatData.state) : window.scGet('/api/state');
    return read.then(function (state) {
      // The chat is opened again after each answer, while the server may carry the
      // selection to the regenerated topics: a filter_changed that came in meanwhile is
      // newer than this read of the state.
      if (seq !== filterSeq) state = Object.assign({}, state, {active_topics: Array.from(scActive)});
      scSimilarity = !!state.embedding_search;
      toggleEl.checked = scSimilarity;
      // Topics pushed after the chat file was asked for are newer than the file's.
      var newer = pushed && pushed.chat_id === window.scChat.id && pushed.at > (chatData.asked || 0);
      scTopics = newer ? pushed.topics : (chatData.topics || []);
      var mine = state.current_chat_id === window.scChat.id;
      scActive = new Set(mine && scSimilarity ? state.active_topics : []);
      scRender();
      if (!scActive.size) {
        setStatus('All messages in context');
        window.dispatchEvent(new CustomEvent('smart_context.filter_changed',
          {detail: {active_topics: [], chat_id: window.scChat.id}}));
        return;
      }
      return window.request('chats/' + encodeURIComponent(window.scChat.id) + '/history',
        {mode: 'topics', include_messages: false})
        .then(function (h) {
          window.dispatchEvent(new CustomEvent('smart_context.highlight_applied',
            {detail: {message_ids: h.message_ids}}));
          setStatus(h.status_line);
        });
    }).then(function () { document.documentElement.dataset.panel = 'ready'; })
      .catch(function (e) { setStatus('Could not read the state: ' + e.message); });
  }

  window.addEventListener('smartcontext.chat_opened', function (e) {
    var d = e.detail || {};
    if (d.chat_id !== openedId) topicNote('');  // another chat: not its news
    openedId = d.chat_id;
    restore(d);
  });
  var openedId;

  var connectedOnce = false;
  window.addEventListener('smartcontext.connected', function () {
    if (connectedOnce && window.scChat.id) window.scChat.open(window.scChat.id);
    connectedOnce = true;
  });
})();
