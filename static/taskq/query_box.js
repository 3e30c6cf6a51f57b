/* taskq console: the search page's query box completes as it is typed. The ARIA combobox pattern: the
   input is the combobox, the list below it a listbox of options; ArrowDown/ArrowUp move through them (the
   input keeps the focus, aria-activedescendant names the option), Tab accepts the highlighted option (the first
   when none is), Enter accepts the highlighted one (with none highlighted it runs the search), Escape closes the
   list and never clears the box (a search input's own Escape would: a second one erased the query). The
   completions come from /search/complete/ (data-complete); without JavaScript the box is a plain input that
   submits. No dependencies. */
(function () {
  "use strict";

  var WAIT_MS = 120;  // after the last keystroke: one request per pause in typing, not one per key

  function setUp(input) {
    var list = document.getElementById(input.getAttribute("aria-controls"));
    if (!list) { return; }
    var url = input.getAttribute("data-complete");
    // stale: something was typed since the list was filled (its options are for what was there before);
    // acceptFirst: Tab was pressed meanwhile, so the first option of the answer on its way is accepted.
    var state = {options: [], start: 0, end: 0, active: -1, asked: 0, timer: 0, stale: false, acceptFirst: false};
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("autocomplete", "off");

    function close() {
      list.hidden = true;
      list.textContent = "";
      state.options = [];
      state.active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }

    function highlight(index) {
      state.active = index;
      Array.prototype.forEach.call(list.children, function (item, at) {
        item.setAttribute("aria-selected", at === index ? "true" : "false");
      });
      if (index < 0) {
        input.removeAttribute("aria-activedescendant");
        return;
      }
      var item = list.children[index];
      input.setAttribute("aria-activedescendant", item.id);
      item.scrollIntoView({block: "nearest"});
    }

    function show(reply) {
      state.options = reply.options;
      state.start = reply.start;
      state.end = reply.end;
      state.active = -1;
      list.textContent = "";
      reply.options.forEach(function (option, at) {
        var item = document.createElement("li");
        item.id = list.id + "-" + at;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", "false");
        var label = document.createElement("span");
        label.className = "label";
        label.textContent = option.label;
        var detail = document.createElement("span");
        detail.className = "detail";
        detail.textContent = option.detail;
        item.appendChild(label);
        item.appendChild(detail);
        list.appendChild(item);
      });
      if (!reply.options.length) { close(); return; }
      if (state.acceptFirst) { accept(0); return; }
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      input.removeAttribute("aria-activedescendant");
    }

    function forget() {
      clearTimeout(state.timer);  // a question about to be asked is not: the list stays closed
      state.asked++;  // an answer on its way is dropped
      state.stale = state.acceptFirst = false;
      close();
    }

    function ask() {
      clearTimeout(state.timer);
      var text = input.value;
      var cursor = input.selectionStart === null ? text.length : input.selectionStart;
      var asked = ++state.asked;
      var query = "?q=" + encodeURIComponent(text) + "&cursor=" + cursor;
      fetch(url + query, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (reply) {
          // Only the answer to the last question, and only while the box still holds what was asked about.
          if (asked !== state.asked || input.value !== text || document.activeElement !== input) { return; }
          state.stale = false;
          if (reply) { show(reply); } else { close(); }
          state.acceptFirst = false;
        })
        .catch(close);
    }

    function askSoon() {
      clearTimeout(state.timer);
      state.timer = setTimeout(ask, WAIT_MS);
    }

    function accept(index) {
      var option = state.options[index];
      if (!option) { return; }
      var text = input.value;
      input.value = text.slice(0, state.start) + option.text + text.slice(state.end);
      var caret = state.start + option.text.length;
      input.setSelectionRange(caret, caret);
      close();
      ask();  // what may come next: after "queue:" the queues, after a value the keys
    }

    input.addEventListener("input", function () {
      state.stale = true;
      highlight(-1);
      askSoon();
    });
    input.addEventListener("focus", askSoon);
    input.addEventListener("click", askSoon);  // the caret moved: the term under it may be another
    input.addEventListener("blur", forget);
    input.addEventListener("keydown", function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) { return; }
      var open = !list.hidden && state.options.length > 0;
      var count = state.options.length;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        if (!open) { ask(); return; }
        var step = event.key === "ArrowDown" ? 1 : -1;
        highlight(state.active < 0 ? (step > 0 ? 0 : count - 1) : (state.active + step + count) % count);
      } else if (event.key === "Tab" && state.stale && !event.shiftKey) {
        event.preventDefault();  // typed, then Tab before the list caught up: the first option of what was typed
        state.acceptFirst = true;
        ask();
      } else if (event.key === "Tab" && open && !event.shiftKey) {
        event.preventDefault();
        accept(state.active < 0 ? 0 : state.active);
      } else if (event.key === "Enter" && open && state.active >= 0) {
        event.preventDefault();
        accept(state.active);
      } else if (event.key === "Escape") {
        // Closes the list, if any, and nothing more, list or not: the search input's own Escape clears the box,
        // which lost a long query to a second press meant to close a list already closed.
        event.preventDefault();
        forget();
      } else if (event.key === "ArrowLeft" || event.key === "ArrowRight" || event.key === "Home" ||
                 event.key === "End") {
        askSoon();
      }
    });
    // A click on an option accepts it; mousedown is kept from taking the focus off the input (which closes).
    list.addEventListener("mousedown", function (event) { event.preventDefault(); });
    list.addEventListener("click", function (event) {
      var item = event.target.closest("[role=option]");
      if (item) { accept(Array.prototype.indexOf.call(list.children, item)); }
    });
  }

  function start() {
    document.querySelectorAll("input[data-complete][aria-controls]").forEach(setUp);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
