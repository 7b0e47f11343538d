/* Live task page: while the task is not finished, ask the server every few
 * seconds what changed (the status block and the new events) and show it.
 * No library: the server renders the HTML, this only places it. */
(function () {
  "use strict";

  var block = document.getElementById("status-block");
  var content = document.getElementById("status-content");
  var timeline = document.getElementById("timeline");
  if (!block || !content || !timeline) return;

  var url = block.dataset.fragmentUrl;
  var seconds = Math.max(parseInt(block.dataset.pollSeconds, 10) || 3, 1);
  var lastEventId = parseInt(block.dataset.lastEventId, 10) || 0;
  var hidden = parseInt(block.dataset.eventsHidden, 10) || 0;
  var documentsKey = block.dataset.documentsKey;
  var failures = 0;
  var timer = null;

  function parseRows(html) {
    var body = document.createElement("tbody");
    body.innerHTML = html;
    return Array.prototype.slice.call(body.querySelectorAll("tr"));
  }

  /* The kind filter above the timeline: rows of other kinds are hidden, the
   * rows that arrive later too. */
  var kindFilter = document.getElementById("timeline-kind");

  function filterRow(row) {
    var kind = kindFilter ? kindFilter.value : "";
    row.classList.toggle("filtered-out", kind !== "" && row.dataset.kind !== kind);
  }

  function filterAll() {
    Array.prototype.forEach.call(timeline.querySelectorAll("tr[data-event-id]"), filterRow);
  }

  if (kindFilter) kindFilter.addEventListener("change", filterAll);

  /* Keep the event log's order (created_at, id) even when an event with an
   * earlier time arrives late: data-key sorts as a string. */
  function placeRow(row) {
    if (timeline.querySelector('tr[data-event-id="' + row.dataset.eventId + '"]')) return;
    filterRow(row);
    var rows = timeline.querySelectorAll("tr[data-key]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.key > row.dataset.key) {
        timeline.insertBefore(row, rows[i]);
        return;
      }
    }
    timeline.appendChild(row);
  }

  function setHidden(count) {
    hidden = count;
    var note = document.getElementById("events-hidden-note");
    var number = document.getElementById("events-hidden-count");
    if (note && number) {
      number.textContent = String(count);
      note.hidden = count === 0;
    }
  }

  function get(query) {
    return fetch(url + query, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    });
  }

  /* The answer form below the status is for one escalation: once that one is
   * no longer open (answered elsewhere), hide it rather than let it fail. */
  function followEscalation(openId) {
    var answer = document.getElementById("answer");
    if (answer) answer.hidden = String(openId || "") !== answer.dataset.escalationId;
  }

  function apply(data) {
    content.innerHTML = data.status_html;
    followEscalation(data.open_escalation_id);
    block.dataset.terminal = data.terminal ? "true" : "false";
    if (data.timeline_html !== undefined) {
      timeline.innerHTML = data.timeline_html;
      filterAll();
      setHidden(data.events_hidden || 0);
    }
    (data.events || []).forEach(function (item) {
      parseRows(item.html).forEach(placeRow);
    });
    lastEventId = Math.max(lastEventId, data.last_event_id || 0);
    if (data.documents_key !== documentsKey) {
      var notice = document.getElementById("documents-changed");
      if (notice) notice.hidden = false;
    }
    var shown = timeline.querySelectorAll("tr[data-event-id]").length;
    // Missed something (committed out of id order, or too many at once):
    // take the whole visible timeline once.
    if (data.timeline_html === undefined && shown + hidden !== data.events_total) {
      return get("?full=1").then(apply);
    }
    return data;
  }

  function schedule() {
    clearTimeout(timer);
    if (block.dataset.terminal === "true") return;
    // Back off while the server is unreachable, up to a minute.
    var delay = Math.min(seconds * Math.pow(2, failures), 60);
    timer = setTimeout(poll, delay * 1000);
  }

  function poll() {
    if (document.hidden) return schedule();
    get("?after=" + lastEventId)
      .then(apply)
      .then(function () { failures = 0; }, function () { failures += 1; })
      .then(schedule);
  }

  /* The action buttons ask before they act; the buttons live in the status
   * block, which is replaced on every update, so listen on the document. */
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form && form.dataset ? form.dataset.confirm : "";
    if (question && !window.confirm(question)) event.preventDefault();
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) poll();
  });
  schedule();
})();
