// The theme: the system's (prefers-color-scheme), or light or dark as the user chose,
// remembered in localStorage. Loaded in <head> so the page never flashes the other theme.
(function () {
  'use strict';
  var KEY = 'smartcontext.theme';
  var root = document.documentElement;

  function apply(theme) {
    if (theme === 'light' || theme === 'dark') root.dataset.theme = theme;
    else delete root.dataset.theme;
  }

  var saved = null;
  try { saved = localStorage.getItem(KEY); } catch (e) { /* storage off: the system's theme */ }
  apply(saved);

  document.addEventListener('DOMContentLoaded', function () {
    var select = document.getElementById('sc-theme');
    if (!select) return;
    select.value = saved === 'light' || saved === 'dark' ? saved : 'auto';
    select.addEventListener('change', function () {
      apply(select.value);
      try {
        if (select.value === 'auto') localStorage.removeItem(KEY);
        else localStorage.setItem(KEY, select.value);
      } catch (e) { /* not remembered, still applied */ }
    });
  });
})();
