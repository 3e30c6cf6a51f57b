/* taskq console: confirmations, row selection, copy buttons and table sorting. No dependencies. */
(function () {
  "use strict";

  // Forms that change state ask first; the text is in data-confirm.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (!message && form.hasAttribute("data-confirm-selected")) {
      var button = event.submitter;
      var count = form.querySelectorAll("input[name=task_ids]:checked").length;
      if (button && button.value) {
        message = button.textContent.trim() + " " + count + " selected task" + (count === 1 ? "" : "s") + "?";
      }
    }
    if (message && !window.confirm(message)) { event.preventDefault(); }
  });

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
})();
