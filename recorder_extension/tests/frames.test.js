// lib/frames.js: the document a frame captures, its offset in the tab's viewport (told by its parent when on
// another origin), the frame ids that name its iframes. Cross-origin windows are fakes whose document throws.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { JSDOM } = require("jsdom");

const C = require("../lib/constants.js");
const dom = require("../lib/dom.js");
const frames = require("../lib/frames.js");

/** A window of another origin: reading its document throws, messages to it are kept. */
function foreignWindow() {
  const w = { posted: [], postMessage: (data, origin) => w.posted.push([data, origin]) };
  Object.defineProperty(w, "document", { get: () => { throw new Error("SecurityError: cross-origin frame"); } });
  w.parent = w;
  w.top = w;
  return w;
}

/** A frame window below `parent` with its own (jsdom) document at `url`. */
function frameWindow(parent, url, { width = 300, height = 200, html = "<p>frame</p>" } = {}) {
  const { window } = new JSDOM(`<!doctype html><html><body>${html}</body></html>`, { url });
  return {
    parent, top: parent.top, document: window.document, location: { href: url }, innerWidth: width, innerHeight: height,
    frames: { length: 0 }, posted: [], postMessage(data, origin) { this.posted.push([data, origin]); },
  };
}

const message = (source, data) => ({ source, data });

test("findCaptureWindow: the topmost window of the chain on the same origin", () => {
  const top = { document: {} };
  top.parent = top;
  const mid = { parent: top, document: {} };
  const leaf = { parent: mid, document: {} };
  assert.equal(frames.findCaptureWindow(leaf), top);
  assert.equal(frames.findCaptureWindow(top), top);
  const foreign = foreignWindow();
  const below = { parent: foreign, document: {} };
  const deeper = { parent: below, document: {} };
  assert.equal(frames.findCaptureWindow(deeper), below, "stops below a cross-origin parent");
  assert.equal(frames.findCaptureWindow(below), below);
});

test("parseOffset: four finite numbers (numeric strings too), else nothing", () => {
  assert.deepEqual(frames.parseOffset({ x: 10, y: "20", viewportWidth: 1280, viewportHeight: 800 }), {
    x: 10, y: 20, viewportWidth: 1280, viewportHeight: 800,
  });
  assert.equal(frames.parseOffset({ x: 10, y: 20, viewportWidth: 1280 }), null);
  assert.equal(frames.parseOffset({ x: "left", y: 20, viewportWidth: 1280, viewportHeight: 800 }), null);
  assert.equal(frames.parseOffset({ x: Infinity, y: 20, viewportWidth: 1280, viewportHeight: 800 }), null);
});

test("sameOriginWindows: every readable window below, depth first, cross-origin subtrees skipped", () => {
  const make = (children) => ({ document: {}, frames: Object.assign([...children], { length: children.length }) });
  const leaf = make([]);
  const foreign = foreignWindow();
  foreign.frames = { length: 1, 0: make([]) };
  const mid = make([leaf]);
  const top = make([mid, foreign]);
  assert.deepEqual(frames.sameOriginWindows(top), [top, mid, leaf]);
});

test("a cross-origin frame: offset and viewport unknown until its parent answers, then in the top viewport", () => {
  const parent = foreignWindow();
  const win = frameWindow(parent, "https://ads.test/frame");
  const geometry = frames.createFrames({ window: win, dom });
  assert.equal(geometry.captureWindow, win, "it captures its own document");
  assert.equal(geometry.isCrossOrigin(), true);
  assert.deepEqual(geometry.viewport(), { width: 300, height: 200 }, "its own size until told the tab's");
  assert.deepEqual(geometry.frameInfo(), {
    isTop: false, crossOrigin: true, url: "https://ads.test/frame", offset: { x: 0, y: 0 }, offsetKnown: false,
  });
  assert.equal(geometry.pageUrl(), "https://ads.test/frame");

  geometry.requestOffset(true);
  geometry.requestOffset(false); // too soon after the last request
  assert.deepEqual(parent.posted, [[{ type: C.MSG.FRAME_OFFSET, request: true }, "*"]]);
  geometry.requestOffset(true);
  assert.equal(parent.posted.length, 2, "forced");

  const offset = { type: C.MSG.FRAME_OFFSET, x: 100, y: 50, viewportWidth: 1280, viewportHeight: 800 };
  geometry.onMessage(message(win, { ...offset, x: 1 })); // the frame's own page cannot move it
  geometry.onMessage(message({}, { ...offset, x: 2 })); // nor another window
  geometry.onMessage(message(parent, { ...offset, y: "down" })); // nor a malformed answer
  assert.equal(geometry.received(), null);
  geometry.onMessage(message(parent, offset));
  assert.deepEqual(geometry.received(), { x: 100, y: 50, viewportWidth: 1280, viewportHeight: 800 });
  assert.deepEqual(geometry.toTop(5, 6), { x: 105, y: 56 });
  assert.deepEqual(geometry.viewport(), { width: 1280, height: 800 });
  assert.equal(geometry.frameInfo().offsetKnown, true);
});

test("a frame tells its parent its frameId once known, and again when the parent asks", () => {
  const parent = foreignWindow();
  const win = frameWindow(parent, "https://ads.test/frame");
  const geometry = frames.createFrames({ window: win, dom });
  geometry.onMessage(message(parent, { type: C.MSG.FRAME_ID, request: true }));
  assert.deepEqual(parent.posted, [], "not known yet");
  geometry.hello(7);
  geometry.onMessage(message(parent, { type: C.MSG.FRAME_ID, request: true }));
  geometry.onMessage(message({}, { type: C.MSG.FRAME_ID, request: true })); // not its parent: no answer
  const told = { type: C.MSG.FRAME_ID, frameId: 7 };
  assert.deepEqual(parent.posted, [[told, "*"], [told, "*"]]);
});

test("a same-origin frame below a cross-origin one takes its offset from the script of the window it captures", () => {
  const foreign = foreignWindow();
  const mid = frameWindow(foreign, "https://ads.test/outer", { width: 640, height: 480 });
  mid.WebTasks = { capture: { received: () => ({ x: 30, y: 40, viewportWidth: 1280, viewportHeight: 800 }) } };
  const leaf = frameWindow(mid, "https://ads.test/inner");
  const geometry = frames.createFrames({ window: leaf, dom });
  assert.equal(geometry.captureWindow, mid);
  assert.deepEqual(geometry.rootOffset(), { x: 30, y: 40 });
  assert.deepEqual(geometry.toTop(1, 2), { x: 31, y: 42 });
  assert.deepEqual(geometry.viewport(), { width: 640, height: 480 }, "the captured window's size");
  assert.equal(geometry.pageUrl(), "https://ads.test/outer");
  assert.equal(geometry.frameInfo().offsetKnown, true, "its capture window's script knows it");
  geometry.requestOffset(true);
  assert.deepEqual(mid.posted, [], "only the frame that captures its own document asks");
});

test("the top page names its iframes' boxes by the frameIds its children told, and asks the unnamed ones", () => {
  const html = '<iframe id="a"></iframe><iframe id="b"></iframe><input type="password" id="pw">';
  const { window } = new JSDOM(`<!doctype html><html><body>${html}</body></html>`, { url: "https://shop.test/" });
  const doc = window.document;
  const [a, b] = [doc.getElementById("a"), doc.getElementById("b")];
  const asked = [];
  for (const iframe of [a, b]) iframe.contentWindow.postMessage = (data) => asked.push([iframe.id, data]);
  const geometry = frames.createFrames({ window, dom, selectors: () => [] });
  assert.equal(geometry.isCrossOrigin(), false);
  assert.deepEqual(geometry.viewport(), { width: window.innerWidth, height: window.innerHeight });

  geometry.hello(undefined); // the top frame has nobody to tell; it asks its children
  assert.deepEqual(asked.map(([id, data]) => [id, data.type, data.request]), [["a", C.MSG.FRAME_ID, true], ["b", C.MSG.FRAME_ID, true]]);
  geometry.onMessage(message(a.contentWindow, { type: C.MSG.FRAME_ID, frameId: 5 }));
  geometry.onMessage(message(window, { type: C.MSG.FRAME_ID, frameId: 6 })); // not one of its frames
  geometry.onMessage(message(b.contentWindow, { type: C.MSG.FRAME_ID, frameId: 0 })); // not a subframe's id
  asked.length = 0;
  const report = geometry.regionsReport(null, null, true);
  assert.deepEqual(report.frames.map((f) => f.frameId), [5, null]);
  assert.deepEqual(asked.map(([id]) => id), ["a", "b"], "an unnamed box makes it ask again");
  assert.equal(report.privateFields, 1);
  assert.equal(report.url, "https://shop.test/");
});
