/* taskq console: confirmations, row selection, copy buttons, table sorting and keyboard shortcuts. No
   dependencies. */
(function () {
  "use strict";

  // Forms that change state ask first; the text is in data-confirm.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (!message && event.submitter && event.submitter.hasAttribute("data-confirm-action")) {
      message = event.submitter.getAttribute("data-confirm-action");  // a button that names what it does to how many
    }
    if (!message && form.hasAttribute("data-confirm-selected")) {
      var button = event.submitter;
      var count = form.querySelectorAll("input[name=task_ids]:checked").length;
      if (button && button.value) {
        message = button.textContent.trim() + " " + count + " selected task" + (count === 1 ? "" : "s") + "?";
      }
    }
    if (message && !window.confirm(message)) { event.preventDefault(); }
  });

  // Heartbeat ages on the servers pages tick every second, and a heartbeat older than two intervals is marked
  // "late" in words (a colour alone would say nothing to a screen reader). The console's clock at rendering
  // (data-rendered-at) corrects for a browser clock that is off; the live page moves data-heartbeat-at on. The
  // correction is taken now, as the page loads: taken at the first tick, a second later, ages read a second young.
  var clockOffset = null;
  function takeClockOffset() {
    var rendered = document.querySelector("[data-rendered-at]");
    if (clockOffset === null && rendered) { clockOffset = Number(rendered.getAttribute("data-rendered-at")) - Date.now() || 0; }
  }
  takeClockOffset();
  function tickHeartbeats() {
    document.querySelectorAll("[data-heartbeat-age]").forEach(function (age) {
      var at = Number(age.getAttribute("data-heartbeat-at"));
      if (!at) { return; }
      takeClockOffset();
      var now = Date.now() + clockOffset;
      age.textContent = Math.max(0, Math.floor((now - at) / 1000)) + " s ago";
      var lateAfter = Number(age.getAttribute("data-late-after"));
      var mark = age.parentNode.querySelector("[data-heartbeat-late]");
      if (mark) { mark.hidden = !(lateAfter && now > lateAfter); }
    });
  }
  if (document.querySelector("[data-heartbeat-age], [data-live=servers]")) { setInterval(tickHeartbeats, 1000); }

  // Row selection: "select all" and the enabled state of the batch buttons follow the checkboxes.
  function refreshSelection(form) {
    var boxes = form.querySelectorAll("input[name=task_ids]");
    var checked = form.querySelectorAll("input[name=task_ids]:checked").length;
    form.querySelectorAll("[data-needs-selection]").forEach(function (b) { b.disabled = checked === 0; });
    var label = form.querySelector("[data-selected-count]");
    if (label) { label.textContent = checked + " selected"; }
    var all = form.querySelector("[data-select-all]");
    if (all) {
      all.checked = checked > 0 && checked === boxes.length;
      all.indeterminate = checked > 0 && checked < boxes.length;
    }
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    var form = target.form;
    if (!form) { return; }
    if (target.hasAttribute("data-select-all")) {
      form.querySelectorAll("input[name=task_ids]").forEach(function (b) { b.checked = target.checked; });
    }
    if (target.name === "task_ids" || target.hasAttribute("data-select-all")) { refreshSelection(form); }
  });

  // Copy a task id.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var text = button.getAttribute("data-copy");
    var done = function () {
      button.classList.add("copied");
      setTimeout(function () { button.classList.remove("copied"); }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done);
    } else {
      var area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      done();
    }
  });

  // Sortable tables: click a header with data-sort="num|text"; cells may carry data-value.
  document.addEventListener("click", function (event) {
    var th = event.target.closest("table.sortable th[data-sort]");
    if (!th) { return; }
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-sort") === "num";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var key = function (row) {
      var cell = row.cells[index];
      var value = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
      return numeric ? parseFloat(value) || 0 : value.toLowerCase();
    };
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });

  // Keyboard shortcuts, as in mail and issue trackers: "/" focuses the page's search box, "g" then a letter goes
  // somewhere, "?" shows the list. Keys typed into a field, or with a modifier, are left alone.
  // Paths below the console's root (<body data-console-root>), wherever the project mounted it.
  var ROOT = document.body.getAttribute("data-console-root") || "/";
  var GO = {d: ["", "dashboard"], q: ["#queues-table", "the queues table"], s: ["servers/", "servers"],
            h: ["history/", "history"], c: ["schedulers/", "schedulers"], r: ["redis/", "Redis"]};
  var pendingG = 0;
  function helpDialog() {
    var dialog = document.getElementById("shortcuts");
    if (dialog) { return dialog; }
    dialog = document.createElement("dialog");
    dialog.id = "shortcuts";
    dialog.setAttribute("aria-label", "Keyboard shortcuts");
    var rows = [["/", "focus the search box"], ["?", "show this list"], ["Esc", "close it"]];
    Object.keys(GO).forEach(function (k) { rows.push(["g " + k, "go to " + GO[k][1]]); });
    var table = document.createElement("table");
    table.className = "data";
    rows.forEach(function (row) {
      var tr = table.insertRow();
      var key = document.createElement("kbd");
      key.textContent = row[0];
      tr.insertCell().appendChild(key);
      tr.insertCell().textContent = row[1];
    });
    var title = document.createElement("h2");
    title.textContent = "Keyboard shortcuts";
    dialog.appendChild(title);
    dialog.appendChild(table);
    document.body.appendChild(dialog);
    return dialog;
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) { return; }
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) { return; }
    if (pendingG && Date.now() - pendingG < 1500 && GO[event.key]) {
      pendingG = 0;
      event.preventDefault();
      window.location.assign(ROOT + GO[event.key][0]);
      return;
    }
    pendingG = event.key === "g" ? Date.now() : 0;
    if (event.key === "/") {
      var search = document.querySelector("input[type=search]");
      if (search) { event.preventDefault(); search.focus(); }
    } else if (event.key === "?") {
      event.preventDefault();
      var dialog = helpDialog();
      if (dialog.open) { dialog.close(); } else { dialog.showModal(); }
    }
  });

  // New task form: the type field suggests the types the queue in the queue field has seen (none for a new queue).
  document.addEventListener("input", function (event) {
    var target = event.target;
    if (target.name !== "queue" || !target.closest("form[data-new-task]")) { return; }
    var data = document.getElementById("types-by-queue");
    var list = document.getElementById("task-types");
    if (!data || !list) { return; }
    var types = JSON.parse(data.textContent)[target.value.trim()] || [];
    list.textContent = "";
    types.forEach(function (name) {
      var option = document.createElement("option");
      option.value = name;
      list.appendChild(option);
    });
  });
})();

// Phones: console.css stacks task tables, a task a block and a column a line, and names each line by its column:
// data-label, copied here from the header onto each cell, and onto the rows a live page adds or redraws later.
(function () {
  "use strict";

  function label(table) {
    var names = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
      return th.textContent.trim();
    });
    table.querySelectorAll("tbody > tr").forEach(function (tr) {
      Array.prototype.forEach.call(tr.cells, function (td, at) {
        if (names[at] && !td.hasAttribute("data-label")) { td.setAttribute("data-label", names[at]); }
      });
    });
  }
  function labelWithin(node) {
    if (node.nodeType !== 1) { return; }
    var table = node.closest("table.data.tasks");
    if (table) { label(table); return; }
    node.querySelectorAll("table.data.tasks").forEach(label);
  }
  labelWithin(document.body);
  new MutationObserver(function (records) {
    records.forEach(function (record) { Array.prototype.forEach.call(record.addedNodes, labelWithin); });
  }).observe(document.body, {childList: true, subtree: true});
})();

// Countdowns (the task page's Expires): the time left when the page or its live update was rendered
// (data-seconds-left), counted down every second from when it arrived, so an open page does not freeze at
// "in 59m 59s". Time left rather than a time of day: the browser's clock may be off, its stopwatch is not.
(function () {
  "use strict";

  // As the console's duration filter writes it: "42.0 s", "59m 59s", "2h 5m", "3d 4h".
  function duration(seconds) {
    if (seconds < 60) { return seconds.toFixed(1) + " s"; }
    var whole = Math.floor(seconds), minutes = Math.floor(whole / 60), hours = Math.floor(minutes / 60);
    var days = Math.floor(hours / 24);
    if (days) { return days + "d " + (hours % 24) + "h"; }
    if (hours) { return hours + "h " + (minutes % 60) + "m"; }
    return minutes + "m " + (whole % 60) + "s";
  }
  // When each countdown ends, on this browser's clock, from the moment it was first seen.
  function start() {
    var now = Date.now();
    document.querySelectorAll("[data-seconds-left]").forEach(function (el) {
      if (el.taskqEndsAt === undefined) { el.taskqEndsAt = now + 1000 * Number(el.getAttribute("data-seconds-left")); }
    });
  }
  function tick() {
    start();
    var now = Date.now();
    document.querySelectorAll("[data-seconds-left]").forEach(function (el) {
      var left = (el.taskqEndsAt - now) / 1000;
      var text = left > 0 ? "in " + duration(left) : "due now";
      if (el.textContent !== text) { el.textContent = text; }
    });
  }
  if (!document.querySelector("[data-seconds-left], [data-live=task]")) { return; }
  tick();
  setInterval(tick, 1000);
  // Live updates redraw the fields: a new countdown starts when it arrives, not at the next tick (start() writes
  // nothing, so the observer does not wake itself).
  new MutationObserver(start).observe(document.body, {childList: true, subtree: true});
})();
