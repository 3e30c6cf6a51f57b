/* taskq console: live updates over the console's WebSocket (its path in <body data-live-socket>, where the
   project mounted the console). No dependencies, no polling.

   A page opts in with one element carrying data-live="dashboard|queue|task|servers|workflow|workflows|search|schedulers"
   (plus data-live-queue, data-live-task, data-live-workflow, data-live-state and data-live-cursor, the stream
   position the page was rendered at). The server replays what happened since the cursor, then pushes coalesced
   updates; on a disconnect we reconnect with the newest cursor seen. When the server cannot replay the gap (the
   stream was trimmed past the cursor), the page reads its lists again from the server instead. Over asynq's keys,
   which carry no event stream, the server polls Redis once a second for every page (body data-live-polling) and
   the indicator says so. window.taskqLive exposes the state for tests and the bench.
   Time charts (data-live-series: the URL of their fragment) are fetched again when a live message arrives, at
   most every SERIES_EVERY ms, so they follow what the workers write without a timer of their own. A page without
   live updates says so in the indicator ("not live"), so no page looks live that is not. */
(function () {
  "use strict";
  var root = document.querySelector("[data-live]");
  var indicator = document.querySelector("[data-live-status]");
  // A page with no live part of its own is still live for its summary bar: it subscribes to that only,
  // and its indicator keeps saying the page is not live.
  var summaryOnly = !root && document.querySelector("[data-fleet-summary]");
  if (summaryOnly) { root = summaryOnly; }
  function staticIndicator() {
    if (!indicator) { return; }
    indicator.hidden = false;
    indicator.textContent = "○ not live";
    indicator.className = "live-status static";
    indicator.title = "This page does not update by itself: reload it to see changes" +
      (summaryOnly ? " (the summary bar above does)." : ".");
  }
  var socketPath = document.body.getAttribute("data-live-socket");
  if (!root || !window.WebSocket || !socketPath || summaryOnly) {
    staticIndicator();
    if (!root || !window.WebSocket || !socketPath) { return; }
  }
  var scope = root.getAttribute("data-live") || "summary";
  // The search page follows every queue (the dashboard's subscription: counts only, no rows) and reads its
  // results again from the server when tasks move, as the time charts do.
  var subscribeScope = scope === "search" ? "dashboard" : scope;
  var queue = root.getAttribute("data-live-queue") || "";
  var taskId = root.getAttribute("data-live-task") || "";
  var workflowId = root.getAttribute("data-live-workflow") || "";
  var shownState = root.getAttribute("data-live-state") || "";
  var cursor = {};
  try { cursor = JSON.parse(root.getAttribute("data-live-cursor") || "{}") || {}; } catch (e) { cursor = {}; }
  var live = window.taskqLive = {status: "connecting", messages: 0, received: [], onmessage: null};
  var retryDelay = 500, socket = null;
  // A queue page's tab ("page:size", absent on a filtered page): the hub sends its rows as a fresh load renders them.
  var tab = (root.getAttribute("data-live-tab") || "").split(":");
  tab = tab.length === 2 ? {state: shownState, page: Number(tab[0]), size: Number(tab[1])} : null;
  var SERIES_EVERY = 5000, SEARCH_EVERY = 2000, LISTS_EVERY = 1000;
  live.seriesRefreshes = 0;
  live.searchRefreshes = 0;
  live.listRefreshes = 0;
  live.schedulerRefreshes = 0;

  // Reads parts of the page again from the server: every element matching ``selector`` is replaced by its fresh
  // copy (the element at the same place among the selector's matches in the page read from url), at most every
  // ``every`` ms. With ``trailing``, a call that comes too soon, or while a read is under way (its copy may have
  // been read before the change that called), runs once more when it may, so the last change of a burst is shown
  // too and the page settles on what a fresh load shows. ``kept(old, fresh)`` carries over what the reader
  // changed (an open <details>). The returned function's ``pending()`` says whether a read is due or under way.
  function refresher(selector, url, every, trailing, counter, kept) {
    var at = 0, busy = false, queued = null, again = false;
    function run() {
      var boxes = document.querySelectorAll(selector);
      var now = Date.now();
      queued = null;
      if (!boxes.length) { return; }
      if (busy) { again = again || trailing; return; }
      if (now - at < every) {
        if (trailing) { queued = setTimeout(run, every - (now - at)); }
        return;
      }
      at = now;
      busy = true;
      fetch(url(boxes[0]), {credentials: "same-origin"}).then(function (response) {
        return response.ok ? response.text() : null;
      }).then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelectorAll(selector);
        Array.prototype.forEach.call(document.querySelectorAll(selector), function (box, i) {
          if (!fresh[i]) { return; }
          var next = document.importNode(fresh[i], true);
          if (kept) { kept(box, next); }
          box.replaceWith(next);
        });
        live[counter] += 1;
      }).catch(function () { /* the next message tries again */ }).then(function () {
        busy = false;
        if (again) { again = false; run(); }
      });
    }
    var refresh = function () { if (!queued) { run(); } };
    refresh.pending = function () { return busy || !!queued; };
    return refresh;
  }
  var refreshSeries = refresher("[data-live-series]", function (box) { return box.getAttribute("data-live-series"); },
    SERIES_EVERY, false, "seriesRefreshes");
  var refreshSearch = refresher("[data-live-search]", function () { return location.href; }, SEARCH_EVERY, true,
    "searchRefreshes");
  // A queue page whose catch-up could not replay everything (the stream was trimmed past its cursor: by the
  // exporter's committed offset while the console was down, say), or whose update left rows out, reads its lists
  // (data-live-resync: the task table, the error groups) again, as a fresh load renders them, rather than asking
  // the operator to reload. New rows count again from the fresh table. Selected checkboxes are not kept.
  var refreshLists = refresher("[data-live-resync]", function () { return location.href; }, LISTS_EVERY, true,
    "listRefreshes");
  // The schedulers page reads its sections again when the hub says a cron run moved or an entry changed; a
  // history the reader opened stays open.
  var refreshSchedulers = refresher("[data-live-schedulers]", function () { return location.href; }, SEARCH_EVERY,
    true, "schedulerRefreshes", function (old, fresh) {
      old.querySelectorAll("details[data-entry][open]").forEach(function (open) {
        var same = fresh.querySelector('details[data-entry="' + CSS.escape(open.getAttribute("data-entry")) + '"]');
        if (same) { same.open = true; }
      });
    });

  // The servers page reads its parts (the Quiet all and Stop all forms, rendered per user; the running list; the
  // servers that ended) again when servers start, stop or change state, so it lists what a fresh load lists. One
  // server's page, once its server has ended, reads the page again: the server's record, as a reload shows it.
  var refreshServers = refresher("[data-live-servers-part]", function () { return location.href; }, LISTS_EVERY,
    true, "serverRefreshes");
  // The record does not update by itself: the indicator then says so, as on a load of it (the summary bar stays live).
  var refreshServerPage = refresher("main", function () { return location.href; }, LISTS_EVERY, true,
    "serverRefreshes", function (old, fresh) {
      if (!fresh.querySelector("[data-live]")) { summaryOnly = true; staticIndicator(); }
    });
  live.serverRefreshes = 0;
  var serverEnded = false;

  // The workflows list reads itself again when tasks move (the hub cannot tell a workflow's member by its event).
  var refreshWorkflows = refresher("[data-live-workflows]", function () { return location.href; }, SEARCH_EVERY,
    true, "workflowRefreshes");
  live.workflowRefreshes = 0;

  // Where the console polls Redis (asynq's keys carry no event stream), a live page says so, and why.
  var polling = document.body.getAttribute("data-live-polling") || "";
  live.polling = polling;

  function setStatus(status, title) {
    live.status = status;
    if (!indicator || summaryOnly) { return; }
    indicator.hidden = false;
    indicator.textContent = status === "live" ? (polling ? "● live, " + polling : "● live") :
      status === "connecting" ? "◌ connecting…" : "◌ reconnecting…";
    indicator.className = "live-status " + status + (polling ? " polling" : "");
    indicator.title = title || (status === "live" && polling ? "The console reads Redis again once a second for " +
      "every open page: a Go asynq deployment's keys carry no event stream to follow." : "");
  }

  function idKey(id) { var p = String(id).split("-"); return [Number(p[0]) || 0, Number(p[1]) || 0]; }
  function newer(a, b) { var x = idKey(a), y = idKey(b); return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]); }

  function connect() {
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + socketPath;
    socket = new WebSocket(url);
    socket.onopen = function () {
      socket.send(JSON.stringify({op: "subscribe", scope: subscribeScope, queue: queue, task: taskId, workflow: workflowId, cursor: cursor,
        summary: !!document.querySelector("[data-fleet-summary]"), tab: tab || undefined}));
    };
    socket.onmessage = function (event) {
      var data = JSON.parse(event.data);
      // Live once the server has answered the subscription with its catch-up, not merely because it accepted.
      if (data.replay) { setStatus("live"); retryDelay = 500; }
      live.messages += 1;
      apply(data);
      refreshSeries();
      if (live.onmessage) { live.onmessage(data, performance.now()); }
    };
    socket.onclose = function (event) {
      socket = null;
      // A refused handshake (no permission, session gone) closes before opening; keep trying, slowly.
      setStatus("reconnecting", event.code ? "closed (" + event.code + "); retrying" : "");
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 10000);
    };
  }

  // The summary bar, on every page: each figure as the hub read it.
  function summary(figures) {
    Object.keys(figures).forEach(function (name) {
      var cell = document.querySelector('[data-fleet-figure="' + CSS.escape(name) + '"]');
      if (cell) { cell.textContent = figures[name]; }
    });
  }

  function apply(data) {
    if (data.kind === "summary") { summary(data.summary); return; }
    if (data.kind === "error") {
      // Not served now (the server closes the socket next, and we reconnect from our cursor): not live meanwhile.
      if (data.retry) { setStatus("reconnecting", data.message); }
      else if (data.resync) { notice("Live updates are interrupted: " + data.message); }
      return;
    }
    if (scope === "search") {
      // A polling console sends an update only when counts moved, with no events to count: that is the sign.
      if (data.kind === "update" && (data.events || (polling && !data.replay))) { refreshSearch(); }
      return;
    }
    if (scope === "schedulers") {
      if (data.kind === "schedulers") { refreshSchedulers(); }
      return;
    }
    if (scope === "workflows") {
      if (data.kind === "workflows") { refreshWorkflows(); }
      return;
    }
    if (data.kind === "servers") { servers(data.servers); return; }
    if (data.kind === "dashboard") { dashboard(data); return; }
    if (data.kind === "queue") { queuePage(data); return; }
    if (data.kind === "tab") { tabRows(data); return; }
    if (data.kind === "workflow") { workflowPage(data); return; }
    Object.keys(data.cursor || {}).forEach(function (q) {
      if (!cursor[q] || newer(data.cursor[q], cursor[q])) { cursor[q] = data.cursor[q]; }
    });
    Object.keys(data.queues || {}).forEach(function (q) { counts(q, data.queues[q]); });
    (data.tasks || []).forEach(row);
    // The task page's history comes whole with the detail's sections; rows are added one by one only when the
    // server could not render them (the task and its events are gone), each at most once (by its stream id).
    if (!(data.detail && data.detail.sections)) { (data.history || []).forEach(historyRow); }
    if (data.detail) { detail(data.detail); }
    if (data.resync || data.more) {
      if (document.querySelector("[data-live-resync]")) { refreshLists(); }
      else if (data.resync) { notice("Some changes could not be replayed; reload for the full picture."); }
    } else if (refreshLists.pending() && (data.tasks || []).length) {
      refreshLists();  // rows that moved while the lists were being read: read them once more after
    }
  }

  function setText(el, value) {
    el.textContent = value;
    if (el.hasAttribute("data-value")) { el.setAttribute("data-value", value); }
  }

  // A time as the server renders it: UTC, 24-hour, "2024-05-01 06:25:57" (ms: with milliseconds, as histories).
  function utc(at, ms) { return new Date(at).toISOString().slice(0, ms ? 23 : 19).replace("T", " "); }

  function counts(q, figures) {
    var containers;
    if (scope === "dashboard") {
      // A queue without a row yet gets one with the next dashboard snapshot.
      containers = document.querySelectorAll('[data-live-for="' + CSS.escape(q) + '"]');
    } else {
      containers = q === queue ? [document] : [];
    }
    Array.prototype.forEach.call(containers, function (box) {
      box.querySelectorAll("[data-live-count]").forEach(function (el) {
        var name = el.getAttribute("data-live-count");
        if (name in figures) { setText(el, String(figures[name])); }
      });
      // The bulk bar's confirmation and the count it posts name the tab's count now, not the one at page load;
      // the pager's page count follows it (the rows themselves are listed again on a reload).
      box.querySelectorAll("[data-live-confirm]").forEach(function (form) {
        var name = form.getAttribute("data-live-confirm");
        if (!(name in figures)) { return; }
        form.setAttribute("data-confirm", form.getAttribute("data-confirm-template").split("{count}").join(figures[name]));
        var expected = form.querySelector("input[name=expected]");
        if (expected) { expected.value = String(figures[name]); }
      });
      box.querySelectorAll("[data-live-pages]").forEach(function (el) {
        var name = el.getAttribute("data-live-pages");
        if (name in figures) { el.textContent = String(Math.max(1, Math.ceil(figures[name] / Number(el.getAttribute("data-size"))))); }
      });
    });
    if (scope === "queue" && q === queue && "paused" in figures) { pausedState(figures.paused); }
    if (scope === "queue" && q === queue && tab && shownState in figures) { tabShape(figures[shownState]); }
  }

  // Queue page: a first page whose tab count says it now has rows, or none, or needs a pager, where the page has not,
  // reads its lists again (the table, its bulk bar and pager are rendered per user with the page).
  function tabShape(count) {
    var lists = document.querySelector("[data-live-resync]");
    if (!lists || tab.page !== 1) { return; }
    var rows = count > 0, pager = count > tab.size;
    if (rows !== !!lists.querySelector("table.tasks") || pager !== !!lists.querySelector("nav.pager")) { refreshLists(); }
  }

  // Queue page: the badge and the Pause or Resume button of the state the queue is in (both are in the page, one
  // hidden), from the counts of every update and from the page snapshot (a pause writes no event).
  function pausedState(paused) {
    var now = paused ? "1" : "0";
    document.querySelectorAll("[data-live-paused]").forEach(function (el) {
      el.hidden = el.getAttribute("data-live-paused") !== now;
    });
  }

  // Dashboard: the size chart, changed rows' cells, rows for queues that appeared, none for queues that went.
  function dashboard(data) {
    var chart = document.querySelector("[data-live-chart]");
    // The chart is the console's own SVG, every label escaped server-side: the same markup a reload would show.
    if (chart && data.chart !== undefined) { chart.innerHTML = data.chart; }
    var body = document.querySelector("#queues-table tbody");
    var listed = {};
    data.listed.forEach(function (name) { listed[name] = true; });
    data.rows.forEach(function (q) {
      var tr = body.querySelector('tr[data-live-for="' + CSS.escape(q.queue) + '"]');
      if (!tr) { tr = newQueueRow(body, q); }
      else if (!!tr.querySelector('[data-live-cell="state"] .badge.paused') !== q.paused) {
        tr = newQueueRow(body, q, tr);  // paused or resumed elsewhere: the state badge and the action change
      }
      Object.keys(q.cells).forEach(function (name) {
        var td = tr.querySelector('[data-live-cell="' + name + '"]');
        if (td) { td.textContent = q.cells[name][1]; td.setAttribute("data-value", q.cells[name][0]); }
      });
    });
    body.querySelectorAll("tr[data-live-for]").forEach(function (tr) {
      if (!listed[tr.getAttribute("data-live-for")]) { tr.remove(); }
    });
    var filled = data.listed.length > 0;
    document.querySelectorAll("[data-live-filled], [data-live-chart]").forEach(function (el) { el.hidden = !filled; });
    document.querySelectorAll("[data-live-empty]").forEach(function (el) { el.hidden = filled; });
  }

  // A row from the page's own row template, with the queue's name and link put in; replaces ``old`` if given,
  // else goes in name order (the order the page lists queues in).
  function newQueueRow(body, q, old) {
    var template = document.querySelector('template[data-live-new-row="' + (q.paused ? "paused" : "run") + '"]');
    var placeholder = template.getAttribute("data-live-placeholder");
    var tr = template.content.querySelector("tr").cloneNode(true);
    var href = tr.querySelector("a").getAttribute("href");
    [tr].concat(Array.prototype.slice.call(tr.querySelectorAll("*"))).forEach(function (el) {
      Array.prototype.forEach.call(el.attributes, function (attr) {
        var value = attr.value.split(href).join(q.href);  // the queue's URL, and action URLs under it
        if (attr.name !== "href" && attr.name !== "action") { value = value.split(placeholder).join(q.queue); }
        if (value !== attr.value) { el.setAttribute(attr.name, value); }
      });
    });
    tr.querySelector("td.name a").textContent = q.queue;
    tr.classList.add("live-new");
    if (old) { body.replaceChild(tr, old); return tr; }
    var next = Array.prototype.find.call(body.querySelectorAll("tr[data-live-for]"), function (other) {
      return other.getAttribute("data-live-for") > q.queue;
    });
    body.insertBefore(tr, next || null);
    return tr;
  }

  // Queue page: the banner figures counts do not carry (memory, latency) and the task-types table, as the server
  // formatted and rendered them; the table's filter links get this page's tab for the server's placeholder.
  function queuePage(d) {
    if (scope !== "queue" || d.queue !== queue) { return; }
    if (d.paused !== undefined) { pausedState(d.paused); }
    Object.keys(d.figures).forEach(function (name) {
      document.querySelectorAll('[data-live-figure="' + name + '"]').forEach(function (el) { el.textContent = d.figures[name]; });
    });
    var chips = document.querySelector("[data-live-groups]");
    // The groups as the aggregating tab renders them (taskq/_groups.html): a cut group's chip goes with it.
    if (chips && d.groups !== undefined) { chips.innerHTML = d.groups; }
    var box = document.querySelector("[data-live-types]");
    if (!box) { return; }
    var holder = document.createElement("template");
    holder.innerHTML = d.types;
    holder.content.querySelectorAll("a[href], a[title]").forEach(function (a) {
      ["href", "title"].forEach(function (attr) {
        var value = a.getAttribute(attr);
        if (value) { a.setAttribute(attr, value.split(d.placeholder).join(shownState)); }
      });
    });
    box.replaceChildren(holder.content);
  }

  // Workflow page: its live part as the page's own template renders it (taskq/_workflow_live.html, escaped by
  // the template engine), and the actions (rendered per user with the page) that apply now.
  function workflowPage(d) {
    if (scope !== "workflow" || d.queue !== queue || d.workflow !== workflowId) { return; }
    if (d.gone) { notice("This workflow is no longer kept (its keep time passed, or its queue was deleted)."); return; }
    root.innerHTML = d.html;
    var applies = {};
    d.actions.forEach(function (name) { applies[name] = true; });
    document.querySelectorAll("[data-workflow-action]").forEach(function (el) {
      el.hidden = !applies[el.getAttribute("data-workflow-action")];
    });
    var box = document.querySelector("[data-workflow-actions]");
    if (box) { box.hidden = d.actions.length === 0; }
  }

  // Queue page: a row leaving the shown state is marked with where it went, at once; a task entering it is listed
  // with the tab's rows, which the hub renders as the page does (tabRows).
  function row(t) {
    if (scope !== "queue" || t.queue !== queue) { return; }
    var tr = document.querySelector('tr[data-live-task="' + CSS.escape(t.id) + '"]');
    // "done" is no state (it succeeded and was deleted, having no retention): no tab lists it.
    if (tr) {
      var mark = tr.querySelector(".live-moved");
      if (t.to === shownState) {
        tr.classList.remove("live-left");
        if (mark) { mark.remove(); }
        return;
      }
      tr.classList.add("live-left");
      if (!mark) {
        mark = document.createElement("span");
        mark.className = "badge live-moved";
        tr.querySelector("td.id").appendChild(mark);
      }
      mark.textContent = "→ " + t.to;
    }
  }

  // Queue page: the rows of its tab as the hub rendered them with the page's own template (taskq/_task_rows.html),
  // in a fresh load's order. A row struck through as gone stays where it was until the next load; the selection is
  // kept. A table that appears or empties (its bulk bar and pager too) is read again from the server.
  function tabRows(d) {
    if (scope !== "queue" || !tab || d.queue !== queue || d.state !== shownState || d.page !== tab.page ||
        d.size !== tab.size) { return; }
    var body = document.querySelector("table.tasks tbody[data-live-rows]");
    if (!body || !d.ids.length) {
      // Page 1 of a tab that filled or emptied: as a fresh load, with the bulk bar or the "No … tasks" line. A
      // later page past the tab's end keeps its struck rows (a fresh load would show the last page instead).
      if (tab.page === 1 && (body || d.ids.length)) { refreshLists(); return; }
      if (!body) { return; }
    }
    var holder = document.createElement("template");
    holder.innerHTML = d.rows;
    var checks = !!document.querySelector("table.tasks thead th.check");
    var had = {}, checked = {}, left = [];
    Array.prototype.forEach.call(body.querySelectorAll("tr[data-live-task]"), function (tr, i) {
      var id = tr.getAttribute("data-live-task");
      had[id] = true;
      var box = tr.querySelector("input[name=task_ids]");
      if (box && box.checked) { checked[id] = true; }
      if (tr.classList.contains("live-left")) { left.push([i, tr]); }
    });
    var fresh = Array.prototype.slice.call(holder.content.querySelectorAll("tr[data-live-task]"));
    var listed = {};
    fresh.forEach(function (tr) {
      var id = tr.getAttribute("data-live-task");
      listed[id] = true;
      if (!checks) { tr.querySelectorAll("td.check").forEach(function (td) { td.remove(); }); }
      var box = tr.querySelector("input[name=task_ids]");
      if (box) { box.checked = !!checked[id]; }
      if (!had[id]) { tr.classList.add("live-new"); }
    });
    left.forEach(function (pair) {
      if (!listed[pair[1].getAttribute("data-live-task")]) { fresh.splice(Math.min(pair[0], fresh.length), 0, pair[1]); }
    });
    body.replaceChildren.apply(body, fresh);
    var any = body.querySelector("input[name=task_ids]");
    // console.js counts the selection on a change: the batch buttons and "N selected" follow what is still listed.
    if (any) { any.dispatchEvent(new Event("change", {bubbles: true})); }
  }

  // Task page: its sections as the server rendered them (badges, fields, attempts, history: console/task_page.py),
  // the actions its state takes, the result; a task gone since the page was read loses what went with it.
  function detail(d) {
    if (!d.state) { return; }
    var sections = d.sections || {};
    Object.keys(sections).forEach(function (name) {
      var box = document.querySelector('[data-live-section="' + name + '"]');
      if (box) { box.innerHTML = sections[name]; }  // the console's own template, escaped server-side
    });
    if (!d.sections) {  // the task and its events are gone: only the word for what became of it
      var badge = document.querySelector("[data-live-badge]");
      if (badge) { badge.textContent = d.state; badge.className = "badge state-" + d.state; }
      var field = document.querySelector('[data-live-field="state"]');
      if (field) { field.textContent = d.state + (d.gone ? " (no longer stored)" : ""); }
    }
    var crumb = document.querySelector("[data-live-crumb-state]");
    if (crumb) { crumb.textContent = d.gone ? "gone" : d.state; }
    var crumbLink = document.querySelector("[data-live-crumb]");
    if (crumbLink) { crumbLink.search = "?state=" + encodeURIComponent(d.state); }
    var actions = {};
    (d.actions || []).forEach(function (name) { actions[name] = true; });
    document.querySelectorAll("[data-live-action]").forEach(function (button) {
      button.hidden = !actions[button.getAttribute("data-live-action")];
    });
    document.querySelectorAll("[data-live-edit]").forEach(function (el) { el.hidden = !d.editable; });
    document.querySelectorAll("[data-live-stored]").forEach(function (el) { el.hidden = !!d.gone; });
    var box = document.querySelector("[data-live-result]");
    // The feed's result is masked for everyone; a page showing it unredacted keeps what it shows.
    if (box && d.result && d.result.redacted && box.hasAttribute("data-live-revealed")) {
      notice("The result changed; reload to see it.");
    } else if (box && d.result) {
      box.textContent = "";
      var meta = document.createElement("p");
      meta.className = "muted";
      meta.textContent = d.result.size + " bytes · " + ({hex: "binary (hex)", json: "JSON", deep: "JSON, " + d.result.text}[d.result.kind] || d.result.kind);
      var pre = document.createElement("pre");
      pre.className = "bytes";
      pre.textContent = d.result.text + (d.result.truncated ? "\n…" : "");
      box.appendChild(meta);
      if (d.result.kind !== "deep") box.appendChild(pre);
    }
  }

  function historyRow(e) {
    var body = document.querySelector("[data-live-history]");
    if (!body || body.querySelector('tr[data-event="' + CSS.escape(e.event || "") + '"]')) { return; }
    var tr = document.createElement("tr");
    tr.className = "live-new";
    tr.setAttribute("data-event", e.event || "");
    [utc(e.at, true), e.from || "—", e.to, e.worker || "—", e.error || ""].forEach(function (text, i) {
      var td = document.createElement("td");
      td.textContent = text;
      if (i === 4) { td.className = "error-cell"; }  // as the server renders it: errors in the error colour
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }

  // Servers page: busy counts, resources and heartbeats per server, in place; servers that started, stopped or
  // changed state: the page's parts read again (refreshServers). One server's page: its row and header follow it.
  function servers(list) {
    var only = root.getAttribute("data-live-only");  // one server's page
    if (only) { serverPage(list, only); return; }
    var listed = list.map(function (s) { return s.id + " " + s.status; }).sort().join(",");
    var shown = Array.prototype.map.call(document.querySelectorAll("tr[data-live-server]"), function (tr) {
      var status = tr.querySelector("[data-live-server-status]");
      return tr.getAttribute("data-live-server") + " " + (status ? status.textContent : "");
    }).sort().join(",");
    list.forEach(function (s) { serverFigures(document.querySelector('tr[data-live-server="' + CSS.escape(s.id) + '"]'), s); });
    if (listed !== shown) { refreshServers(); }
  }

  function serverPage(list, only) {
    if (serverEnded) {  // its record is shown, or being read (again, if the read failed)
      if (document.contains(root)) { refreshServerPage(); }
      return;
    }
    var s = null;
    list.forEach(function (each) { if (each.id === only) { s = each; } });
    if (!s) {
      // Gone: the page becomes the server's record (how it ended, what became of its tasks), as a reload shows it.
      serverEnded = true;
      document.querySelectorAll("[data-live-empty]").forEach(function (el) { el.hidden = false; });
      document.querySelectorAll("[data-live-filled]").forEach(function (el) { el.hidden = true; });
      refreshServerPage();
      return;
    }
    var tr = document.querySelector('tr[data-live-server="' + CSS.escape(only) + '"]');
    var running = s.running.map(function (t) { return t.id; }).join(" ");
    if (tr && s.row && tr.getAttribute("data-live-running") !== running) {
      var fresh = document.createElement("template");
      fresh.innerHTML = s.row.trim();
      var next = fresh.content.firstElementChild;
      next.setAttribute("data-live-running", running);
      var details = next.querySelector("details");
      if (details) { details.open = true; }
      tr.replaceWith(next);
      tr = next;
    }
    serverFigures(tr, s);
    // The header's heartbeat ticks from the same time as the row's.
    var beat = document.querySelector(".banner [data-heartbeat-age]");
    if (beat && s.usage && s.usage.heartbeat) {
      beat.setAttribute("data-heartbeat-at", s.usage.heartbeat);
      beat.setAttribute("data-late-after", s.usage.late_after || "");
    }
    // The header's badge and actions follow its state (quiet: no Quiet; stopping: no action), as after a reload.
    var badge = document.querySelector("[data-live-server-badge]");
    if (badge) { serverBadge(badge, s.status); }
    document.querySelectorAll("[data-live-server-action]").forEach(function (form) {
      var action = form.getAttribute("data-live-server-action");
      form.hidden = s.status === "stopping" || (action === "quiet" && s.status !== "active");
    });
  }

  // A server's row: its busy count, status, resources and heartbeat (console.js ticks the age and marks it late).
  function serverFigures(tr, s) {
    if (!tr) { return; }
    var busy = tr.querySelector("[data-live-busy]");
    if (busy) { busy.textContent = s.running.length + " / " + s.concurrency + " busy"; }
    var status = tr.querySelector("[data-live-server-status]");
    if (status) { serverBadge(status, s.status); }
    var u = s.usage || {};
    [["rss", u.rss], ["cpu", u.cpu], ["processed", u.processed]].forEach(function (pair) {
      var cell = tr.querySelector("[data-live-" + pair[0] + "]");
      if (cell && pair[1] !== undefined) { cell.textContent = pair[1]; }
    });
    var beat = tr.querySelector("[data-heartbeat-age]");
    if (beat && u.heartbeat) {
      beat.setAttribute("data-heartbeat-at", u.heartbeat);
      beat.setAttribute("data-late-after", u.late_after || "");
    }
  }

  function serverBadge(el, status) {
    el.textContent = status;
    el.className = "badge " + (status === "active" ? "running" : "paused");
  }

  var shown = {};
  function notice(text) {
    if (shown[text]) { return; }
    shown[text] = true;
    var p = document.createElement("p");
    p.className = "note live-note";
    p.textContent = text + " ";
    var a = document.createElement("a");
    a.href = location.href;
    a.textContent = "Reload";
    p.appendChild(a);
    var main = document.querySelector("main");
    main.insertBefore(p, main.firstChild);
  }

  setStatus("connecting");
  connect();
}());
