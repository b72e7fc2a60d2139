// The proposal review queue's keys: j/k move, a accepts, e edits the text (Ctrl+Enter accepts it, Esc leaves it),
// r rejects. The forms work without this script; it only adds the keys.
(function () {
  "use strict";
  let items = [];
  let selected = 0;

  function select(index) {
    if (!items.length) return;
    selected = Math.max(0, Math.min(items.length - 1, index));
    items.forEach((item, i) => item.classList.toggle("selected", i === selected));
    items[selected].focus();
    items[selected].scrollIntoView({ block: "nearest" });
  }

  function decide(decision) {
    const form = items[selected] && items[selected].querySelector("form");
    if (form) form.querySelector(`button[value="${decision}"]`).click();
  }

  function onKey(event) {
    const inText = event.target.tagName === "TEXTAREA";
    if (inText) {
      if (event.key === "Escape") items[selected].focus();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) decide("accept");
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const actions = {
      j: () => select(selected + 1),
      k: () => select(selected - 1),
      a: () => decide("accept"),
      r: () => decide("reject"),
      e: () => items[selected] && items[selected].querySelector("textarea").focus(),
    };
    if (actions[event.key]) {
      event.preventDefault();
      actions[event.key]();
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    items = Array.from(document.querySelectorAll("#proposal-queue li.proposal"));
    items.forEach((item, index) => item.addEventListener("click", () => select(index)));
    document.addEventListener("keydown", onKey);
    select(0);
  });
})();
