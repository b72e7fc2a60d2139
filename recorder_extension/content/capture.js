/*
 * The content script (every frame, document_start): captures the user's actions as WebLINX browser turns.
 * Its one job is capture: screenshots, storage, upload, tabs and loads are the service worker's. This file wires
 * the page's events to turns; its parts are classic scripts loaded before it (manifest order):
 *   lib/constants.js, lib/privacy.js, lib/serialize.js, lib/dom.js  the page captured with an action (DOM with
 *                     uids, boxes, the acted element), private elements and their masking
 *   lib/coalesce.js   keystrokes, scrolls and pointer rests made into single turns
 *   lib/events.js     what an event acted on: its target, text fields, a change's value, a copy's selection
 *   lib/frames.js     frame geometry: the document captured, this frame's offset in the tab's viewport, the
 *                     frame ids of its iframes, its private-regions report
 *   lib/delivery.js   messages to the worker: captures re-sent until stored, saved at pagehide; the page bridge
 *   lib/step_page.js  step mode: clicks select elements; the element's part of a step
 *   lib/capture_message.js  an action's CAPTURE message: the turn, the page as it is now, the pointer's position
 *
 * Each action sends ONE message (lib/capture_message.js), synchronously from the event handler (the service
 * worker then holds the user gesture and can call captureVisibleTab without its quota).
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
 * Private fields (lib/privacy.js): values, copied and pasted text are masked ("********" or ""). What they hold goes
 * to the worker beside the turn (privateValues, never stored): it masks those values wherever they reappear.
 * Step mode (state.step, lib/step_page.js): none of the above; a left click selects its element instead.
 * Private pixels: `regions` is this frame's private-regions report (C.MSG.REGIONS, taken with the action); the worker
 * asks every other frame for theirs and masks the screenshot with all of them (lib/regions.js).
 *
 * Frames (lib/frames.js): a same-origin iframe's actions are captured with the whole page and top-level boxes; a
 * cross-origin frame captures its own document, its boxes and mouse coordinates translated to the top viewport
 * (frame.crossOrigin = true in the message). metadata.url is the captured document's URL (the tab's URL except
 * in a cross-origin frame); metadata.frameUrl is added in any iframe.
 * Before an action, pending textInput/scroll turns of this frame AND of the other same-origin frames are
 * flushed (same-origin frames' content scripts share this isolated world). A cross-origin frame cannot be
 * reached synchronously: text typed in one frame and ended by a click in a cross-origin other frame is sent
 * right after that click (by the focusout that follows it).
 * Only open shadow roots are captured (chrome.dom.openOrClosedShadowRoot per element costs ≈5 ms/2,000).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks;
  const parts = W && W.C && W.dom && W.coalesce && W.events && W.frames && W.delivery && W.stepPage && W.captureMessage;
  if (!parts || W.capture) return; // a part missing, or loaded twice (manifest + scripting)
  const C = W.C;
  const dom = W.dom;
  const chromeApi = root.chrome;
  const { targetOf, isTextField, fieldText, onScrollbar, changeValue, selectionOf, stopEvent } = W.events;
  const KEY_CLICK_WINDOW_MS = 1000; // a click this soon after Enter/Space on the same element is its activation

  const settings = Object.assign({ requireTrusted: true }, W.captureSettings); // node tests dispatch untrusted events
  const state = { recording: false, paused: false, mode: "chat", privateSelectors: [] };
  const listeners = [];
  let lastKey = null; // {el, at}: the last Enter/Space keydown
  let swallowing = false; // the rest of a fake click's events
  let pastedInto = null;
  const hookedRoots = new WeakSet();

  const co = W.coalesce.createCoalescer({
    text: (pending) => emitTextInput(pending),
    scroll: (key) => emitScroll(key),
    hover: (el) => emitHover(el),
  });
  // Counting a page's private fields (step mode, once a step) looks into closed shadow roots too.
  const openOrClosed = root.chrome && root.chrome.dom && root.chrome.dom.openOrClosedShadowRoot;
  const shadowRootOf = openOrClosed ? (el) => root.chrome.dom.openOrClosedShadowRoot(el) || null : undefined;
  const frames = W.frames.createFrames({ window, dom, selectors: () => state.privateSelectors, shadowRootOf });
  const { message: captureMessage, domOptions, mouse, rememberPointer } = W.captureMessage.createCaptureMessage({
    window, dom, frames, selectors: () => state.privateSelectors,
  });
  const delivery = W.delivery.createDelivery({ chrome: chromeApi, window, onInvalidated: shutdown });
  const steps = W.stepPage.createStepPage({
    window, dom, trusted, toTop: frames.toTop, capture: captureMessage, options: domOptions, send: delivery.send,
    enabled: () => delivery.alive() && state.recording && !state.paused && state.step,
  });

  // --- State ---------------------------------------------------------------------------------------------

  function active() {
    return delivery.alive() && state.recording && !state.paused && !state.step;
  }

  function applyState(next) {
    if (!next || typeof next !== "object") return;
    const was = active();
    state.recording = !!next.recording;
    state.paused = !!next.paused;
    state.mode = next.mode === "task" ? "task" : "chat";
    state.step = !!next.step;
    if (!state.step || !state.recording) steps.unhighlight();
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
        return steps.exec(message);
      case C.MSG.STEP_DONE:
        return steps.done(message);
      case C.MSG.REGIONS:
        return frames.regionsReport(message.privateSelectors, null, Boolean(message.fields));
      case C.MSG.PAINTED:
        return painted();
      default:
        console.warn("[webtasks] content script: unknown message type", message.type);
    }
  }

  /**
   * Settles once this document has rendered a frame: two animation frames after the question. Until a new page's
   * first paint the browser may still show the previous page (paint holding), and a screenshot taken then would
   * put the previous page's pixels under this page's private areas.
   */
  function painted() {
    return new Promise((resolve) => {
      requestAnimationFrame(() => requestAnimationFrame(() => resolve({ painted: true, url: location.href })));
    });
  }

  function hello() {
    const message = { target: C.TARGET.SW, type: C.MSG.HELLO, url: location.href, isTop: window === window.top };
    delivery.send(message, (reply) => {
      delivery.hello(reply);
      frames.hello(reply && reply.frameId);
      if (reply && reply.state) applyState(reply.state);
    });
  }

  /** The extension was reloaded or removed (lib/delivery.js found out): this script can no longer reach it. */
  function shutdown() {
    co.text.discard();
    co.scroll.cancel();
    co.hover.leave();
    for (const [target, type, fn, options] of listeners) target.removeEventListener(type, fn, options);
  }

  // --- Building and sending turns ------------------------------------------------------------------------

  /** Capture the page now and send one CAPTURE message for `intent` on `element` (null: no element). */
  function send(intent, element, args, at) {
    const message = captureMessage(intent, element, args, at);
    delivery.deliver(message);
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
    const captureWindow = frames.captureWindow;
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

  /**
   * Pending text and scrolls of the whole page, this frame's and other same-origin frames' (their content
   * scripts share this isolated world): focus leaving a frame is only seen after the pointerdown that
   * moved it, so without this a frame's textInput would come after the click that ended it. (A cross-origin
   * frame's script flushes on its own focusout, a little later.)
   */
  function flushAllPending() {
    for (const w of frames.sameOriginWindows()) {
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
    const p = frames.toTop(event.clientX, event.clientY);
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
    const p = frames.toTop(info.left + info.width / 2, info.top + info.height / 2);
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
    frames.schedulePush();
    if (!active() || !trusted(event)) return;
    const t = event.target;
    if (!t) return;
    if (t.nodeType === 9 || t === window) co.scroll.push(t.nodeType === 9 ? t : document, null);
    else if (t.nodeType === 1 && !isTextField(t)) co.scroll.push(t, null);
  }

  function onMouseOver(event) {
    rememberPointer(event);
    frames.requestOffset(false);
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

  function touchesPrivate(node, range) {
    const opts = domOptions();
    if (dom.isPrivate(node, opts)) return true;
    if (!range) return false;
    return dom.privateElements(document, opts).some((p) => range.intersectsNode(p));
  }

  function onCopy(event) {
    if (!active() || !trusted(event)) return;
    const { text, node, range } = selectionOf(targetOf(event), document);
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
    delivery.saveUnanswered();
  }

  // --- Window messages: the page bridge (lib/delivery.js), frame offsets and ids (lib/frames.js) ------------

  function onWindowMessage(event) {
    const data = event.data;
    if (!data || typeof data !== "object") return;
    if (data.type === C.MSG.PAGE_BRIDGE && event.source === window && "request" in data) {
      // `content`: this frame's script's own view of the recording (automation waits for it before acting).
      delivery.bridge(data, { recording: state.recording, paused: state.paused, step: !!state.step });
    } else frames.onMessage(event);
  }

  // --- Wiring --------------------------------------------------------------------------------------------

  function listen(target, type, fn, options) {
    target.addEventListener(type, fn, options);
    listeners.push([target, type, fn, options]);
  }

  const CAPTURE = { capture: true };
  const PASSIVE = { capture: true, passive: true };
  // Step mode first: its stopImmediatePropagation also keeps the recording listeners below from seeing the click.
  for (const type of W.stepPage.BLOCKED) listen(window, type, steps.onPointer, CAPTURE);
  listen(window, "pointerdown", onPointerDown, CAPTURE);
  for (const type of ["mousedown", "pointerup", "mouseup", "auxclick", "dblclick"]) listen(window, type, onSwallowed, CAPTURE);
  listen(window, "click", onClick, CAPTURE);
  listen(window, "keydown", onKeyDown, CAPTURE);
  listen(window, "input", onInput, CAPTURE);
  listen(window, "focusout", onFocusOut, CAPTURE);
  listen(window, "focusin", hookShadowRoots, PASSIVE);
  listen(window, "focusin", () => frames.requestOffset(false), PASSIVE);
  listen(window, "wheel", (event) => { rememberPointer(event); hookShadowRoots(event); }, PASSIVE);
  listen(window, "change", onChange, CAPTURE);
  listen(window, "submit", onSubmit, CAPTURE);
  listen(window, "scroll", onScroll, PASSIVE);
  listen(window, "resize", frames.schedulePush, PASSIVE);
  listen(window, "load", () => { frames.schedulePush(); frames.requestOffset(true); }, PASSIVE);
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
      if (answer && typeof answer.then === "function") {
        answer.then(sendResponse, () => sendResponse(undefined));
        return true; // answered later
      }
      if (answer !== undefined) sendResponse(answer);
      return false;
    });
  }

  W.capture = {
    state, applyState, send, captureMessage, regionsReport: frames.regionsReport, coalescer: co, received: frames.received,
    frameInfo: frames.frameInfo, unanswered: delivery.unanswered, saveUnanswered: delivery.saveUnanswered,
    flushPending: () => co.flushPending(),
  };
  frames.requestOffset(true);
  hello();
})(typeof globalThis !== "undefined" ? globalThis : self);
