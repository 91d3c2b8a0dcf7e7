(function () {
  "use strict";
  var tag = document.getElementById("filter-tag");
  var status = document.getElementById("filter-status");
  var model = document.getElementById("filter-model");
  var count = document.getElementById("filter-count");

  function list(element, name) {
    try {
      return JSON.parse(element.getAttribute(name) || "[]");
    } catch (e) {
      return [];
    }
  }

  function apply() {
    var t = tag.value, s = status.value, m = model.value, shown = 0, total = 0;
    document.querySelectorAll("details.trial").forEach(function (trial) {
      var ok = (!t || list(trial, "data-tags").indexOf(t) >= 0) &&
        (!s || trial.getAttribute("data-status") === s) &&
        (!m || trial.getAttribute("data-model") === m);
      trial.hidden = !ok;
      total += 1;
      if (ok) { shown += 1; }
    });
    document.querySelectorAll("section.case").forEach(function (section) {
      section.hidden = !section.querySelector("details.trial:not([hidden])");
    });
    document.querySelectorAll("tr.case-row").forEach(function (row) {
      row.hidden = !((!t || list(row, "data-tags").indexOf(t) >= 0) &&
        (!s || list(row, "data-statuses").indexOf(s) >= 0));
    });
    count.textContent = shown + " of " + total + " trials shown";
  }

  [tag, status, model].forEach(function (select) { select.addEventListener("change", apply); });
  document.getElementById("open-failed").addEventListener("click", function () {
    document.querySelectorAll("details.trial").forEach(function (trial) {
      var bad = trial.getAttribute("data-status") !== "passed";
      if (bad && !trial.hidden) { trial.open = true; }
    });
  });
  document.getElementById("close-all").addEventListener("click", function () {
    document.querySelectorAll("details.trial[open]").forEach(function (trial) { trial.open = false; });
  });

  function openFromHash() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
  apply();
}());
