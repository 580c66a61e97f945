// A small Markdown renderer for chat messages: fenced code blocks (with a copy button),
// headings, lists, quotes, paragraphs, and inline code, bold, italics and http(s) links.
// It builds DOM nodes and sets every piece of text with textContent: no HTML from a message
// is ever parsed, whatever it holds. Text with no Markdown mark takes a fast path (one text
// node), so a long chat renders as quickly as plain text.
(function () {
  'use strict';

  var MARKS = /[`*_#\[>]|^\s*(?:[-+]|\d+\.)\s/m;
  var INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\s][^*\n]*?)\*|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g;

  function inline(parent, text) {
    var last = 0, m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      var el;
      if (m[1]) { el = document.createElement('code'); el.textContent = m[2]; }
      else if (m[3] || m[4]) { el = document.createElement('strong'); el.textContent = m[3] || m[4]; }
      else if (m[5]) { el = document.createElement('em'); el.textContent = m[5]; }
      else {
        el = document.createElement('a');
        el.textContent = m[6];
        el.href = m[7];
        el.rel = 'noopener noreferrer';
        el.target = '_blank';
      }
      parent.appendChild(el);
      last = INLINE.lastIndex;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
    return parent;
  }

  function codeBlock(lang, code) {
    var wrap = document.createElement('div');
    wrap.className = 'sc-code';
    var bar = document.createElement('div');
    bar.className = 'sc-code-bar';
    var name = document.createElement('span');
    name.textContent = lang || 'code';
    var copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'sc-copy';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', 'Copy the ' + (lang || 'code') + ' block');
    bar.appendChild(name);
    bar.appendChild(copy);
    var pre = document.createElement('pre');
    var c = document.createElement('code');
    c.textContent = code;
    pre.appendChild(c);
    wrap.appendChild(bar);
    wrap.appendChild(pre);
    return wrap;
  }

  function render(text) {
    var frag = document.createDocumentFragment();
    if (!text) return frag;
    if (!MARKS.test(text)) {
      frag.appendChild(document.createTextNode(text));
      return frag;
    }
    var lines = text.split('\n');
    var para = [];
    var list = null;

    function flush() {
      if (para.length) {
        var p = document.createElement('p');
        inline(p, para.join('\n'));
        frag.appendChild(p);
        para = [];
      }
      list = null;
    }

    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      var fence = /^\s*(```+|~~~+)\s*([\w+.#-]*)\s*$/.exec(line);
      if (fence) {
        flush();
        var body = [];
        for (i++; i < lines.length && lines[i].trim().indexOf(fence[1]) !== 0; i++) body.push(lines[i]);
        frag.appendChild(codeBlock(fence[2], body.join('\n')));
        continue;
      }
      var heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        flush();
        // Headings inside a message sit below the page's own: h4-h6, bold text in effect.
        var h = document.createElement('h' + Math.min(6, heading[1].length + 3));
        inline(h, heading[2]);
        frag.appendChild(h);
        continue;
      }
      var item = /^\s*(?:([-+*])|(\d+)\.)\s+(.*)$/.exec(line);
      if (item) {
        var tag = item[2] ? 'OL' : 'UL';
        if (para.length || !list || list.tagName !== tag) {
          flush();
          list = document.createElement(tag.toLowerCase());
          frag.appendChild(list);
        }
        list.appendChild(inline(document.createElement('li'), item[3]));
        continue;
      }
      var quote = /^>\s?(.*)$/.exec(line);
      if (quote) {
        flush();
        frag.appendChild(inline(document.createElement('blockquote'), quote[1]));
        continue;
      }
      if (!line.trim()) { flush(); continue; }
      if (list) list = null;
      para.push(line);
    }
    flush();
    return frag;
  }

  // One listener for every copy button of the page.
  document.addEventListener('click', function (e) {
    var btn = e.target.closest && e.target.closest('.sc-copy');
    if (!btn) return;
    var code = btn.closest('.sc-code').querySelector('code').textContent;
    var done = function () {
      btn.textContent = 'Copied';
      setTimeout(function () { btn.textContent = 'Copy'; }, 1500);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(code).then(done, function () { btn.textContent = 'Copy failed'; });
    } else {
      btn.textContent = 'Copy failed';
    }
  });

  window.scMarkdown = render;
  // Into an empty element: plain text (most messages) as its text, with no fragment.
  window.scMarkdown.into = function (el, text) {
    if (text && !MARKS.test(text)) el.textContent = text;
    else el.appendChild(render(text));
  };
})();
