/*
 * The content script (every frame, document_start): captures the user's actions as WebLINX browser turns.
 * Its one job is capture: screenshots, storage, upload, tabs and loads are the service worker's.
 *
 * Loaded after lib/constants.js, lib/privacy.js, lib/serialize.js, lib/dom.js and lib/coalesce.js (manifest
 * order); classic script.
 *
 * Each action sends ONE message, synchronously from the event handler (the service worker then holds the
 * user gesture and can call captureVisibleTab without its quota):
 *   {target: SW, type: CAPTURE, turn, page: {html, bboxes}, privateRects, regions, viewport, mouse, frame}
 *   turn = {client_id, type: "browser", intent, arguments: {metadata, properties?, element?, …}, eventTime}
 * What is captured (only while recording and not paused, trusted events only):
 *   click      at pointerdown (primary or middle button), so page, boxes and screenshot show the state BEFORE
 *              the click's effect (a link's navigation cannot overtake it); keyboard activations (Enter/Space
 *              on a focused link or button) at their click event. Task mode: Alt+click is a "fake click":
 *              recorded (properties.fakeClick = true) but not executed.
 *   hover      after the pointer rests C.TIMING.HOVER_DWELL_MS on one element (page captured at that moment).
 *   textInput  one per field and typing session, with the final text (see lib/coalesce.js).
 *   change     select → the selected option's value (several joined by ","); checkbox → "true"/"false" (its
 *              new checked state); radio → its value attribute (the chosen option of the group); range,
 *              date, colour … → the input's value; file → the chosen file names joined by ", ".
 *   submit     the form's submit event (element = the FORM).
 *   scroll     debounced; scrollX/scrollY of the captured window; an element's scroll adds
 *              properties {target: "element", uid, scrollLeft, scrollTop}. Scrolls inside text fields ignored.
 *   copy       selected = the selected text; paste: pasted = the clipboard's text/plain.
 * Private fields (lib/privacy.js): values, copied and pasted text are masked ("********" or "").
 * Step mode (state.step, lib/step.js): none of the above; a left click selects its element instead (all its
 *   pointer/mouse/click events are stopped in the capture phase, the page never sees them) and sends
 *   {type: STEP_SELECT, turn, page, …, options?, label, privacy}: the page before the step, and the element's
 *   privacy level (the worker masks the value a step gives a private element). The worker then asks
 *   (STEP_EXEC) for the element's part of the operation and performs the rest with CDP input, let through.
 * Private pixels: `regions` is this frame's private-regions report (C.MSG.REGIONS, taken with the action); the worker
 * asks every other frame for theirs and masks the screenshot with all of them (lib/regions.js).
 *
 * Frames: the page captured is the topmost same-origin document (a same-origin iframe's actions are
 * captured with the whole page and top-level boxes). A cross-origin frame captures its own document; its
 * boxes and mouse coordinates are translated to the top viewport by the offset its parent frame's content
 * script posts to it (C.MSG.FRAME_OFFSET, window.postMessage), and its page is only the frame's document
 * (frame.crossOrigin = true in the message). metadata.url is the captured document's URL (the tab's URL
 * except in a cross-origin frame); metadata.frameUrl is added in any iframe.
 * Before an action, pending textInput/scroll turns of this frame AND of the other same-origin frames are
 * flushed (same-origin frames' content scripts share this isolated world). A cross-origin frame cannot be
 * reached synchronously: text typed in one frame and ended by a click in a cross-origin other frame is sent
 * right after that click (by the focusout that follows it).
 * Only open shadow roots are captured (chrome.dom.openOrClosedShadowRoot per element costs ≈5 ms/2,000).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks;
  if (!W || !W.C || !W.dom || !W.coalesce || W.capture) return; // loaded twice (manifest + scripting)
  const C = W.C;
  const dom = W.dom;
  const chromeApi = root.chrome;
  const FRAME_OFFSET = C.MSG.FRAME_OFFSET;
  const FRAME_ID = C.MSG.FRAME_ID;
  const KEY_CLICK_WINDOW_MS = 1000; // a click this soon after Enter/Space on the same element is its activation
  const OFFSET_REQUEST_INTERVAL_MS = 250;
  const OFFSET_PUSH_DELAY_MS = 100;

  const settings = Object.assign({ requireTrusted: true }, W.captureSettings); // node tests dispatch untrusted events
  const state = { recording: false, paused: false, mode: "chat", privateSelectors: [] };
  const listeners = [];
  let alive = true;
  const captureWindow = findCaptureWindow();
  let pointer = null; // last pointer position: {x, y} in this frame's viewport
  let lastKey = null; // {el, at}: the last Enter/Space keydown
  let swallowing = false; // the rest of a fake click's events
  let stepSelected = null; // step mode: the element the annotator selected
  let stepPass = false; // step mode: a step is being performed; its input reaches the page
  let highlight = null;
  let pastedInto = null;
  let received = null; // {x, y, viewportWidth, viewportHeight} from the parent, in a cross-origin frame
  let lastOffsetRequest = 0;
  let lastEventTime = 0;
  let tabId = null; // from the worker's HELLO reply; saved with captures left behind by a page that goes away
  let tabUrl = null; // the tab's URL at HELLO (the top page's, also in a cross-origin frame); saved with them too
  let frameId = null; // this frame's chrome frameId (HELLO reply): told to the parent frame (C.MSG.FRAME_ID)
  const childFrameIds = new Map(); // child frame window → its frameId, as the child told (names our iframe boxes)
  // Captures the worker has not answered yet (it answers once the turn is stored), by client_id: if the page
  // goes away first (a link click while the worker was starting), they are saved for the worker to pick up.
  const unanswered = new Map();
  const RESEND_DELAYS_MS = [250, 500, 1000, 2000, 4000];
  let pushTimer = null;
  const hookedRoots = new WeakSet();

  const co = W.coalesce.createCoalescer({
    text: (pending) => emitTextInput(pending),
    scroll: (key) => emitScroll(key),
    hover: (el) => emitHover(el),
  });

  // --- State ---------------------------------------------------------------------------------------------

  function active() {
    return alive && state.recording && !state.paused && !state.step;
  }

  /** Step mode: the annotator's clicks select elements instead of acting (except while a step is performed). */
  function stepping() {
    return alive && state.recording && !state.paused && state.step && !stepPass;
  }

  function applyState(next) {
    if (!next || typeof next !== "object") return;
    const was = active();
    state.recording = !!next.recording;
    state.paused = !!next.paused;
    state.mode = next.mode === "task" ? "task" : "chat";
    state.step = !!next.step;
    if (!state.step || !state.recording) unhighlight();
    const selectors = next.privateSelectors || (next.config && next.config.privateSelectors) || [];
    state.privateSelectors = Array.isArray(selectors) ? selectors : String(selectors).split(/\n/);
    // What was typed while recording is still sent; the service worker decides whether to keep it.
    if (was && !active()) co.stop();
  }

  function onRuntimeMessage(message) {
    if (!message || message.target !== C.TARGET.CONTENT) return;
    switch (message.type) {
      case C.MSG.STATE:
        applyState(message.state);
        break;
      case C.MSG.STEP_EXEC:
        return stepExec(message);
      case C.MSG.STEP_DONE:
        stepPass = false;
        if (message.clear) unhighlight();
        return { ok: true };
      case C.MSG.REGIONS:
        return regionsReport(message.privateSelectors, null, Boolean(message.fields));
      default:
        console.warn("[webtasks] content script: unknown message type", message.type);
    }
  }

  function hello() {
    const message = { target: C.TARGET.SW, type: C.MSG.HELLO, url: location.href, isTop: window === window.top };
    sendToWorker(message, (reply) => {
      if (reply && Number.isInteger(reply.tabId)) tabId = reply.tabId;
      if (reply && typeof reply.tabUrl === "string") tabUrl = reply.tabUrl;
      if (reply && Number.isInteger(reply.frameId)) {
        frameId = reply.frameId;
        tellParentFrameId();
      }
      askChildFrameIds();
      if (reply && reply.state) applyState(reply.state);
    });
  }

  function sendToWorker(message, onReply) {
    if (!alive) return;
    try {
      const pending = chromeApi.runtime.sendMessage(message);
      if (pending && typeof pending.then === "function") pending.then(onReply || null, onSendError);
    } catch (err) {
      onSendError(err);
    }
  }

  function onSendError(err) {
    const text = String((err && err.message) || err);
    if (/context invalidated/i.test(text)) shutdown();
    else console.warn("[webtasks] message to the service worker failed:", text);
  }

  /** The extension was reloaded or removed: this script can no longer reach it; stop listening. */
  function shutdown() {
    alive = false;
    co.text.discard();
    co.scroll.cancel();
    co.hover.leave();
    for (const [target, type, fn, options] of listeners) target.removeEventListener(type, fn, options);
  }

  // --- Frames and coordinates ----------------------------------------------------------------------------

  /** The topmost window of this frame's chain that this script can read (same origin): its page is captured. */
  function findCaptureWindow() {
    let w = window;
    while (w !== w.parent) {
      try {
        if (!w.parent.document) break;
        w = w.parent;
      } catch (err) {
        break; // cross-origin parent
      }
    }
    return w;
  }

  function isCrossOriginFrame() {
    return captureWindow !== window.top;
  }

  /** Offset of the captured window's viewport in the top viewport (0,0 unless in a cross-origin frame). */
  function rootOffset() {
    if (!isCrossOriginFrame()) return { x: 0, y: 0 };
    let offset = captureWindow === window ? received : null;
    if (!offset) {
      try {
        // A same-origin ancestor below a cross-origin one: its own content script learnt the offset.
        const other = captureWindow.WebTasks && captureWindow.WebTasks.capture;
        offset = other && other.received();
      } catch (err) {
        offset = null;
      }
    }
    return offset ? { x: offset.x, y: offset.y } : { x: 0, y: 0 };
  }

  /** This frame's viewport offset in the top viewport. */
  function topOffset() {
    const inRoot = dom.offsetToRoot(document);
    const base = rootOffset();
    return { x: inRoot.x + base.x, y: inRoot.y + base.y };
  }

  function viewport() {
    if (!isCrossOriginFrame()) return { width: window.top.innerWidth, height: window.top.innerHeight };
    if (received && received.viewportWidth > 0) return { width: received.viewportWidth, height: received.viewportHeight };
    return { width: captureWindow.innerWidth, height: captureWindow.innerHeight };
  }

  function toTop(clientX, clientY) {
    const o = topOffset();
    return { x: clientX + o.x, y: clientY + o.y };
  }

  function mouse() {
    return pointer ? toTop(pointer.x, pointer.y) : { x: 0, y: 0 };
  }

  function rememberPointer(event) {
    if (typeof event.clientX === "number") pointer = { x: event.clientX, y: event.clientY };
  }

  // Open shadow roots only: chrome.dom.openOrClosedShadowRoot would also see closed ones, but it is an
  // extension API call per element (≈5 ms for 2,000 elements, a third of the capture budget).
  function domOptions() {
    return { privateSelectors: state.privateSelectors, offset: rootOffset(), viewport: viewport() };
  }

  // A child frame on another origin cannot read where it is on the page: its parent's script tells it.
  function answerChild(child) {
    const iframe = dom.frameElements(document).find((f) => f.contentWindow === child);
    if (!iframe) return;
    const own = topOffset();
    const inner = dom.contentOffset(iframe);
    const size = viewport();
    child.postMessage({
      type: FRAME_OFFSET, x: own.x + inner.x, y: own.y + inner.y,
      viewportWidth: size.width, viewportHeight: size.height,
    }, "*");
  }

  function pushOffsets() {
    pushTimer = null;
    for (const iframe of dom.frameElements(document)) {
      let sameOrigin = false;
      try {
        sameOrigin = !!iframe.contentDocument;
      } catch (err) {
        sameOrigin = false;
      }
      if (!sameOrigin && iframe.contentWindow) answerChild(iframe.contentWindow);
    }
  }

  function schedulePush() {
    if (pushTimer === null && document.querySelector("iframe, frame")) pushTimer = setTimeout(pushOffsets, OFFSET_PUSH_DELAY_MS);
  }

  function requestOffset(force) {
    if (captureWindow !== window || window === window.top) return;
    const now = Date.now();
    if (!force && now - lastOffsetRequest < OFFSET_REQUEST_INTERVAL_MS) return;
    lastOffsetRequest = now;
    window.parent.postMessage({ type: FRAME_OFFSET, request: true }, "*");
  }

  function acceptOffset(data) {
    const numbers = ["x", "y", "viewportWidth", "viewportHeight"].map((k) => Number(data[k]));
    if (!numbers.every(Number.isFinite)) return;
    received = { x: numbers[0], y: numbers[1], viewportWidth: numbers[2], viewportHeight: numbers[3] };
    schedulePush(); // our own cross-origin children move with us
  }

  function frameInfo() {
    return {
      isTop: window === window.top,
      crossOrigin: isCrossOriginFrame(),
      url: location.href,
      offset: topOffset(),
      offsetKnown: !isCrossOriginFrame() || received !== null || captureWindow !== window,
    };
  }

  // --- Private regions (lib/regions.js composes the reports of every frame) ----------------------------------

  /**
   * This frame's private areas and iframe boxes in its own viewport: {url, viewport, rects, frames}. `rects`: the
   * private elements visible in this viewport (same-origin subframes included); pass them when just measured.
   * `fields`: also count the private fields anywhere in the document (privateFields; step mode keeps an MHTML copy
   * only without any), a walk of the whole document.
   */
  function regionsReport(selectors, rects, fields = false) {
    const list = Array.isArray(selectors) && selectors.length ? selectors : state.privateSelectors;
    const size = { width: window.innerWidth, height: window.innerHeight };
    let own = rects;
    if (!own) {
      try {
        own = dom.privateRects(document, { privateSelectors: list, viewport: size });
      } catch (err) {
        return null; // not measurable (a document going away): the worker masks this frame whole
      }
    }
    const frames = [];
    let unnamed = false;
    for (const iframe of dom.frameElements(document)) {
      const box = dom.contentBox(iframe);
      const child = iframe.contentWindow;
      const id = child && childFrameIds.has(child) ? childFrameIds.get(child) : null;
      if (id === null) unnamed = true;
      frames.push({ frameId: id, x: box.x, y: box.y, width: box.width, height: box.height });
    }
    if (unnamed) askChildFrameIds();
    const report = { url: location.href, viewport: size, rects: own.map((r) => ({ x: r.x, y: r.y, width: r.width, height: r.height })), frames };
    if (fields) report.privateFields = dom.privateElements(document, { privateSelectors: list }).length;
    return report;
  }

  function tellParentFrameId() {
    if (window !== window.top && frameId !== null) window.parent.postMessage({ type: FRAME_ID, frameId }, "*");
  }

  function askChildFrameIds() {
    for (const iframe of dom.frameElements(document)) {
      if (iframe.contentWindow) iframe.contentWindow.postMessage({ type: FRAME_ID, request: true }, "*");
    }
  }

  function acceptChildFrameId(source, data) {
    if (!Number.isInteger(data.frameId) || data.frameId <= 0) return;
    if (dom.frameElements(document).some((f) => f.contentWindow === source)) childFrameIds.set(source, data.frameId);
  }

  // --- Building and sending turns ------------------------------------------------------------------------

  function pageUrl() {
    try {
      return captureWindow.location.href;
    } catch (err) {
      return location.href;
    }
  }

  /** Capture the page now and send one CAPTURE message for `intent` on `element` (null: no element). */
  /**
   * Event times, in ms since the epoch, strictly increasing in this frame: two actions in the same millisecond
   * keep the order they happened in once the worker turns them into timestamps.
   */
  function eventClock(at) {
    lastEventTime = Math.max(at === undefined ? Date.now() : at, lastEventTime + 1);
    return lastEventTime;
  }

  function send(intent, element, args, at) {
    const message = captureMessage(intent, element, args, at);
    unanswered.set(message.turn.client_id, message);
    deliver(message, 0);
    return message;
  }

  /** The CAPTURE message of an action on `element`: the turn, the page (DOM with uids, boxes) as it is now. */
  function captureMessage(intent, element, args, at) {
    const opts = domOptions();
    let page = null;
    let privateRects = [];
    try {
      const snapshot = dom.capturePage(captureWindow.document, opts);
      page = { html: snapshot.html, bboxes: snapshot.bboxes };
      privateRects = snapshot.privateRects;
    } catch (err) {
      console.warn("[webtasks] page capture failed:", err);
    }
    const size = opts.viewport;
    const m = mouse();
    const metadata = {
      url: pageUrl(), viewportWidth: size.width, viewportHeight: size.height, mouseX: m.x, mouseY: m.y, zoomLevel: 1.0,
    };
    if (window !== window.top) metadata.frameUrl = location.href;
    const turnArguments = Object.assign({ metadata }, args);
    if (element) turnArguments.element = dom.elementInfo(element, opts);
    const turn = { client_id: dom.newUid(), type: "browser", intent, arguments: turnArguments, eventTime: eventClock(at) };
    let regions = null;
    try {
      regions = regionsReport(state.privateSelectors, window === window.top && page ? privateRects : null);
    } catch (err) {
      regions = null; // the worker asks this frame again
    }
    const message = {
      target: C.TARGET.SW, type: C.MSG.CAPTURE, turn, privateRects, regions,
      viewport: { width: size.width, height: size.height, devicePixelRatio: window.devicePixelRatio || 1 },
      mouse: m, frame: frameInfo(),
    };
    if (page) message.page = page;
    return message;
  }

  function mask(el, text) {
    return dom.isPrivate(el, domOptions()) ? dom.maskValue(text) : text;
  }

  // Sent even when the page removed the field meanwhile: the text matters more than the element's box
  // (a removed field's uid is then missing from the page and bboxes captured with the turn).
  function emitTextInput(pending) {
    // Timed by the last keystroke, not by the flush: the flush may come after an action in another frame (a
    // click in a cross-origin iframe) that really happened later.
    send("textInput", pending.field, { text: pending.text }, pending.lastAt);
  }

  function emitScroll(key) {
    const args = { scrollX: captureWindow.scrollX, scrollY: captureWindow.scrollY };
    let el = null;
    let left = 0;
    let top = 0;
    if (key && key.nodeType === 9 && key !== captureWindow.document) {
      el = frameOf(key); // a same-origin frame's own viewport scrolled: the iframe element is what scrolled
      left = key.defaultView.scrollX;
      top = key.defaultView.scrollY;
    } else if (key && key.nodeType === 1) {
      el = key;
      left = key.scrollLeft;
      top = key.scrollTop;
    }
    if (el && el.isConnected) {
      args.properties = { target: "element", uid: dom.ensureUid(el), scrollLeft: left, scrollTop: top };
    }
    send("scroll", null, args);
  }

  function frameOf(doc) {
    try {
      return doc.defaultView.frameElement || null;
    } catch (err) {
      return null;
    }
  }

  function emitHover(el) {
    if (!active() || !el.isConnected) return;
    flushAllPending();
    const p = mouse();
    send("hover", el, { properties: { x: p.x, y: p.y, clientX: p.x, clientY: p.y } });
  }

  /** Every window of this page this script can reach (same origin), from the captured one down. */
  function sameOriginWindows() {
    const found = [];
    (function visit(w) {
      found.push(w);
      let count = 0;
      try {
        count = w.frames.length;
      } catch (err) {
        return;
      }
      for (let i = 0; i < count; i++) {
        try {
          const child = w.frames[i];
          if (child.document) visit(child); // throws for a cross-origin frame
        } catch (err) {
          // cross-origin: its own script flushes on its focusout (a little late, see the report)
        }
      }
    })(captureWindow);
    return found;
  }

  /**
   * Pending text and scrolls of the whole page, this frame's and other same-origin frames' (their content
   * scripts share this isolated world): focus leaving a frame is only seen after the pointerdown that
   * moved it, so without this a frame's textInput would come after the click that ended it.
   */
  function flushAllPending() {
    for (const w of sameOriginWindows()) {
      if (w === window) continue;
      try {
        const other = w.WebTasks && w.WebTasks.capture;
        if (other && typeof other.flushPending === "function") other.flushPending();
      } catch (err) {
        // a frame navigating away
      }
    }
    co.flushPending();
  }

  /** Before recording any action: earlier pending turns first, and no hover for what is under the pointer. */
  function beforeAction() {
    co.hover.cancel();
    flushAllPending();
  }

  // --- Event helpers -------------------------------------------------------------------------------------

  function trusted(event) {
    return !settings.requireTrusted || event.isTrusted;
  }

  /** The real target: inside open shadow roots too (composedPath), text nodes lifted to their element. */
  function targetOf(event) {
    const path = typeof event.composedPath === "function" ? event.composedPath() : [];
    let t = path.length ? path[0] : event.target;
    if (t && t.nodeType === 3) t = t.parentElement;
    if (t && t.nodeType === 9) t = t.documentElement;
    return t && t.nodeType === 1 ? t : null;
  }

  /** Events that are not composed (change, submit, scroll) stay inside a shadow root: listen there too. */
  function hookShadowRoots(event) {
    if (typeof event.composedPath !== "function") return;
    for (const node of event.composedPath()) {
      if (node && node.nodeType === 11 && node.host && !hookedRoots.has(node)) {
        hookedRoots.add(node);
        listen(node, "change", onChange, true);
        listen(node, "submit", onSubmit, true);
        listen(node, "scroll", onScroll, { capture: true, passive: true });
      }
    }
  }

  const TEXT_TYPES = new Set(["text", "search", "email", "url", "tel", "password", "number"]);

  function isEditableHost(el) {
    if (el.isContentEditable !== undefined) return el.isContentEditable;
    const value = el.getAttribute("contenteditable");
    return value !== null && /^(|true|plaintext-only)$/i.test(value);
  }

  function isTextField(el) {
    const name = el.localName;
    if (name === "textarea") return true;
    if (name === "input") return TEXT_TYPES.has(String(el.type || "text").toLowerCase());
    return isEditableHost(el);
  }

  function fieldText(el) {
    if (el.localName === "input" || el.localName === "textarea") return el.value;
    return typeof el.innerText === "string" ? el.innerText : el.textContent;
  }

  function onScrollbar(event, el) {
    const doc = el.ownerDocument;
    if (el === doc.documentElement || el === doc.body) {
      const html = doc.documentElement;
      return html.clientWidth > 0 && (event.clientX >= html.clientWidth || event.clientY >= html.clientHeight);
    }
    if (!el.clientWidth || (el.scrollHeight <= el.clientHeight && el.scrollWidth <= el.clientWidth)) return false;
    const rect = el.getBoundingClientRect();
    const x = event.clientX - rect.left - el.clientLeft;
    const y = event.clientY - rect.top - el.clientTop;
    return x >= el.clientWidth || y >= el.clientHeight;
  }

  function stopEvent(event) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }

  // --- Event handlers ------------------------------------------------------------------------------------

  function onPointerDown(event) {
    rememberPointer(event);
    swallowing = false;
    if (!active() || !trusted(event) || (event.button !== 0 && event.button !== 1)) return;
    const el = targetOf(event);
    if (!el || onScrollbar(event, el)) return;
    hookShadowRoots(event);
    const fake = state.mode === "task" && event.altKey && event.button === 0;
    beforeAction();
    const p = toTop(event.clientX, event.clientY);
    const properties = {
      x: p.x, y: p.y, clientX: p.x, clientY: p.y, button: event.button, buttons: event.buttons,
      altKey: !!event.altKey, ctrlKey: !!event.ctrlKey, metaKey: !!event.metaKey, shiftKey: !!event.shiftKey,
      pointerType: event.pointerType || "mouse",
    };
    if (fake) properties.fakeClick = true;
    send("click", el, { properties });
    if (fake) {
      swallowing = true; // the rest of this click must not reach the page either
      stopEvent(event);
    }
  }

  function onSwallowed(event) {
    if (!swallowing) return;
    stopEvent(event);
    if (event.type === "click" || event.type === "auxclick") swallowing = false;
  }

  function onClick(event) {
    if (swallowing) return onSwallowed(event);
    // Pointer clicks were recorded at pointerdown; only keyboard activations (detail 0) are recorded here.
    if (!active() || !trusted(event) || event.detail !== 0 || !lastKey) return;
    const el = targetOf(event);
    const key = lastKey;
    lastKey = null;
    if (!el || Date.now() - key.at > KEY_CLICK_WINDOW_MS || !(key.el === el || key.el.contains(el))) return;
    beforeAction();
    const info = el.getBoundingClientRect();
    const p = toTop(info.left + info.width / 2, info.top + info.height / 2);
    send("click", el, { properties: { x: p.x, y: p.y, clientX: p.x, clientY: p.y, button: 0, buttons: 0, keyboard: true } });
  }

  function onKeyDown(event) {
    if (!active() || !trusted(event)) return;
    hookShadowRoots(event);
    co.hover.cancel();
    const el = targetOf(event);
    if (event.key === "Enter" || event.key === " ") lastKey = { el, at: Date.now() };
    // Enter in a one-line field ends the typing (and usually submits): send the text before the page reacts,
    // which may re-render the field away.
    if (event.key === "Enter" && !event.isComposing && el && el.localName === "input" && isTextField(el)) co.text.flush(el);
  }

  function onInput(event) {
    if (!active() || !trusted(event)) return;
    const el = targetOf(event);
    if (!el || !isTextField(el)) return; // checkboxes, selects, ranges … give a change turn instead
    co.hover.cancel();
    if (event.inputType === "insertFromPaste" && pastedInto === el) {
      pastedInto = null; // the paste turn already has this text
      return;
    }
    co.text.input(el, fieldText(el), dom.isPrivate(el, domOptions()));
  }

  function onFocusOut(event) {
    const el = targetOf(event);
    if (el) co.text.flush(el);
  }

  function changeValue(el) {
    const name = el.localName;
    if (name === "select") {
      return Array.from(el.options).filter((o) => o.selected).map((o) => o.value).join(",");
    }
    if (name !== "input") return null;
    const type = String(el.type).toLowerCase();
    if (type === "checkbox") return el.checked ? "true" : "false";
    if (type === "radio") return el.value;
    if (type === "file") return Array.from(el.files || [], (f) => f.name).join(", ");
    return el.value;
  }

  function onChange(event) {
    if (!active() || !trusted(event)) return;
    const el = targetOf(event);
    if (!el || isTextField(el)) return; // text fields: their textInput carries the text
    const value = changeValue(el);
    if (value === null) return;
    beforeAction();
    send("change", el, { value: mask(el, value) });
  }

  function onSubmit(event) {
    if (!active() || !trusted(event)) return;
    const form = targetOf(event);
    if (!form) return;
    beforeAction();
    send("submit", form, {});
  }

  function onScroll(event) {
    schedulePush();
    if (!active() || !trusted(event)) return;
    const t = event.target;
    if (!t) return;
    if (t.nodeType === 9 || t === window) co.scroll.push(t.nodeType === 9 ? t : document, null);
    else if (t.nodeType === 1 && !isTextField(t)) co.scroll.push(t, null);
  }

  function onMouseOver(event) {
    rememberPointer(event);
    requestOffset(false);
    if (!active() || !trusted(event)) return;
    const el = targetOf(event);
    const doc = el && el.ownerDocument;
    if (!el || el === doc.documentElement || el === doc.body || el.localName === "iframe" || el.localName === "frame") {
      co.hover.leave();
      return;
    }
    hookShadowRoots(event);
    co.hover.over(el, null);
  }

  function onMouseOut(event) {
    if (!event.relatedTarget) co.hover.leave(); // the pointer left the page (or this frame)
  }

  function onPointerMove(event) {
    rememberPointer(event);
  }

  function selectionOf(el) {
    if (el && (el.localName === "input" || el.localName === "textarea")) {
      try {
        const start = el.selectionStart;
        const end = el.selectionEnd;
        if (typeof start === "number" && end > start) return { text: el.value.slice(start, end), node: el, range: null };
      } catch (err) {
        // inputs without a text selection (email in some browsers)
      }
    }
    const rootNode = el && el.getRootNode ? el.getRootNode() : document;
    const selection = rootNode.getSelection ? rootNode.getSelection() : document.getSelection();
    const range = selection && selection.rangeCount ? selection.getRangeAt(0) : null;
    let node = el;
    if (range && (!el || el === document.body || el === document.documentElement)) {
      node = range.commonAncestorContainer;
      if (node.nodeType !== 1) node = node.parentElement;
    }
    return { text: selection ? selection.toString() : "", node: node || document.body || document.documentElement, range };
  }

  function touchesPrivate(node, range) {
    const opts = domOptions();
    if (dom.isPrivate(node, opts)) return true;
    if (!range) return false;
    return dom.privateElements(document, opts).some((p) => range.intersectsNode(p));
  }

  function onCopy(event) {
    if (!active() || !trusted(event)) return;
    const { text, node, range } = selectionOf(targetOf(event));
    beforeAction();
    send("copy", node, { selected: touchesPrivate(node, range) ? dom.maskValue(text) : text });
  }

  function onPaste(event) {
    if (!active() || !trusted(event)) return;
    const el = targetOf(event) || document.activeElement || document.body;
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    beforeAction();
    pastedInto = el;
    send("paste", el, { pasted: mask(el, text) });
  }

  function onPageHide() {
    co.stop(); // typed text and a scroll in progress, before the page goes away
    saveUnanswered();
  }

  /**
   * Send a capture until the worker confirms it stored the turn ({ok: true}). A worker that was just killed or is
   * starting may reject or not answer; re-sending is safe (the worker and the server key turns by client_id).
   * Whatever is still unconfirmed when the page goes away is saved by saveUnanswered.
   */
  function deliver(message, attempt) {
    const id = message.turn.client_id;
    const retry = () => {
      if (alive && unanswered.has(id) && attempt < RESEND_DELAYS_MS.length) {
        setTimeout(() => deliver(message, attempt + 1), RESEND_DELAYS_MS[attempt]);
      }
    };
    if (!alive) return;
    try {
      Promise.resolve(chromeApi.runtime.sendMessage(message)).then(
        (reply) => (reply && reply.ok ? unanswered.delete(id) : retry()),
        (err) => {
          onSendError(err);
          retry();
        },
      );
    } catch (err) {
      onSendError(err);
      retry();
    }
  }

  /** Hand captures the worker has not confirmed to durable storage; the worker stores each once and removes it. */
  function saveUnanswered() {
    if (!unanswered.size || !chromeApi || !chromeApi.storage || !chromeApi.storage.local) return;
    const entries = {};
    for (const [clientId, message] of unanswered) {
      entries[C.STORAGE.PENDING_CAPTURE + clientId] = { message, tabId, tabUrl, at: Date.now() };
    }
    unanswered.clear();
    try {
      Promise.resolve(chromeApi.storage.local.set(entries)).catch(onSendError);
    } catch (err) {
      onSendError(err);
    }
  }

  // --- Step mode ---------------------------------------------------------------------------------------

  const STEP_BLOCKED = ["pointerdown", "mousedown", "pointerup", "mouseup", "click", "auxclick", "dblclick", "contextmenu"];

  /** A click in step mode selects its element; none of its events reach the page. */
  function onStepPointer(event) {
    if (!stepping() || !trusted(event)) return;
    stopEvent(event);
    if (event.type !== "pointerdown" || event.button !== 0) return;
    const el = targetOf(event);
    if (!el || el.nodeType !== 1) return;
    unhighlight();
    const p = toTop(event.clientX, event.clientY);
    const message = captureMessage("click", el, {
      properties: { x: p.x, y: p.y, clientX: p.x, clientY: p.y, button: 0, buttons: 1, pointerType: event.pointerType || "mouse" },
    });
    message.type = C.MSG.STEP_SELECT;
    // The element's privacy level: the worker masks the value a step gives a private element in its turn.
    message.privacy = dom.privacyLevel(el, domOptions());
    if (el.localName === "select") {
      // For the panel to offer (never recorded as such: a private select's chosen value and text are masked).
      message.options = Array.from(el.options, (o) => ({ value: o.value, text: o.text.trim(), selected: o.selected }));
    }
    message.label = stepLabel(el, message.privacy);
    stepSelected = el;
    sendToWorker(message, (reply) => {
      if (reply && reply.ok && stepSelected === el) showHighlight(el);
    });
  }

  /** What the panel names the selection by: tag, id and a text; no value or text of a private element. */
  function stepLabel(el, level) {
    const text = level === dom.NONE
      ? (el.getAttribute("aria-label") || el.value || el.textContent || el.getAttribute("placeholder") || "").trim()
      : "(private)";
    const id = el.id ? `#${el.id}` : "";
    return `<${el.localName}${id}> ${text.replace(/\s+/g, " ").slice(0, 80)}`.trim();
  }

  function showHighlight(el) {
    unhighlight();
    const box = el.getBoundingClientRect();
    highlight = document.createElement("div");
    highlight.setAttribute("data-webtasks-highlight", "");
    highlight.style.cssText = `position:fixed;left:${box.left - 2}px;top:${box.top - 2}px;width:${box.width + 4}px;`
      + `height:${box.height + 4}px;outline:3px solid #e5484d;pointer-events:none;z-index:2147483647;`;
    (document.body || document.documentElement).appendChild(highlight);
  }

  function unhighlight() {
    if (highlight) highlight.remove();
    highlight = null;
  }

  /**
   * The worker performs a step: let its input through, bring the element into view and do the element's part
   * (focus for Type and Press Enter, the option for Select); answer with its centre in the tab's viewport.
   */
  function stepExec(message) {
    const el = stepSelected;
    unhighlight();
    if (!el || !el.isConnected) return { ok: false, error: "the selected element is no longer on the page" };
    stepPass = true;
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
    if (message.op === "type" || message.op === "enter") {
      el.focus();
      if (message.op === "type" && typeof el.select === "function" && isTextField(el)) el.select(); // typing replaces
    }
    if (message.op === "select") {
      el.value = message.value;
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    }
    const box = el.getBoundingClientRect();
    const p = toTop(box.left + box.width / 2, box.top + box.height / 2);
    return { ok: true, x: p.x, y: p.y };
  }

  // --- Page bridge and frame offsets (window.postMessage) ------------------------------------------------

  /** Automation: the page posts {type: PAGE_BRIDGE, id?, request}; the reply comes back as {type, id, reply}. */
  function bridge(data) {
    // `content`: this frame's script's own view of the recording (automation waits for it before acting).
    const content = { recording: state.recording, paused: state.paused, step: !!state.step };
    const reply = (body) => window.postMessage(Object.assign({ type: C.MSG.PAGE_BRIDGE, id: data.id, reply: null, content }, body), "*");
    const request = data.request && typeof data.request === "object" ? data.request : {};
    if (request.type === C.MSG.CAPTURE || request.type === C.MSG.STEP_SELECT) {
      reply({ error: "a page cannot send captures" });
      return;
    }
    if (!alive) {
      reply({ error: "extension context invalidated" });
      return;
    }
    const message = Object.assign({}, request, { target: C.TARGET.SW, viaPageBridge: true });
    try {
      Promise.resolve(chromeApi.runtime.sendMessage(message)).then(
        (answer) => reply({ reply: answer === undefined ? null : answer }),
        (err) => reply({ error: String((err && err.message) || err) }),
      );
    } catch (err) {
      reply({ error: String((err && err.message) || err) });
    }
  }

  function onWindowMessage(event) {
    const data = event.data;
    if (!data || typeof data !== "object") return;
    if (data.type === C.MSG.PAGE_BRIDGE && event.source === window && "request" in data) bridge(data);
    else if (data.type === FRAME_ID) {
      if (data.request) {
        if (event.source === window.parent && window.parent !== window) tellParentFrameId();
      } else if (event.source && event.source !== window) acceptChildFrameId(event.source, data);
    } else if (data.type === FRAME_OFFSET) {
      if (data.request) {
        if (event.source && event.source !== window) answerChild(event.source);
      } else if (event.source === window.parent && window.parent !== window) acceptOffset(data);
    }
  }

  // --- Wiring --------------------------------------------------------------------------------------------

  function listen(target, type, fn, options) {
    target.addEventListener(type, fn, options);
    listeners.push([target, type, fn, options]);
  }

  const CAPTURE = { capture: true };
  const PASSIVE = { capture: true, passive: true };
  // Step mode first: its stopImmediatePropagation also keeps the recording listeners below from seeing the click.
  for (const type of STEP_BLOCKED) listen(window, type, onStepPointer, CAPTURE);
  listen(window, "pointerdown", onPointerDown, CAPTURE);
  for (const type of ["mousedown", "pointerup", "mouseup", "auxclick", "dblclick"]) listen(window, type, onSwallowed, CAPTURE);
  listen(window, "click", onClick, CAPTURE);
  listen(window, "keydown", onKeyDown, CAPTURE);
  listen(window, "input", onInput, CAPTURE);
  listen(window, "focusout", onFocusOut, CAPTURE);
  listen(window, "focusin", hookShadowRoots, PASSIVE);
  listen(window, "focusin", () => requestOffset(false), PASSIVE);
  listen(window, "wheel", (event) => { rememberPointer(event); hookShadowRoots(event); }, PASSIVE);
  listen(window, "change", onChange, CAPTURE);
  listen(window, "submit", onSubmit, CAPTURE);
  listen(window, "scroll", onScroll, PASSIVE);
  listen(window, "resize", schedulePush, PASSIVE);
  listen(window, "load", () => { schedulePush(); requestOffset(true); }, PASSIVE);
  listen(window, "mouseover", onMouseOver, PASSIVE);
  listen(window, "mouseout", onMouseOut, PASSIVE);
  listen(window, "pointermove", onPointerMove, PASSIVE);
  listen(window, "copy", onCopy, CAPTURE);
  listen(window, "paste", onPaste, CAPTURE);
  listen(window, "pagehide", onPageHide, CAPTURE);
  listen(window, "message", onWindowMessage, false);
  if (chromeApi && chromeApi.runtime && chromeApi.runtime.onMessage) {
    chromeApi.runtime.onMessage.addListener((message, sender, sendResponse) => {
      const answer = onRuntimeMessage(message);
      if (answer !== undefined) sendResponse(answer);
      return false;
    });
  }

  W.capture = {
    state, applyState, send, captureMessage, regionsReport, coalescer: co, received: () => received, frameInfo, unanswered, saveUnanswered,
    flushPending: () => co.flushPending(),
  };
  requestOffset(true);
  hello();
})(typeof globalThis !== "undefined" ? globalThis : self);
