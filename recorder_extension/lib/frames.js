/*
 * Frame geometry for the content script (content/capture.js): where this frame is in the tab's viewport, which
 * document it captures, and the frame ids that name its iframes' boxes in private-regions reports.
 *
 * The page captured is the topmost same-origin document (a same-origin iframe's actions are captured with the
 * whole page and top-level boxes). A cross-origin frame captures its own document; it cannot read where it is,
 * so its parent frame's content script posts it its offset and the tab's viewport size (C.MSG.FRAME_OFFSET over
 * window.postMessage: asked for at load and on mouseover, pushed again when the parent scrolls, resizes or moves).
 * Each frame also tells its parent its chrome frameId (C.MSG.FRAME_ID, from the worker's HELLO reply): the
 * parent's regions report names each iframe box by it, and lib/regions.js places the child's report there.
 * Only a frame's own parent is believed for its offset, only its own child frames for their ids.
 *
 * Classic script: defines globalThis.WebTasks.frames (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const FRAME_OFFSET = C.MSG.FRAME_OFFSET;
  const FRAME_ID = C.MSG.FRAME_ID;
  const OFFSET_REQUEST_INTERVAL_MS = 250;
  const OFFSET_PUSH_DELAY_MS = 100;

  /** The topmost window of `w`'s chain that `w` can read (same origin): its page is captured. */
  function findCaptureWindow(w) {
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

  /** A parent's FRAME_OFFSET answer as {x, y, viewportWidth, viewportHeight}, or null unless all are numbers. */
  function parseOffset(data) {
    const numbers = ["x", "y", "viewportWidth", "viewportHeight"].map((k) => Number(data[k]));
    if (!numbers.every(Number.isFinite)) return null;
    return { x: numbers[0], y: numbers[1], viewportWidth: numbers[2], viewportHeight: numbers[3] };
  }

  /** Every window below `top` (itself included) that can be read from here (same origin), depth first. */
  function sameOriginWindows(top) {
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
          // cross-origin: its own content script does its part
        }
      }
    })(top);
    return found;
  }

  /**
   * The geometry of the frame of `window` (the content script's own). deps: {window, dom (lib/dom.js),
   * selectors() → the configured private selectors, shadowRootOf(el)? → its open or closed shadow root}.
   */
  function createFrames({ window, dom, selectors = () => [], shadowRootOf = undefined }) {
    const captureWindow = findCaptureWindow(window);
    let received = null; // {x, y, viewportWidth, viewportHeight} from the parent, in a cross-origin frame
    let lastOffsetRequest = 0;
    let pushTimer = null;
    let frameId = null; // this frame's chrome frameId (HELLO reply): told to the parent frame
    const childFrameIds = new Map(); // child frame window → its frameId, as the child told (names our iframe boxes)

    function isCrossOrigin() {
      return captureWindow !== window.top;
    }

    /** Offset of the captured window's viewport in the top viewport (0,0 unless in a cross-origin frame). */
    function rootOffset() {
      if (!isCrossOrigin()) return { x: 0, y: 0 };
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
      const inRoot = dom.offsetToRoot(window.document);
      const base = rootOffset();
      return { x: inRoot.x + base.x, y: inRoot.y + base.y };
    }

    /** The tab's viewport size (the parent's word for it in a cross-origin frame, once it answered). */
    function viewport() {
      if (!isCrossOrigin()) return { width: window.top.innerWidth, height: window.top.innerHeight };
      if (received && received.viewportWidth > 0) return { width: received.viewportWidth, height: received.viewportHeight };
      return { width: captureWindow.innerWidth, height: captureWindow.innerHeight };
    }

    /** A point of this frame's viewport in the top viewport. */
    function toTop(clientX, clientY) {
      const o = topOffset();
      return { x: clientX + o.x, y: clientY + o.y };
    }

    // A child frame on another origin cannot read where it is on the page: its parent's script tells it.
    function answerChild(child) {
      const iframe = dom.frameElements(window.document).find((f) => f.contentWindow === child);
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
      for (const iframe of dom.frameElements(window.document)) {
        let sameOrigin = false;
        try {
          sameOrigin = !!iframe.contentDocument;
        } catch (err) {
          sameOrigin = false;
        }
        if (!sameOrigin && iframe.contentWindow) answerChild(iframe.contentWindow);
      }
    }

    /** Tell the cross-origin child frames their offsets again soon (this frame scrolled, resized or moved). */
    function schedulePush() {
      if (pushTimer === null && window.document.querySelector("iframe, frame")) pushTimer = setTimeout(pushOffsets, OFFSET_PUSH_DELAY_MS);
    }

    /** A cross-origin frame asks its parent for its offset (at most every OFFSET_REQUEST_INTERVAL_MS unless `force`). */
    function requestOffset(force) {
      if (captureWindow !== window || window === window.top) return;
      const now = Date.now();
      if (!force && now - lastOffsetRequest < OFFSET_REQUEST_INTERVAL_MS) return;
      lastOffsetRequest = now;
      window.parent.postMessage({ type: FRAME_OFFSET, request: true }, "*");
    }

    function acceptOffset(data) {
      const offset = parseOffset(data);
      if (!offset) return;
      received = offset;
      schedulePush(); // our own cross-origin children move with us
    }

    /** What a capture says about its frame. */
    function frameInfo() {
      return {
        isTop: window === window.top,
        crossOrigin: isCrossOrigin(),
        url: window.location.href,
        offset: topOffset(),
        offsetKnown: !isCrossOrigin() || received !== null || captureWindow !== window,
      };
    }

    /** The captured document's URL (the tab's, except in a cross-origin frame). */
    function pageUrl() {
      try {
        return captureWindow.location.href;
      } catch (err) {
        return window.location.href;
      }
    }

    function tellParentFrameId() {
      if (window !== window.top && frameId !== null) window.parent.postMessage({ type: FRAME_ID, frameId }, "*");
    }

    function askChildFrameIds() {
      for (const iframe of dom.frameElements(window.document)) {
        if (iframe.contentWindow) iframe.contentWindow.postMessage({ type: FRAME_ID, request: true }, "*");
      }
    }

    function acceptChildFrameId(source, data) {
      if (!Number.isInteger(data.frameId) || data.frameId <= 0) return;
      if (dom.frameElements(window.document).some((f) => f.contentWindow === source)) childFrameIds.set(source, data.frameId);
    }

    /** The worker told this frame its frameId (HELLO reply): tell the parent, and ask the children for theirs. */
    function hello(id) {
      if (Number.isInteger(id)) {
        frameId = id;
        tellParentFrameId();
      }
      askChildFrameIds();
    }

    /**
     * This frame's private areas and iframe boxes in its own viewport: {url, viewport, rects, frames}
     * (lib/regions.js composes every frame's). `rects`: the private elements visible in this viewport
     * (same-origin subframes included); pass them when just measured. `fields`: also count the private fields
     * anywhere in the document (privateFields; step mode keeps an MHTML copy only without any), a walk of the
     * whole document. null when the document cannot be measured (going away): the worker masks this frame whole.
     */
    function regionsReport(list, rects, fields = false) {
      const privateSelectors = Array.isArray(list) && list.length ? list : selectors();
      const doc = window.document;
      const size = { width: window.innerWidth, height: window.innerHeight };
      let own = rects;
      if (!own) {
        try {
          own = dom.privateRects(doc, { privateSelectors, viewport: size });
        } catch (err) {
          return null;
        }
      }
      const frames = [];
      let unnamed = false;
      for (const iframe of dom.frameElements(doc)) {
        const box = dom.contentBox(iframe);
        const child = iframe.contentWindow;
        const id = child && childFrameIds.has(child) ? childFrameIds.get(child) : null;
        if (id === null) unnamed = true;
        frames.push({ frameId: id, x: box.x, y: box.y, width: box.width, height: box.height });
      }
      if (unnamed) askChildFrameIds();
      const report = { url: window.location.href, viewport: size, rects: own.map((r) => ({ x: r.x, y: r.y, width: r.width, height: r.height })), frames };
      // Closed shadow roots too (shadowRootOf: chrome.dom.openOrClosedShadowRoot): the page's raw dump depends on it.
      if (fields) report.privateFields = dom.privateElements(doc, { privateSelectors, shadowRootOf }).length;
      return report;
    }

    /** A window message about frames (FRAME_ID, FRAME_OFFSET), asked or answered; other messages are ignored. */
    function onMessage(event) {
      const data = event.data;
      if (!data || typeof data !== "object") return;
      if (data.type === FRAME_ID) {
        if (data.request) {
          if (event.source === window.parent && window.parent !== window) tellParentFrameId();
        } else if (event.source && event.source !== window) acceptChildFrameId(event.source, data);
      } else if (data.type === FRAME_OFFSET) {
        if (data.request) {
          if (event.source && event.source !== window) answerChild(event.source);
        } else if (event.source === window.parent && window.parent !== window) acceptOffset(data);
      }
    }

    return {
      captureWindow, isCrossOrigin, rootOffset, topOffset, viewport, toTop, schedulePush, requestOffset, frameInfo,
      pageUrl, hello, regionsReport, onMessage,
      received: () => received,
      sameOriginWindows: () => sameOriginWindows(captureWindow),
    };
  }

  const api = { OFFSET_REQUEST_INTERVAL_MS, OFFSET_PUSH_DELAY_MS, findCaptureWindow, parseOffset, sameOriginWindows, createFrames };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.frames = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
