// The review page: "select all" ticks every row shown; a row ticked by hand unticks it when not all are.
(function () {
  "use strict";
  const all = document.getElementById("select-all");
  if (!all) return;
  const rows = () => Array.from(document.querySelectorAll("input.row-select"));
  all.addEventListener("change", () => rows().forEach((box) => { box.checked = all.checked; }));
  rows().forEach((box) => box.addEventListener("change", () => { all.checked = rows().every((b) => b.checked); }));
  document.body.dataset.reviewReady = "true";
})();
