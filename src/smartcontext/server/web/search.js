// The search / context page: a question and a budget give the context (its exact token
// count, the ranked files and the text, with a copy button); Search lists matching places.
(function () {
  'use strict';

  var $ = function (id) { return document.getElementById(id); };
  var errorEl = $('sc-ask-error');

  function showError(e) { errorEl.textContent = e ? (e.message || String(e)) : ''; }

  function listItem(text, cls) {
    var li = document.createElement('li');
    if (cls) li.className = cls;
    li.textContent = text;
    return li;
  }

  function showContext(r) {
    $('sc-search-result').hidden = true;
    $('sc-context-result').hidden = false;
    // For JSON the budget holds the content a model reads; the JSON text around it is
    // larger, and the page says both rather than one number that looks like the whole.
    $('sc-token-count').textContent = r.token_count + ' tokens of ' + r.max_tokens +
      (r.json_tokens != null ? ' counted on the content; the JSON text is ' + r.json_tokens + ' tokens' : '') +
      ' (' + r.item_count + ' items, ' + r.format + ')';
    $('sc-token-count').dataset.tokens = r.token_count;
    $('sc-context-text').textContent = r.text;
    showFiles(r);
    var warnings = $('sc-warnings');
    warnings.replaceChildren();
    (r.warnings || []).forEach(function (w) { warnings.appendChild(listItem(w)); });
    $('sc-copied').textContent = '';
    showOmitted(r);
  }

  // The files in the text's order (an item's own score orders the text, so a file the
  // ranking puts 40th can hold its best item), each with its place in the ranking; then
  // the ranked files the budget left out.
  function showFiles(r) {
    var files = $('sc-files');
    files.replaceChildren();
    var rank = {};
    r.files.forEach(function (f, i) { rank[f] = i + 1; });
    var inText = r.context_files || [];
    inText.forEach(function (f) {
      var li = listItem(f);
      var badge = document.createElement('span');
      badge.className = 'sc-muted sc-rank';
      // The answer lists the best-ranked files only (more_files counts the rest).
      badge.textContent = rank[f] ? ' ranked ' + rank[f] : r.more_files ? ' ranked below ' + r.files.length : '';
      li.appendChild(badge);
      files.appendChild(li);
    });
    var more = $('sc-more-files');
    more.replaceChildren();
    var outside = r.files.filter(function (f) { return inText.indexOf(f) < 0; });
    outside.forEach(function (f) { more.appendChild(listItem(f + ' (ranked ' + rank[f] + ')')); });
    if (r.more_files) more.appendChild(listItem('… ' + r.more_files + ' more', 'sc-muted'));
    var n = outside.length + (r.more_files || 0);
    $('sc-more-files-summary').textContent = 'Ranked, not in the context: ' + n;
    $('sc-more-files-box').hidden = !n;
  }

  // What was left out and why, and what the budget went to (the answer's omitted,
  // omitted_counts and spend).
  function showOmitted(r) {
    var omitted = r.omitted || [];
    var counts = r.omitted_counts || {};
    var total = Object.keys(counts).reduce(function (n, k) { return n + counts[k]; }, 0);
    $('sc-omitted-summary').textContent = total
      ? 'Left out: ' + total + ' candidate' + (total === 1 ? '' : 's') + ' (' +
        Object.keys(counts).map(function (k) { return counts[k] + ' ' + k; }).join(', ') + ')'
      : 'Left out: nothing';
    var sp = r.spend;
    $('sc-spend').textContent = sp && sp.total !== undefined
      ? 'Budget spent: ' + ['bodies', 'signatures', 'headers', 'files'].map(function (k) {
          return k + ' ' + sp[k].tokens + ' (' + sp[k].items + ')';
        }).join(', ') + '; ' + sp.free + ' free'
      : '';
    var body = $('sc-omitted').tBodies[0];
    body.replaceChildren();
    omitted.forEach(function (o) {
      var tr = document.createElement('tr');
      [o.score.toFixed(3), o.path, o.name, o.kind, String(o.tokens),
       o.detail ? o.reason + ': ' + o.detail : o.reason].forEach(function (v) {
        var td = document.createElement('td');
        td.textContent = v;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    $('sc-omitted').hidden = !omitted.length;
  }

  function showHits(r) {
    $('sc-context-result').hidden = true;
    $('sc-search-result').hidden = false;
    $('sc-search-count').textContent = r.count + ' results (' + (r.signals || []).join(' + ') + ')' +
      (r.note ? ' — ' + r.note : '');
    var hits = $('sc-hits');
    hits.replaceChildren();
    r.results.forEach(function (h) {
      var li = document.createElement('li');
      var where = document.createElement('div');
      where.className = 'sc-hit-where';
      // lines: [first, last] of the hit (the search tool's field; there is no start_line)
      var line = Array.isArray(h.lines) && h.lines.length ? ':' + h.lines[0] : '';
      where.textContent = h.path + line + '  ' + (h.heading || h.name || '') +
        '  ' + h.score.toFixed(3);
      var snippet = document.createElement('div');
      snippet.className = 'sc-hit-snippet';
      snippet.textContent = h.snippet || '';
      li.appendChild(where);
      li.appendChild(snippet);
      hits.appendChild(li);
    });
  }

  function busy(on) {
    $('sc-get-context').disabled = on;
    $('sc-run-search').disabled = on;
    document.body.classList.toggle('sc-busy', on);
  }

  $('sc-ask').addEventListener('submit', function (e) {
    e.preventDefault();
    var question = $('sc-question').value.trim();
    if (!question) return;
    busy(true);
    window.request('context', {
      question: question,
      max_tokens: parseInt($('sc-budget').value, 10) || 8000,
      format: $('sc-format').value
    }).then(function (r) { showError(null); showContext(r); })
      .catch(showError)
      .finally(function () { busy(false); });
  });

  $('sc-run-search').addEventListener('click', function () {
    var query = $('sc-question').value.trim();
    if (!query) return;
    busy(true);
    window.request('search', {query: query, limit: 20})
      .then(function (r) { showError(null); showHits(r); })
      .catch(showError)
      .finally(function () { busy(false); });
  });

  $('sc-copy').addEventListener('click', function () {
    var text = $('sc-context-text').textContent;
    var done = function () { $('sc-copied').textContent = 'Copied'; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text, done); });
    } else {
      fallbackCopy(text, done);
    }
  });

  function fallbackCopy(text, done) {
    var area = document.createElement('textarea');
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try { if (document.execCommand('copy')) done(); } finally { area.remove(); }
  }
})();
