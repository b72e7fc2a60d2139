// The assignment page around a task frame: countdown to expiry, Submit & next, and learning of the submission.
// The frame is sandboxed (opaque origin): it can only post a message, which is a hint; the state always comes
// from the server (GET state), so a template's script cannot make this page do anything by sending messages.
(function () {
  "use strict";
  const root = document.getElementById("assignment");
  if (!root) return;
  if (root.dataset.status !== "active") {
    root.dataset.ready = "true";  // an ended assignment: nothing to follow
    return;
  }
  const frame = document.getElementById("task-frame");
  const countdown = document.getElementById("countdown");
  const autoAccept = document.getElementById("auto-accept");
  const nextForm = document.getElementById("next-form");
  const expiresAt = Date.parse(root.dataset.expiresAt);
  const POLL_MS = 5000;
  let checking = false;
  let done = false;

  function csrfToken() {
    const input = nextForm.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function format(seconds) {
    const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    const mm = String(m).padStart(2, "0"), ss = String(s).padStart(2, "0");
    return h > 0 ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
  }

  function tick() {
    const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
    countdown.textContent = format(left);
    if (left <= 60) countdown.classList.add("urgent");
    if (left === 0) checkState();
  }

  function leave(state) {
    done = true;
    root.dataset.status = state.status;
    // batch_open is false when the worker can take no more of its tasks (closed, or this submission blocked
    // them): the submitted work's page then confirms the submission and says why
    if (state.status === "submitted" && autoAccept && autoAccept.checked && state.batch_open) {
      // Submit & next: accept the batch's next task; its page confirms this submission
      const submitted = document.createElement("input");
      submitted.type = "hidden";
      submitted.name = "submitted";
      submitted.value = root.dataset.id;
      nextForm.appendChild(submitted);
      nextForm.submit();
    } else if (state.status === "submitted") {
      window.location.assign(root.dataset.pageUrl + "?submitted=1");  // the read-only view, with a confirmation
    } else {
      window.location.assign(root.dataset.pageUrl);  // the expired or returned view
    }
  }

  async function checkState() {
    if (checking || done) return;
    checking = true;
    try {
      const response = await fetch(root.dataset.stateUrl, { credentials: "same-origin", cache: "no-store" });
      if (response.ok) {
        const state = await response.json();
        if (state.status !== "active") leave(state);
      }
    } catch (error) {
      console.warn("state check failed", error);
    } finally {
      checking = false;
    }
  }

  window.addEventListener("message", (event) => {
    if (frame && event.source === frame.contentWindow && event.data && typeof event.data.type === "string"
        && event.data.type.startsWith("form-task.") && event.data.type !== "form-task.height") {
      checkState();
    }
  });

  if (autoAccept) {
    autoAccept.addEventListener("change", () => {
      const body = new URLSearchParams({ on: autoAccept.checked ? "1" : "0" });
      fetch(autoAccept.dataset.url, {
        method: "POST", body, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
      }).catch((error) => console.warn("could not save Submit & next", error));
    });
  }

  tick();
  setInterval(tick, 1000);
  setInterval(checkState, POLL_MS);
  root.dataset.ready = "true";
})();
