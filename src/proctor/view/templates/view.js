(function () {
  "use strict";

  function copyText(text, done) {
    function fallback() {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      done(ok);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
    } else {
      fallback();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy") : null;
    if (!button) { return; }
    copyText(button.getAttribute("data-copy") || "", function (ok) {
      button.textContent = ok ? "copied" : "select it";
      button.setAttribute("data-copied", ok ? "yes" : "no");
      window.setTimeout(function () { button.textContent = "copy"; }, 1500);
    });
  });

  function list(element, name) {
    try { return JSON.parse(element.getAttribute(name) || "[]"); } catch (e) { return []; }
  }

  // The run page: filter the failure groups and the cases by status, check and text.
  var status = document.getElementById("filter-status");
  var check = document.getElementById("filter-check");
  var text = document.getElementById("filter-text");
  if (status && check && text) {
    var apply = function () {
      var s = status.value, c = check.value, t = text.value.trim().toLowerCase(), shown = 0, total = 0;
      document.querySelectorAll("tr.case-row").forEach(function (row) {
        var ok = (!s || row.getAttribute("data-status") === s) &&
          (!c || list(row, "data-checks").indexOf(c) >= 0) &&
          (!t || (row.getAttribute("data-text") || "").indexOf(t) >= 0);
        row.hidden = !ok;
        total += 1;
        if (ok) { shown += 1; }
      });
      document.querySelectorAll("details.failure").forEach(function (group) {
        var cases = 0;
        group.querySelectorAll("li.failed-case").forEach(function (item) {
          var ok = !t || (item.getAttribute("data-text") || "").indexOf(t) >= 0;
          item.hidden = !ok;
          if (ok) { cases += 1; }
        });
        group.hidden = (c && group.getAttribute("data-check") !== c) || s === "passed" || cases === 0;
      });
      document.getElementById("filter-count").textContent = shown + " of " + total + " cases shown";
    };
    [status, check].forEach(function (select) { select.addEventListener("change", apply); });
    text.addEventListener("input", apply);
    apply();
  }

  // The compare page: show or hide the cases that did not move.
  var unchanged = document.getElementById("show-unchanged");
  if (unchanged) {
    unchanged.addEventListener("change", function () {
      document.querySelectorAll("tr.compare-row[data-moved='no']").forEach(function (row) {
        row.hidden = !unchanged.checked;
      });
    });
  }

  // A run in progress: follow its journal as server-sent events.
  var live = document.getElementById("live");
  if (live && window.EventSource) {
    var counts = {
      total: document.getElementById("count-total"),
      passed: document.getElementById("count-passed"),
      failed: document.getElementById("count-failed"),
      error: document.getElementById("count-error")
    };
    var bump = function (element) { if (element) { element.textContent = String(Number(element.textContent) + 1); } };
    var cell = function (row, cls) {
      var td = document.createElement("td");
      td.className = "num " + cls;
      td.textContent = "0";
      row.appendChild(td);
      return td;
    };
    var caseRow = function (trial) {
      var rows = document.querySelectorAll("#live-cases tr");
      for (var i = 0; i < rows.length; i += 1) {
        if (rows[i].getAttribute("data-case") === trial["case"]) { return rows[i]; }
      }
      var row = document.createElement("tr");
      row.setAttribute("data-case", trial["case"] || "");
      var name = document.createElement("td");
      name.textContent = (trial.name || trial["case"] || "") + " ";
      var file = document.createElement("small");
      file.textContent = trial.file || "";
      name.appendChild(file);
      row.appendChild(name);
      cell(row, "passed");
      cell(row, "failed");
      cell(row, "error");
      document.getElementById("live-cases").appendChild(row);
      return row;
    };
    var source = new EventSource(live.getAttribute("data-events"));
    source.addEventListener("trial", function (event) {
      var trial = JSON.parse(event.data);
      bump(counts.total);
      bump(counts[trial.status]);
      bump(caseRow(trial).querySelector("td." + trial.status));
      if (trial.status === "failed" || trial.status === "error") {
        var item = document.createElement("li");
        var badge = document.createElement("span");
        badge.className = "badge " + trial.status;
        badge.textContent = trial.status;
        var name = document.createElement("b");
        name.textContent = trial.name || "";
        var why = (trial.failed_checks || []).map(function (c) { return c.name + ": " + (c.reason || ""); });
        item.appendChild(badge);
        item.appendChild(document.createTextNode(" "));
        item.appendChild(name);
        item.appendChild(document.createTextNode(" trial " + trial.trial + ": " + (why.join("; ") || trial.error || "")));
        document.getElementById("live-failures").appendChild(item);
      }
      live.setAttribute("data-updated", String(Date.now()));
    });
    source.addEventListener("done", function (event) {
      source.close();
      var state = document.getElementById("live-state");
      state.textContent = "finished";
      state.className = "badge passed";
      var url = JSON.parse(event.data).url;
      var note = document.getElementById("live-note");
      note.textContent = "The run finished: ";
      var link = document.createElement("a");
      link.href = url;
      link.id = "finished-link";
      link.textContent = "open its report";
      note.appendChild(link);
      window.setTimeout(function () { window.location.assign(url); }, 1500);
    });
    source.addEventListener("gone", function () {
      source.close();
      document.getElementById("live-state").textContent = "stopped";
      document.getElementById("live-note").textContent =
        "The run's journal is gone and no results file was written: the run stopped.";
    });
  }
}());
