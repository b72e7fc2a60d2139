// The review page: selection and keyboard navigation, the screenshot viewer with the acted element's box,
// frames picker, sandboxed page HTML, and curation writes (POST JSON to the edit endpoint, then reload).
// viewer.js (zoom, pan, side by side) is loaded before it, polls.js (others' changes, the worker's progress) after.
(function () {
  "use strict";
  const turns = JSON.parse(document.getElementById("turns-data").textContent);
  const config = JSON.parse(document.getElementById("review-config").textContent);
  const timeline = document.getElementById("timeline");
  const items = Array.from(timeline.querySelectorAll("li.turn"));
  const $ = (id) => document.getElementById(id);
  let selected = 0;

  const blobUrl = (sha) => config.blobUrl.replace("SHA", sha);
  const pageUrl = (turnId) => config.pageUrl.replace(/\/0\/page$/, "/" + turnId + "/page");

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // Reload the page at the latest revision, keeping the reviewer's place (the selected turn, via the anchor).
  function reloadAt(turnId) {
    const id = turnId || (turns[selected] && turns[selected].id);
    history.replaceState(null, "", id ? "#t" + id : location.pathname + location.search);
    location.reload();
  }

  // A conflict must not cost the reviewer what they typed: "reload latest" keeps the unsent text and comment for
  // this tab (sessionStorage) and puts them back after the reload.
  const draftKey = "review-draft:" + config.name;

  function saveDraft() {
    const turn = turns[selected];
    if (!turn) return;
    const text = $("text-input");
    const draft = {
      turn: turn.id,
      text: text && turn.text_editable && text.value !== (turn.text || "") ? text.value : null,
      comment: $("comment-text") ? $("comment-text").value : "",
    };
    if (draft.text !== null || draft.comment) sessionStorage.setItem(draftKey, JSON.stringify(draft));
  }

  function restoreDraft() {
    const saved = sessionStorage.getItem(draftKey);
    sessionStorage.removeItem(draftKey);
    if (!saved) return;
    const draft = JSON.parse(saved);
    const turn = turns[selected];
    if (draft.text !== null && draft.turn === turn.id && $("text-input")) $("text-input").value = draft.text;
    if (draft.comment && $("comment-text")) $("comment-text").value = draft.comment;
    showMessage("This is the latest version. What you had typed is still in the form: check it, then save again.", "info");
  }

  function messageButton(id, label, onClick) {
    const button = document.createElement("button");
    button.type = "button";
    button.id = id;
    button.textContent = label;
    button.addEventListener("click", onClick);
    return button;
  }

  // The later edit that blocks an undo: highlighted in the history, its own undo button focused.
  function showBlockingEdit(editId) {
    const entry = document.querySelector('#history li[data-edit="' + editId + '"]');
    if (!entry) return null;
    entry.classList.add("blocking");
    entry.scrollIntoView({ block: "nearest" });
    return entry.querySelector("button.undo") || entry;
  }

  function showMessage(text, kind, blockedBy) {
    const box = $("message");
    box.hidden = false;
    box.className = "message " + kind;
    box.textContent = text.charAt(0).toUpperCase() + text.slice(1) + " ";
    document.querySelectorAll("#history li.blocking").forEach((li) => li.classList.remove("blocking"));
    let focus = null;
    if (kind === "conflict" && blockedBy) {
      const target = showBlockingEdit(blockedBy);
      if (target) {
        box.appendChild(messageButton("btn-show-edit", "Show edit #" + blockedBy, () => showBlockingEdit(blockedBy).focus()));
        focus = target;
      }
    } else if (kind === "conflict" || kind === "stale") {
      const label = "Reload latest" + (turns.length ? " (keeps turn " + turns[selected].index + ")" : "");
      const button = box.appendChild(messageButton("btn-reload", label, () => {
        saveDraft();
        reloadAt();
      }));
      if (kind === "conflict") focus = button; // a notice found by polling never takes the focus
    }
    box.appendChild(messageButton("btn-dismiss", "Dismiss", () => {
      box.hidden = true;
      if (items.length) items[selected].focus({ preventScroll: true });
    }));
    if (focus && focus.tagName === "BUTTON") focus.focus({ preventScroll: true });
  }

  // One write at a time: while a request is in flight every button is disabled and keys do nothing, so a
  // double press cannot send the same change twice (the second would be a 409 anyway).
  let busy = false;
  function setBusy(value) {
    busy = value;
    document.body.dataset.busy = value ? "true" : "false";
    $("saving").textContent = value ? "Saving…" : "";
    document.querySelectorAll("#review button").forEach((button) => {
      if (value) {
        button.dataset.wasDisabled = button.disabled ? "true" : "false";
        button.disabled = true;
      } else if (button.dataset.wasDisabled === "false") button.disabled = false;
    });
  }

  // Every write sends the revision this page was rendered at; a stale one is answered 409 with who changed what.
  async function send(op, body, keepId, thenNext) {
    if (busy) return;
    setBusy(true);
    let response;
    try {
      response = await fetch(config.editUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(Object.assign({ op: op, revision: config.revision }, body || {})),
      });
    } catch (error) {
      setBusy(false);
      showMessage("Could not reach the server; nothing was saved (" + error.message + ").", "error");
      return;
    }
    const data = await response.json().catch(() => ({ detail: response.status + " " + response.statusText }));
    if (!response.ok) {
      setBusy(false);
      const blockedBy = ((data.errors || [])[0] || {}).blocked_by;
      const detail = data.detail || "The change was refused (" + response.status + ").";
      showMessage(detail, response.status === 409 ? "conflict" : "error", blockedBy);
      return;
    }
    if (thenNext && $("next-form")) $("next-form").requestSubmit();
    else reloadAt(keepId);
  }

  // The recorded bbox belongs to the moment of the action (the turn's own screenshot). On another frame the
  // element may have moved: the box is then dashed and the legend says so.
  function drawBox(turn) {
    const box = $("box");
    const shot = $("shot");
    const legend = $("box-legend");
    box.hidden = true;
    legend.hidden = true;
    if (!turn.box || !shot.naturalWidth || shot.hidden) return;
    const otherFrame = shown !== turn.own_screenshot;
    box.classList.toggle("elsewhere", otherFrame);
    legend.textContent = otherFrame
      ? "Dashed box: where the element was at the moment of the action (the captured screenshot); this frame was taken at another time, so the element may have moved."
      : "Box: the element acted on, as recorded at the moment of the action.";
    legend.classList.toggle("elsewhere", otherFrame);
    legend.hidden = false;
    const viewportWidth = turn.viewport[0] || shot.naturalWidth;
    const scale = shot.clientWidth / viewportWidth;
    box.style.left = turn.box.x * scale + "px";
    box.style.top = turn.box.y * scale + "px";
    box.style.width = turn.box.width * scale + "px";
    box.style.height = turn.box.height * scale + "px";
    box.hidden = false;
  }

  // The screenshot's box gets the recorded viewport's shape before the image arrives (the browser derives the
  // aspect ratio from width/height), so the frames and buttons below it do not jump when it loads.
  function reserveSpace(shot, viewport) {
    const [width, height] = viewport || [];
    if (width > 0 && height > 0) {
      shot.width = width;
      shot.height = height;
    } else {
      shot.removeAttribute("width");
      shot.removeAttribute("height");
    }
  }

  // The sha the viewer shows: the turn's chosen screenshot, or a frame previewed (hover / focus) before choosing.
  let shown = "";
  function showShot(turn, sha, label) {
    const shot = $("shot");
    shown = sha;
    $("box").hidden = true;
    $("box-legend").hidden = true;
    shot.hidden = !sha;
    reserveSpace(shot, turn.viewport);
    if (sha) shot.src = blobUrl(sha);
    else shot.removeAttribute("src");
    const note = $("preview-note");
    note.hidden = !sha || sha === turn.screenshot;
    note.textContent = "Previewing “" + label + "” (not chosen)" + (config.editable ? ": click it to use it for this turn." : ".");
    if (sha && shot.complete) drawBox(turn);
  }

  function frameButton(turn, sha, label) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "frame" + (sha === turn.screenshot ? " chosen" : "") + (sha === turn.suggested ? " suggested" : "");
    button.dataset.sha = sha;
    const img = document.createElement("img");
    img.src = blobUrl(sha); // only the selected turn's few frames: the full image, scaled by the browser
    img.alt = label;
    img.width = 120;
    img.height = 68;
    const caption = document.createElement("span");
    caption.textContent = label + (sha === turn.suggested ? " (suggested)" : "") + (sha === turn.screenshot ? " ✓" : "");
    button.append(img, caption);
    button.setAttribute("aria-pressed", sha === turn.screenshot ? "true" : "false");
    if (config.editable && sha !== turn.screenshot) {
      button.title = "Use this screenshot for the turn";
      button.addEventListener("click", () => send("choose_screenshot", { turn: turn.id, screenshot: sha }));
    }
    const back = () => showShot(turn, turn.screenshot);
    button.addEventListener("mouseenter", () => showShot(turn, sha, label));
    button.addEventListener("focus", () => showShot(turn, sha, label));
    button.addEventListener("mouseleave", back);
    button.addEventListener("blur", back);
    return button;
  }

  function showFrames(turn) {
    const frames = $("frames");
    frames.replaceChildren();
    if (!turn.frames.length) {
      if (turn.type === "browser" && turn.own_screenshot) {
        const none = document.createElement("p");
        none.className = "muted";
        none.id = "no-frames";
        none.textContent = "No other frames were captured around this action.";
        frames.appendChild(none);
      }
      return;
    }
    if (turn.own_screenshot) frames.appendChild(frameButton(turn, turn.own_screenshot, "captured"));
    turn.frames.forEach((frame) =>
      frames.appendChild(frameButton(turn, frame.screenshot, (frame.label || "frame") + " @" + Number(frame.timestamp).toFixed(2) + "s")),
    );
  }

  function showComments(turn) {
    const box = $("turn-comments");
    box.replaceChildren();
    turn.comments.forEach((comment) => {
      const p = document.createElement("p");
      p.className = "comment";
      p.textContent = comment.author + ": " + comment.text;
      box.appendChild(p);
    });
  }

  function updateTools(turn) {
    $("selected-label").textContent = "Turn " + turn.index + " · " + (turn.intent || turn.speaker) + (turn.label ? " “" + turn.label + "”" : "");
    if ($("btn-delete")) $("btn-delete").textContent = turn.deleted ? "Restore" : "Delete";
    if ($("btn-valid")) $("btn-valid").textContent = turn.valid ? "Mark invalid" : "Mark valid";
    $("btn-page").disabled = busy || !turn.has_page;
    $("btn-page").title = turn.has_page ? "p" : "no page HTML was recorded for this turn";
    if ($("btn-target")) $("btn-target").hidden = !turn.retargetable || turn.deleted;
    if (window.reviewTarget) window.reviewTarget.close(false);
    const form = $("text-form");
    if (form) {
      form.hidden = !turn.text_editable;
      $("text-input").value = turn.text || "";
    }
  }

  function select(index, focus) {
    if (index < 0 || index >= turns.length) return;
    items[selected].classList.remove("selected");
    items[selected].tabIndex = -1;
    items[selected].removeAttribute("aria-current");
    selected = index;
    const turn = turns[index];
    const item = items[index];
    item.classList.add("selected");
    item.tabIndex = 0; // the timeline is one Tab stop: its selected turn (roving tabindex)
    item.setAttribute("aria-current", "true");
    if (focus !== false) item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
    showPage(false);
    $("no-shot").hidden = !!turn.screenshot;
    $("no-shot").textContent =
      turn.type === "chat" ? "A chat turn: no screenshot to show." : "This turn has no screenshot.";
    showShot(turn, turn.screenshot);
    if (window.reviewViewer) window.reviewViewer.show(turn);
    showFrames(turn);
    showComments(turn);
    updateTools(turn);
    document.querySelectorAll("#turn-problems .turn-problems").forEach((block) => {
      block.hidden = block.dataset.for !== String(turn.id);
    });
  }

  function showPage(show) {
    const frame = $("page-frame");
    const button = $("btn-page");
    frame.hidden = !show;
    button.setAttribute("aria-pressed", show ? "true" : "false");
    button.textContent = show ? "Hide page HTML" : "Page HTML";
    if (show) {
      frame.src = pageUrl(turns[selected].id);
      frame.scrollIntoView({ block: "nearest" });
    }
  }

  function togglePage() {
    showPage($("page-frame").hidden && turns[selected].has_page);
  }

  function move(delta) {
    const target = selected + delta;
    if (target < 0 || target >= turns.length) return;
    send("move", { turn: turns[selected].id, to_index: target }, turns[selected].id);
  }

  const toggleDeleted = () =>
    send(turns[selected].deleted ? "restore" : "delete", { turn: turns[selected].id });
  const toggleValid = () => send("set_validity", { turn: turns[selected].id, valid: !turns[selected].valid });

  function onKey(event) {
    if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (busy) return;
    if (window.reviewViewer && window.reviewViewer.key(event)) {
      event.preventDefault();
      return;
    }
    const editable = config.editable;
    const actions = {
      j: () => select(selected + 1),
      ArrowDown: () => select(selected + 1),
      k: () => select(selected - 1),
      ArrowUp: () => select(selected - 1),
      p: togglePage,
      J: () => editable && move(1),
      K: () => editable && move(-1),
      d: () => editable && toggleDeleted(),
      v: () => editable && toggleValid(),
      e: () => editable && turns[selected].text_editable && $("text-input").focus(),
      t: () => editable && window.reviewTarget && window.reviewTarget.open(),
      a: () => {
        const turn = turns[selected];
        if (editable && turn.suggested && turn.suggested !== turn.screenshot)
          send("choose_screenshot", { turn: turn.id, screenshot: turn.suggested });
      },
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  // Drag and drop: drop a turn on another to take its place.
  let dragged = null;
  function setUpDrag() {
    items.forEach((item) => {
      item.addEventListener("dragstart", (event) => {
        dragged = Number(item.dataset.index);
        event.dataTransfer.effectAllowed = "move";
        event.dataTransfer.setData("text/plain", item.dataset.id);
      });
      item.addEventListener("dragover", (event) => {
        event.preventDefault();
        item.classList.add("drop-target");
      });
      item.addEventListener("dragleave", () => item.classList.remove("drop-target"));
      item.addEventListener("drop", (event) => {
        event.preventDefault();
        item.classList.remove("drop-target");
        const from = dragged;
        const to = Number(item.dataset.index);
        if (from === null || from === to) return;
        send("move", { turn: turns[from].id, to_index: to }, turns[from].id);
      });
    });
  }

  function metadataFields(form) {
    const fields = {};
    ["task_description", "category", "subcategory", "region"].forEach((name) => (fields[name] = form.elements[name].value));
    fields.websites = form.elements.websites.value.split(",").map((s) => s.trim()).filter(Boolean);
    fields.instructor_sees_screen = form.elements.instructor_sees_screen.checked;
    return fields;
  }

  function bind(id, event, handler) {
    const element = $(id);
    if (element) element.addEventListener(event, handler);
  }

  // Decisions ask first, then open the next demo waiting for review ("Review next").
  const DECISIONS = {
    validate: "Validate this demonstration? It goes to the exports, and the next demo to review opens.",
    reject: "Reject this demonstration? It is left out of the exports, and the next demo to review opens.",
    return: "Return this demonstration to its annotator (with the comment, if any)? The next demo to review opens.",
  };

  function setUp() {
    items.forEach((item, index) => item.addEventListener("click", () => select(index)));
    document.addEventListener("keydown", onKey);
    $("shot").addEventListener("load", () => drawBox(turns[selected]));
    window.addEventListener("resize", () => drawBox(turns[selected]));
    bind("btn-delete", "click", toggleDeleted);
    bind("btn-valid", "click", toggleValid);
    bind("btn-up", "click", () => move(-1));
    bind("btn-down", "click", () => move(1));
    bind("btn-page", "click", togglePage);
    bind("btn-accept-suggestions", "click", () => send("accept_suggestions"));
    bind("btn-unsure", "click", (e) => send("set_unsure", { unsure: e.target.dataset.unsure === "true" }));
    bind("text-input", "keydown", (e) => {
      if (e.key === "Escape") items[selected].focus({ preventScroll: true }); // back to the timeline keys
    });
    bind("text-form", "submit", (e) => {
      e.preventDefault();
      send("edit_text", { turn: turns[selected].id, text: $("text-input").value });
    });
    bind("metadata-form", "submit", (e) => {
      e.preventDefault();
      send("edit_metadata", { fields: metadataFields(e.target) });
    });
    bind("verification-form", "submit", (e) => {
      e.preventDefault();
      const form = e.target;
      send("edit_metadata", {
        fields: { refined_task: form.elements.refined_task.value.trim(), discarded: form.elements.discarded.checked },
      });
    });
    bind("comment-form", "submit", (e) => {
      e.preventDefault();
      const pin = $("comment-pin").checked && turns[selected];
      send("comment", Object.assign({ text: $("comment-text").value }, pin ? { turn: turns[selected].id } : {}));
    });
    document.querySelectorAll("button.transition").forEach((button) =>
      button.addEventListener("click", () => {
        const action = button.dataset.action;
        const decision = DECISIONS[action];
        if (decision && !window.confirm(decision)) return;
        const comment = $("workflow-comment");
        send("transition", { action: action, comment: comment ? comment.value : "" }, null, !!decision);
      }),
    );
    document.querySelectorAll("button.undo").forEach((button) =>
      button.addEventListener("click", () => send("undo", { edit: Number(button.dataset.edit) })),
    );
    document.querySelectorAll("#quality a[data-turn]").forEach((link) =>
      link.addEventListener("click", (e) => {
        e.preventDefault();
        const index = turns.findIndex((t) => t.id === Number(link.dataset.turn));
        if (index >= 0) select(index);
      }),
    );
    if (config.editable) setUpDrag();
  }

  // The page's polls (polls.js, loaded after this script) show their news through the same message box.
  // target.js (the target picker) reads the selected turn and writes through ``send``.
  window.reviewPage = {
    busy: () => busy,
    showMessage: showMessage,
    send: send,
    selectedTurn: () => turns[selected],
    focusTimeline: () => items[selected] && items[selected].focus({ preventScroll: true }),
  };

  if (!turns.length) {
    document.body.dataset.reviewReady = "true";
    return;
  }
  setUp();
  const fromHash = turns.findIndex((t) => "#t" + t.id === location.hash);
  select(fromHash >= 0 ? fromHash : 0, true);
  restoreDraft();
  document.body.dataset.reviewReady = "true";
})();
