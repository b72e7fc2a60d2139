/* The private regions of a tab: frame reports composed into tab-viewport coordinates (lib/regions.js). */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { compose, collect, hasPrivateFields } = require("../lib/regions.js");

const VIEWPORT = { width: 1280, height: 800 };
const rect = (x, y, width, height) => ({ x, y, width, height });

/** A report of a frame: its private rects and its iframe boxes, in its own viewport. */
function report(rects, frames = [], viewport = VIEWPORT, url = "http://top.test/") {
  return { url, viewport, rects, frames };
}

test("the top page's rects stay where they are; a cross-origin frame's move by its iframe's content box", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 7, parentFrameId: 0 }];
  const reports = new Map([
    [0, report([rect(10, 20, 100, 30)], [{ frameId: 7, ...rect(200, 300, 400, 200) }])],
    [7, report([rect(5, 6, 50, 20)], [], { width: 400, height: 200 })],
  ]);
  const { rects, viewport } = compose(frames, reports);
  assert.deepEqual(viewport, VIEWPORT);
  assert.deepEqual(rects, [rect(10, 20, 100, 30), rect(205, 306, 50, 20)]);
});

test("nested frames add up their offsets and are clipped by every iframe box on the way", () => {
  const frames = [
    { frameId: 0, parentFrameId: -1 },
    { frameId: 3, parentFrameId: 0 },
    { frameId: 9, parentFrameId: 3 },
  ];
  const reports = new Map([
    [0, report([], [{ frameId: 3, ...rect(100, 100, 300, 300) }])],
    // frame 9 sits at (250, 250) in frame 3 and is 200 × 200, but frame 3 shows only up to (300, 300) of it
    [3, report([rect(-10, -10, 30, 30)], [{ frameId: 9, ...rect(250, 250, 200, 200) }], { width: 300, height: 300 })],
    [9, report([rect(0, 0, 100, 100), rect(60, 60, 10, 10)], [], { width: 200, height: 200 })],
  ]);
  const { rects } = compose(frames, reports);
  assert.deepEqual(rects, [
    rect(100, 100, 20, 20), // frame 3's rect, clipped to frame 3's box
    rect(350, 350, 50, 50), // frame 9's first rect: at 100+250, clipped to frame 3's box (ends at 400)
  ]); // frame 9's second rect (at 410, 410) is outside frame 3's box: not visible, nothing to mask
});

test("rects scrolled outside the tab viewport are clipped to it", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }];
  const { rects } = compose(frames, new Map([[0, report([rect(1200, 780, 200, 100), rect(0, 900, 10, 10)])]]));
  assert.deepEqual(rects, [rect(1200, 780, 80, 20)]);
});

test("a frame that did not answer is masked whole, where its parent shows it", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 4, parentFrameId: 0 }];
  const reports = new Map([[0, report([], [{ frameId: 4, ...rect(50, 60, 70, 80) }])]]);
  assert.deepEqual(compose(frames, reports).rects, [rect(50, 60, 70, 80)]);
});

test("a frame with private areas that its parent cannot name is masked in every unnamed iframe box", () => {
  const frames = [
    { frameId: 0, parentFrameId: -1 },
    { frameId: 4, parentFrameId: 0 },
    { frameId: 5, parentFrameId: 0 },
  ];
  const reports = new Map([
    [0, report([], [{ frameId: 4, ...rect(0, 0, 100, 100) }, { frameId: null, ...rect(500, 0, 100, 100) }, { frameId: null, ...rect(700, 0, 100, 100) }])],
    [4, report([], [], { width: 100, height: 100 })],
    [5, report([rect(1, 1, 2, 2)], [], { width: 100, height: 100 })],
  ]);
  assert.deepEqual(compose(frames, reports).rects, [rect(500, 0, 100, 100), rect(700, 0, 100, 100)]);
});

test("an unnamed frame without private areas masks nothing", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 5, parentFrameId: 0 }];
  const reports = new Map([
    [0, report([], [{ frameId: null, ...rect(500, 0, 100, 100) }])],
    [5, report([], [], { width: 100, height: 100 })],
  ]);
  assert.deepEqual(compose(frames, reports).rects, []);
});

test("two iframe boxes claiming one frameId place neither: the frame is masked in both", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 6, parentFrameId: 0 }];
  const reports = new Map([
    [0, report([], [{ frameId: 6, ...rect(0, 0, 50, 50) }, { frameId: 6, ...rect(100, 0, 50, 50) }])],
    [6, report([rect(0, 0, 1, 1)], [], { width: 50, height: 50 })],
  ]);
  assert.deepEqual(compose(frames, reports).rects, [rect(0, 0, 50, 50), rect(100, 0, 50, 50)]);
});

test("without the top frame's report nothing can be placed: no viewport", () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 2, parentFrameId: 0 }];
  const reports = new Map([[2, report([rect(0, 0, 5, 5)], [], { width: 10, height: 10 })]]);
  assert.deepEqual(compose(frames, reports), { rects: [], viewport: null });
});

/** A fake chrome: getAllFrames and per-frame content-script answers. */
function fakeChrome(frames, answers) {
  const asked = [];
  global.chrome = {
    webNavigation: { getAllFrames: async () => frames },
    tabs: {
      sendMessage: async (tabId, message, { frameId }) => {
        asked.push({ tabId, frameId, type: message.type, selectors: message.privateSelectors });
        const answer = answers[frameId];
        if (answer instanceof Error) throw answer;
        return answer;
      },
    },
  };
  return asked;
}

test("collect asks every frame except the acting one, whose report came with its capture", async () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 8, parentFrameId: 0 }];
  const asked = fakeChrome(frames, {
    0: report([rect(10, 10, 20, 20)], [{ frameId: 8, ...rect(100, 100, 200, 200) }]),
    8: report([rect(99, 99, 1, 1)], [], { width: 200, height: 200 }, "http://other.test/"),
  });
  const own = { frameId: 8, report: report([rect(1, 2, 3, 4)], [], { width: 200, height: 200 }, "http://other.test/") };
  const found = await collect(1, ["#secret"], { own, topUrl: "http://top.test/" });
  assert.deepEqual(asked, [{ tabId: 1, frameId: 0, type: C.MSG.REGIONS, selectors: ["#secret"] }]);
  assert.deepEqual(found.rects, [rect(10, 10, 20, 20), rect(101, 102, 3, 4)]);
});

test("collect refuses a top frame that already shows another page (a link was followed)", async () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }];
  fakeChrome(frames, { 0: report([], [], VIEWPORT, "http://top.test/next") });
  assert.equal((await collect(1, [], { topUrl: "http://top.test/" })).viewport, null);
  // ... unless the acting top frame sent its own report with the capture
  const own = { frameId: 0, report: report([rect(0, 0, 1, 1)]) };
  assert.deepEqual((await collect(1, [], { own, topUrl: "http://top.test/" })).rects, [rect(0, 0, 1, 1)]);
});

test("collect masks a frame whose content script fails to answer", async () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 3, parentFrameId: 0 }];
  fakeChrome(frames, { 0: report([], [{ frameId: 3, ...rect(5, 5, 10, 10) }]), 3: new Error("Could not establish connection") });
  assert.deepEqual((await collect(1, [])).rects, [rect(5, 5, 10, 10)]);
});

test("hasPrivateFields: any frame with a private field, or a frame that does not answer, says yes", async () => {
  const frames = [{ frameId: 0, parentFrameId: -1 }, { frameId: 4, parentFrameId: 0 }];
  const clean = { ...report([], []), privateFields: 0 };
  fakeChrome(frames, { 0: clean, 4: { ...clean } });
  assert.equal(await hasPrivateFields(1, []), false);
  fakeChrome(frames, { 0: clean, 4: { ...clean, privateFields: 2 } }); // e.g. a password field out of view
  assert.equal(await hasPrivateFields(1, []), true);
  fakeChrome(frames, { 0: clean, 4: new Error("Could not establish connection") });
  assert.equal(await hasPrivateFields(1, []), true);
});
