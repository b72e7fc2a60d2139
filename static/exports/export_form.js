// The export form shows only the filters of the chosen format: each fieldset names its formats in data-formats.
// Without scripts every fieldset shows, each legend naming its formats; the server sends only the chosen format's.
(function () {
  "use strict";
  function show(form) {
    var format = form.querySelector("[name=format]").value;
    form.querySelectorAll("[data-formats]").forEach(function (fieldset) {
      fieldset.hidden = fieldset.dataset.formats.split(" ").indexOf(format) < 0;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("export-form");
    if (!form) return;
    form.querySelector("[name=format]").addEventListener("change", function () { show(form); });
    show(form);
  });
})();
