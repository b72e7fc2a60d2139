// The keyboard shortcuts dialog: "?" opens the page's <dialog id="shortcuts-dialog"> (its list of keys), Esc or its
// Close button closes it. While it is open, the page's own keys are held back (only the dialog gets them).
(function () {
  "use strict";
  function typing(target) {
    return target && target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  function setUp() {
    const dialog = document.getElementById("shortcuts-dialog");
    if (!dialog || typeof dialog.showModal !== "function") return;
    const close = dialog.querySelector("[data-close]");
    if (close) close.addEventListener("click", () => dialog.close());
    window.addEventListener("keydown", (event) => {
      if (dialog.open) {
        if (event.key !== "Escape" && event.key !== "Tab") event.stopPropagation();
        return;
      }
      if (event.key !== "?" || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      event.preventDefault();
      event.stopPropagation();
      dialog.showModal();
    }, true);
    document.querySelectorAll("[data-open-shortcuts]").forEach((button) => {
      button.addEventListener("click", () => dialog.showModal());
    });
    dialog.dataset.ready = "true";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
