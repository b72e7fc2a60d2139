/*
 * The private regions of a whole tab, for the service worker (docs/recorder-privacy.md).
 *
 * A screenshot shows every frame of the tab, so it must be masked with the private areas of every frame: the top
 * page, same-origin frames and cross-origin frames, nested. No frame can see all of them (a cross-origin frame
 * cannot read its parent, nor the parent its content), so the worker asks each frame's content script
 * (chrome.tabs.sendMessage with its frameId, C.MSG.REGIONS) for a report in the frame's own viewport coordinates:
 *   {viewport: {width, height}, rects: [{x, y, width, height}], frames: [{frameId|null, x, y, width, height}]}
 * `rects` are its private elements (same-origin subframes included), `frames` the content boxes of its iframe
 * elements with the frameId each child told it (C.MSG.FRAME_ID over postMessage; null when unknown).
 * `compose` places every frame in the tab viewport through the chain of iframe boxes (webNavigation parent ids),
 * clips each frame's rects to its box, and returns them all in tab-viewport CSS px.
 *
 * Unknown is masked, never shown: a frame that did not answer is blacked out whole; a frame with private areas
 * that cannot be placed blacks out every box of its parent where it may be (all of them when none is unknown).
 * The pure functions are exported for node tests.
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");
  // A frame that does not answer in time is masked whole (one that has no content script fails at once; a busy
  // renderer under load may take seconds to walk its DOM).
  const REPORT_TIMEOUT_MS = 5000;

  function finite(r) {
    return Boolean(r) && [r.x, r.y, r.width, r.height].every(Number.isFinite);
  }

  /** The intersection of two rects, or null when they do not overlap. */
  function intersect(a, b) {
    const left = Math.max(a.x, b.x);
    const top = Math.max(a.y, b.y);
    const right = Math.min(a.x + a.width, b.x + b.width);
    const bottom = Math.min(a.y + a.height, b.y + b.height);
    return right > left && bottom > top ? { x: left, y: top, width: right - left, height: bottom - top } : null;
  }

  /** `r` moved by (dx, dy) and clipped to `clip`; null when nothing of it is inside. */
  function place(r, dx, dy, clip) {
    if (!finite(r) || r.width <= 0 || r.height <= 0) return null;
    return intersect({ x: r.x + dx, y: r.y + dy, width: r.width, height: r.height }, clip);
  }

  /**
   * Every private rect of the tab in tab-viewport CSS px.
   * frames: webNavigation.getAllFrames entries [{frameId, parentFrameId}]; reports: Map frameId → report (missing:
   * the frame did not answer). Returns {rects, viewport}: viewport is the top frame's, null when it did not answer
   * (then nothing of the tab can be placed: the caller must not store the screenshot).
   */
  function compose(frames, reports) {
    const byId = new Map((frames || []).map((f) => [f.frameId, f]));
    if (!byId.has(0)) byId.set(0, { frameId: 0, parentFrameId: -1 });
    const top = reports.get(0);
    const viewport = top && top.viewport && top.viewport.width > 0 && top.viewport.height > 0 ? top.viewport : null;
    if (!viewport) return { rects: [], viewport: null };
    const placed = new Map([[0, { x: 0, y: 0, clip: { x: 0, y: 0, width: viewport.width, height: viewport.height } }]]);

    /** Where frame `id` is: {x, y, clip} (its viewport origin and visible box in the tab), or null. */
    function where(id, seen = new Set()) {
      if (placed.has(id)) return placed.get(id);
      const frame = byId.get(id);
      if (!frame || seen.has(id)) return null;
      seen.add(id);
      const parent = where(frame.parentFrameId, seen);
      const report = reports.get(frame.parentFrameId);
      const boxes = parent && report ? (report.frames || []).filter((b) => b.frameId === id) : [];
      // Two iframe elements claiming one frameId (a page posting FRAME_ID itself): not placed, masked where it may be.
      const at = boxes.length === 1 && finite(boxes[0]) ? boxes[0] : null;
      const clip = at && place(at, parent.x, parent.y, parent.clip);
      const result = clip ? { x: parent.x + at.x, y: parent.y + at.y, clip } : null;
      placed.set(id, result);
      return result;
    }

    /** Where frame `id` may be when it cannot be placed: the boxes of its parent that no known frame claims. */
    function mayBe(id, seen = new Set()) {
      const frame = byId.get(id);
      if (!frame || seen.has(id)) return [placed.get(0).clip];
      seen.add(id);
      const spot = where(id);
      if (spot) return [spot.clip];
      const parent = where(frame.parentFrameId);
      const report = reports.get(frame.parentFrameId);
      if (!parent || !report) return frame.parentFrameId >= 0 ? mayBe(frame.parentFrameId, seen) : [placed.get(0).clip];
      const all = (report.frames || []).filter(finite);
      const unknown = all.filter((b) => b.frameId === null || b.frameId === undefined || !byId.has(b.frameId));
      const candidates = unknown.length ? unknown : all;
      if (!candidates.length) return [parent.clip];
      return candidates.map((b) => place(b, parent.x, parent.y, parent.clip)).filter(Boolean);
    }

    const rects = [];
    for (const id of byId.keys()) {
      const report = reports.get(id);
      if (!report) {
        rects.push(...mayBe(id)); // no answer: its content is unknown
        continue;
      }
      const own = (report.rects || []).filter(finite);
      if (!own.length) continue;
      const spot = where(id);
      if (spot) {
        for (const r of own) {
          const p = place(r, spot.x, spot.y, spot.clip);
          if (p) rects.push(p);
        }
      } else {
        rects.push(...mayBe(id));
      }
    }
    return { rects, viewport };
  }

  /**
   * Private rects (viewport CSS px) as device-pixel rects of an image `imageWidth × imageHeight` of a
   * viewport `viewport.width × viewport.height`, clipped to the image, rounded outwards.
   */
  function scaleRects(rects, viewport, imageWidth, imageHeight) {
    const sx = viewport && viewport.width > 0 ? imageWidth / viewport.width : 1;
    const sy = viewport && viewport.height > 0 ? imageHeight / viewport.height : sx;
    const out = [];
    for (const r of rects || []) {
      if (!r || ![r.x, r.y, r.width, r.height].every(Number.isFinite)) continue;
      const left = Math.max(0, Math.floor(r.x * sx));
      const top = Math.max(0, Math.floor(r.y * sy));
      const right = Math.min(imageWidth, Math.ceil((r.x + r.width) * sx));
      const bottom = Math.min(imageHeight, Math.ceil((r.y + r.height) * sy));
      if (right > left && bottom > top) out.push({ x: left, y: top, width: right - left, height: bottom - top });
    }
    return out;
  }

  /** Ask one frame's content script for its report; null when it does not answer (in time). */
  function askFrame(tabId, frameId, selectors, fields = false) {
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve(null), REPORT_TIMEOUT_MS)));
    const message = { target: C.TARGET.CONTENT, type: C.MSG.REGIONS, privateSelectors: selectors || [], fields };
    const ask = chrome.tabs
      .sendMessage(tabId, message, { frameId })
      .then((report) => (report && report.viewport ? report : null), () => null);
    return Promise.race([ask, timeout]).finally(() => clearTimeout(timer));
  }

  /**
   * The private rects of every frame of tab `tabId`, in tab-viewport CSS px: {rects, viewport, url} (url: the top
   * frame's; viewport null: the
   * top frame did not answer, or answered for another page than `topUrl` — nothing can be placed, do not store the
   * screenshot). `own` ({frameId, report}): the report the acting frame sent with its capture, taken at the moment
   * of the screenshot; it replaces that frame's answer (which may come from the next page after a link click).
   */
  async function collect(tabId, selectors, { own = null, topUrl = null } = {}) {
    let frames;
    try {
      frames = (await chrome.webNavigation.getAllFrames({ tabId })) || [];
    } catch {
      frames = [];
    }
    if (!frames.some((f) => f.frameId === 0)) frames.push({ frameId: 0, parentFrameId: -1 });
    const ownId = own && own.report && own.report.viewport ? own.frameId : null;
    const answers = await Promise.all(
      frames.map((f) => (f.frameId === ownId ? own.report : askFrame(tabId, f.frameId, selectors))),
    );
    const reports = new Map();
    frames.forEach((f, i) => answers[i] && reports.set(f.frameId, answers[i]));
    const top = reports.get(0);
    if (top && ownId !== 0 && topUrl && top.url && top.url !== topUrl) reports.delete(0);
    return { ...compose(frames, reports), url: reports.has(0) ? reports.get(0).url || null : null };
  }

  /**
   * Whether a frame of tab `tabId` holds a private field (password, data-private, a configured selector; anywhere in
   * its document or its shadow trees, closed ones too, not in view only) or might (a frame that does not answer, or
   * does not count them). An MHTML snapshot is the page's markup and text as the browser serializes it (shadow trees and
   * value attributes included; Chromium leaves typed values out): step mode keeps one only when this is false.
   */
  async function hasPrivateFields(tabId, selectors) {
    let frames;
    try {
      frames = (await chrome.webNavigation.getAllFrames({ tabId })) || [];
    } catch {
      frames = [];
    }
    if (!frames.some((f) => f.frameId === 0)) frames.push({ frameId: 0, parentFrameId: -1 });
    const answers = await Promise.all(frames.map((f) => askFrame(tabId, f.frameId, selectors, true)));
    return answers.some((report) => !report || report.privateFields !== 0);
  }

  const api = { compose, collect, hasPrivateFields, intersect, place, scaleRects, REPORT_TIMEOUT_MS };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.regions = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
