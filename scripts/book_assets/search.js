// The book's search: every page's sections, as text, are in search-index.js (window.BOOK_INDEX,
// written by scripts/book.py). A script file, not a fetched JSON file, so that search works
// from a copy opened from disk (file://), where browsers refuse fetch().
// A section is a result when it holds every word typed; sections whose heading or page title
// holds the words come first, then those that hold them most often.
(function () {
  "use strict";
  var MAX_RESULTS = 30;

  function words(query) {
    return query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1; });
  }

  function count(text, word) {
    var n = 0, at = text.indexOf(word);
    while (at !== -1) { n += 1; at = text.indexOf(word, at + word.length); }
    return n;
  }

  function score(entry, terms) {
    var title = (entry.page + " " + entry.heading).toLowerCase();
    var text = entry.text.toLowerCase();
    var total = 0;
    for (var i = 0; i < terms.length; i++) {
      var inTitle = count(title, terms[i]), inText = count(text, terms[i]);
      if (inTitle + inText === 0) return 0;
      total += 10 * inTitle + inText;
    }
    return total;
  }

  function snippet(text, term) {
    var at = text.toLowerCase().indexOf(term);
    if (at === -1) return text.slice(0, 140);
    var start = Math.max(0, text.lastIndexOf(" ", Math.max(0, at - 60)));
    var end = text.indexOf(" ", at + 80);
    return (start > 0 ? "… " : "") + text.slice(start, end === -1 ? undefined : end).trim() +
      (end === -1 ? "" : " …");
  }

  function show(list, query) {
    var terms = words(query);
    list.textContent = "";
    if (!terms.length) { list.hidden = true; return; }
    var found = (window.BOOK_INDEX || []).map(function (entry) {
      return { entry: entry, score: score(entry, terms) };
    }).filter(function (hit) { return hit.score > 0; });
    found.sort(function (a, b) { return b.score - a.score; });
    if (!found.length) {
      var none = document.createElement("li");
      none.className = "none";
      none.textContent = "Nothing in the book holds “" + query.trim() + "”.";
      list.appendChild(none);
    }
    found.slice(0, MAX_RESULTS).forEach(function (hit) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = hit.entry.url;
      link.textContent = hit.entry.page + (hit.entry.heading && hit.entry.heading !== hit.entry.page
        ? " › " + hit.entry.heading : "");
      var text = document.createElement("span");
      text.textContent = snippet(hit.entry.text, terms[0]);
      item.appendChild(link);
      item.appendChild(text);
      list.appendChild(item);
    });
    list.hidden = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("book-search");
    var list = document.getElementById("book-results");
    if (!box || !list) return;
    box.addEventListener("input", function () { show(list, box.value); });
    var asked = new URLSearchParams(window.location.search).get("q");
    if (asked) { box.value = asked; show(list, asked); }
  });
})();
