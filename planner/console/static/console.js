// The console's own script: live history rows, and the editor's jump from a
// problem to its line. Everything else is plain HTML and htmx attributes.
(function () {
  "use strict";

  function follow(table) {
    var status = document.getElementById("live-status");
    var source = new EventSource(table.getAttribute("data-live"));
    source.addEventListener("open", function () {
      if (status) status.textContent = "Live: results appear here as they arrive.";
      table.setAttribute("data-live-state", "open");
    });
    source.addEventListener("error", function () {
      if (status) status.textContent = "Live updates paused; reconnecting…";
      table.setAttribute("data-live-state", "reconnecting");
    });
    source.addEventListener("result", function (e) {
      var body = table.tBodies[0];
      var holder = document.createElement("tbody");
      holder.innerHTML = e.data;
      while (holder.firstElementChild) {
        var row = holder.firstElementChild;
        row.classList.add("new");
        body.insertBefore(row, body.firstChild);
      }
      var empty = document.querySelector(".history + .empty, .scroll + .empty");
      if (empty) empty.remove();
    });
    window.addEventListener("pagehide", function () { source.close(); });
  }

  function jumpToLine(link) {
    var area = document.getElementById("body");
    var line = parseInt(link.getAttribute("data-line"), 10);
    if (!area || !line) return;
    var lines = area.value.split("\n");
    var start = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
    var end = start + (lines[line - 1] || "").length;
    area.focus();
    area.setSelectionRange(start, end);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table[data-live]").forEach(follow);
  });
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest("a.line");
    if (link) {
      e.preventDefault();
      jumpToLine(link);
    }
  });
})();
