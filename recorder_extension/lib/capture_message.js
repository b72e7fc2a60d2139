/*
 * The CAPTURE message of an action, for the content script (content/capture.js): the turn (its client id, its
 * metadata with the pointer's position in the tab's viewport, the acted element, its event time) and the page as it
 * is now (DOM with uids, boxes, private rects and values, this frame's private-regions report).
 *
 *   {target: SW, type: CAPTURE, turn, page: {html, bboxes}, privateRects, regions, viewport, mouse, frame, privateValues?}
 *   turn = {client_id, type: "browser", intent, arguments: {metadata, properties?, element?, …}, label?, eventTime}
 * label: what review names the action by (lib/events.js actionLabel), with an element only.
 *
 * Classic script: defines globalThis.WebTasks.captureMessage (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const events = W.events || require("./events.js");

  /**
   * deps: {window (the frame's), dom (lib/dom.js), frames (lib/frames.js's createFrames), selectors() → the
   * session's private selectors}.
   */
  function createCaptureMessage({ window, dom, frames, selectors }) {
    let pointer = null; // last pointer position: {x, y} in this frame's viewport
    let lastEventTime = 0;

    function mouse() {
      return pointer ? frames.toTop(pointer.x, pointer.y) : { x: 0, y: 0 };
    }

    function rememberPointer(event) {
      if (typeof event.clientX === "number") pointer = { x: event.clientX, y: event.clientY };
    }

    // Open shadow roots only: chrome.dom.openOrClosedShadowRoot would also see closed ones, but it is an
    // extension API call per element (≈5 ms for 2,000 elements, a third of the capture budget).
    function domOptions() {
      return { privateSelectors: selectors(), offset: frames.rootOffset(), viewport: frames.viewport() };
    }

    /**
     * Event times, in ms since the epoch, strictly increasing in this frame: two actions in the same millisecond
     * keep the order they happened in once the worker turns them into timestamps.
     */
    function eventClock(at) {
      lastEventTime = Math.max(at === undefined ? Date.now() : at, lastEventTime + 1);
      return lastEventTime;
    }

    /** The CAPTURE message of an action on `element`: the turn, the page (DOM with uids, boxes) as it is now. */
    function message(intent, element, args, at) {
      const opts = domOptions();
      let page = null;
      let privateRects = [];
      let privateValues = [];
      try {
        const snapshot = dom.capturePage(frames.captureWindow.document, opts);
        page = { html: snapshot.html, bboxes: snapshot.bboxes };
        privateRects = snapshot.privateRects;
        privateValues = snapshot.privateValues;
      } catch (err) {
        console.warn("[webtasks] page capture failed:", err);
      }
      const size = opts.viewport;
      const m = mouse();
      const metadata = {
        url: frames.pageUrl(), viewportWidth: size.width, viewportHeight: size.height, mouseX: m.x, mouseY: m.y, zoomLevel: 1.0,
      };
      if (window !== window.top) metadata.frameUrl = window.location.href;
      const turnArguments = Object.assign({ metadata }, args);
      if (element) turnArguments.element = dom.elementInfo(element, opts);
      const turn = { client_id: dom.newUid(), type: "browser", intent, arguments: turnArguments, eventTime: eventClock(at) };
      if (element) turn.label = events.actionLabel(element, intent, opts);
      let regions = null;
      try {
        regions = frames.regionsReport(selectors(), window === window.top && page ? privateRects : null);
      } catch (err) {
        regions = null; // the worker asks this frame again
      }
      const result = {
        target: C.TARGET.SW, type: C.MSG.CAPTURE, turn, privateRects, regions,
        viewport: { width: size.width, height: size.height, devicePixelRatio: window.devicePixelRatio || 1 },
        mouse: m, frame: frames.frameInfo(),
      };
      if (page) result.page = page;
      // What the private fields hold, for the worker only: it masks them wherever they show up later (a GET form's
      // next URL) and drops them from the message before anything is stored (lib/redact.js).
      if (privateValues.length) result.privateValues = privateValues;
      return result;
    }

    return { message, domOptions, mouse, rememberPointer };
  }

  const api = { createCaptureMessage };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.captureMessage = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
