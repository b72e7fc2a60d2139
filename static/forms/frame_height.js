// Sizes a task frame to its content, so the page has one scrollbar (MTurk's worker page has one). The frame is
// sandboxed (an opaque origin, "null"): its page posts {type: "form-task.height", height}. Only a message from
// this frame's own window with the opaque origin is taken, and the height is bounded: a template's script can at
// most make its own frame taller or shorter.
(function () {
  "use strict";
  const frame = document.getElementById("task-frame");
  if (!frame) return;
  const MIN = 120, MAX = 30000;
  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== "null") return;
    const data = event.data;
    if (!data || data.type !== "form-task.height" || typeof data.height !== "number" || !isFinite(data.height)) return;
    const height = Math.min(MAX, Math.max(MIN, Math.ceil(data.height)));
    frame.style.height = height + "px";
    frame.dataset.sized = "true";
  });
})();
