// The review page's screenshot viewer: zoom (buttons, + / - / 0, Ctrl+wheel), pan (drag, Shift+arrows),
// fullscreen (f) and a side-by-side view of the frames captured around the action with the element's box (c).
// Loaded before review.js, which calls window.reviewViewer when the selected turn changes.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const wrap = $("shot-wrap");
  const stage = $("stage");
  if (!wrap || !stage) return;
  const MIN = 1;
  const MAX = 8;
  const STEP = 1.25;
  const PAN = 60; // px per Shift+arrow press
  const view = { zoom: 1, x: 0, y: 0 };
  const config = JSON.parse($("review-config").textContent);
  const blobUrl = (sha) => config.blobUrl.replace("SHA", sha);
  let current = null; // the selected turn

  // The stage (screenshot + box) is scaled and moved as one, so the box stays on its element at any zoom.
  function clamp() {
    const width = wrap.clientWidth;
    const height = wrap.clientHeight;
    view.x = Math.min(0, Math.max(width - stage.offsetWidth * view.zoom, view.x));
    view.y = Math.min(0, Math.max(height - stage.offsetHeight * view.zoom, view.y));
  }

  function apply() {
    clamp();
    stage.style.transform = "translate(" + view.x + "px, " + view.y + "px) scale(" + view.zoom + ")";
    $("zoom-level").textContent = Math.round(view.zoom * 100) + "%";
    wrap.classList.toggle("zoomed", view.zoom > 1);
    wrap.dataset.zoom = view.zoom.toFixed(3);
    $("zoom-out").disabled = view.zoom <= MIN;
    $("zoom-in").disabled = view.zoom >= MAX;
  }

  // Zoom keeping the point (px, py) of the frame (its centre by default) where it is.
  function zoomTo(zoom, px, py) {
    const next = Math.min(MAX, Math.max(MIN, zoom));
    const x = px === undefined ? wrap.clientWidth / 2 : px;
    const y = py === undefined ? wrap.clientHeight / 2 : py;
    view.x = x - ((x - view.x) * next) / view.zoom;
    view.y = y - ((y - view.y) * next) / view.zoom;
    view.zoom = next;
    apply();
  }

  function reset() {
    view.zoom = 1;
    view.x = 0;
    view.y = 0;
    apply();
  }

  function pan(dx, dy) {
    view.x += dx;
    view.y += dy;
    apply();
  }

  function toggleFullscreen() {
    if (document.fullscreenElement) document.exitFullscreen();
    else if (wrap.requestFullscreen) wrap.requestFullscreen().catch(() => {});
  }

  // Drag to pan when zoomed in (pointer events: mouse, pen and touch alike).
  let drag = null;
  wrap.addEventListener("pointerdown", (event) => {
    if (view.zoom <= 1 || event.button !== 0) return;
    drag = { x: event.clientX - view.x, y: event.clientY - view.y };
    wrap.setPointerCapture(event.pointerId);
    wrap.classList.add("panning");
  });
  wrap.addEventListener("pointermove", (event) => {
    if (!drag) return;
    view.x = event.clientX - drag.x;
    view.y = event.clientY - drag.y;
    apply();
  });
  const endDrag = () => {
    drag = null;
    wrap.classList.remove("panning");
  };
  wrap.addEventListener("pointerup", endDrag);
  wrap.addEventListener("pointercancel", endDrag);
  wrap.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey && view.zoom <= 1) return; // plain wheel scrolls the page
      event.preventDefault();
      const rect = wrap.getBoundingClientRect();
      zoomTo(view.zoom * (event.deltaY < 0 ? STEP : 1 / STEP), event.clientX - rect.left, event.clientY - rect.top);
    },
    { passive: false },
  );
  // In fullscreen the whole screenshot fits the screen (its width is bounded by the screen's height too).
  function fitStage(full) {
    const shot = $("shot");
    const ratio = shot.naturalWidth && shot.naturalHeight ? shot.naturalWidth / shot.naturalHeight : 16 / 9;
    stage.style.width = full ? Math.min(wrap.clientWidth, wrap.clientHeight * ratio) + "px" : "";
  }
  document.addEventListener("fullscreenchange", () => {
    const full = document.fullscreenElement === wrap;
    fitStage(full);
    $("btn-fullscreen").setAttribute("aria-pressed", full ? "true" : "false");
    $("btn-fullscreen").textContent = full ? "Exit fullscreen" : "Fullscreen";
    reset();
    window.dispatchEvent(new Event("resize")); // the box is drawn again at the new size
  });
  $("zoom-in").addEventListener("click", () => zoomTo(view.zoom * STEP));
  $("zoom-out").addEventListener("click", () => zoomTo(view.zoom / STEP));
  $("zoom-fit").addEventListener("click", reset);
  $("btn-fullscreen").addEventListener("click", toggleFullscreen);

  // Side by side: the turn's frames (before the action, the captured one, after), large, each with the element's
  // box where it was at the action (solid on the captured screenshot, dashed on the others: it may have moved).
  let compareTurn = null;
  function figure(turn, sha, label) {
    const item = document.createElement("figure");
    item.className = "compare-item" + (sha === turn.screenshot ? " chosen" : "");
    const frame = document.createElement("div");
    frame.className = "compare-stage";
    const img = document.createElement("img");
    img.src = blobUrl(sha);
    img.alt = label;
    frame.appendChild(img);
    const [width, height] = turn.viewport || [];
    if (turn.box && width > 0 && height > 0) {
      const box = document.createElement("div");
      box.className = "box" + (sha === turn.own_screenshot ? "" : " elsewhere");
      box.style.left = (turn.box.x / width) * 100 + "%";
      box.style.top = (turn.box.y / height) * 100 + "%";
      box.style.width = (turn.box.width / width) * 100 + "%";
      box.style.height = (turn.box.height / height) * 100 + "%";
      frame.appendChild(box);
    }
    const caption = document.createElement("figcaption");
    caption.textContent = label + (sha === turn.screenshot ? " ✓ shown" : "") + (sha === turn.suggested ? " (suggested)" : "");
    item.append(frame, caption);
    return item;
  }

  function when(frame, turn) {
    const at = Number(frame.timestamp);
    const side = at < turn.time ? "before" : at > turn.time ? "after" : "at";
    return side + " the action (" + at.toFixed(2) + " s)";
  }

  function renderCompare(turn) {
    const box = $("compare");
    box.replaceChildren();
    compareTurn = turn;
    const shots = [];
    if (turn.own_screenshot) shots.push({ sha: turn.own_screenshot, time: turn.time, label: "captured at the action" });
    turn.frames.forEach((frame) => shots.push({ sha: frame.screenshot, time: Number(frame.timestamp), label: when(frame, turn) }));
    shots.sort((a, b) => a.time - b.time);
    if (!shots.length) {
      const none = document.createElement("p");
      none.className = "muted";
      none.textContent = "No screenshots were captured for this turn.";
      box.appendChild(none);
    }
    shots.forEach((shot) => box.appendChild(figure(turn, shot.sha, shot.label)));
    box.style.setProperty("--columns", String(Math.max(1, Math.min(shots.length, 3))));
  }

  function toggleCompare() {
    const box = $("compare");
    const show = box.hidden && current !== null;
    box.hidden = !show;
    wrap.hidden = show;
    $("btn-compare").setAttribute("aria-pressed", show ? "true" : "false");
    if (show) renderCompare(current);
  }
  $("btn-compare").addEventListener("click", toggleCompare);

  // Keys: handled here when they are viewer keys, so review.js only asks.
  function key(event) {
    if (event.shiftKey && event.key.startsWith("Arrow")) {
      const moves = { ArrowLeft: [PAN, 0], ArrowRight: [-PAN, 0], ArrowUp: [0, PAN], ArrowDown: [0, -PAN] };
      pan(...moves[event.key]);
      return true;
    }
    const actions = {
      "+": () => zoomTo(view.zoom * STEP),
      "=": () => zoomTo(view.zoom * STEP),
      "-": () => zoomTo(view.zoom / STEP),
      0: reset,
      f: toggleFullscreen,
      c: toggleCompare,
    };
    if (!actions[event.key]) return false;
    actions[event.key]();
    return true;
  }

  window.reviewViewer = {
    key: key,
    // A new turn: back to the whole screenshot; the side-by-side view follows the selection.
    show: (turn) => {
      current = turn;
      reset();
      if (!$("compare").hidden && compareTurn !== turn) renderCompare(turn);
    },
  };
  apply();
})();
