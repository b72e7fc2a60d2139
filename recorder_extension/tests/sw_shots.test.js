/* Screenshot scheduling without a user gesture: spacing for the quota, priorities, deadlines, fallbacks. */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { Shots, PRIORITY } = require("../lib/shots.js");
const { fakeClock, quiet } = require("./sw_fakes.js");

/** A fake `chrome` whose captureVisibleTab enforces the 2-per-second quota on the fake clock. */
function fakeChrome(clock, { activeTabs = [1], cdp = true, url = "https://a.test/" } = {}) {
  const calls = [];
  const chrome = {
    calls,
    url,
    tabs: {
      get: async (tabId) => ({ id: tabId, windowId: 1, active: activeTabs.includes(tabId), url: chrome.url }),
      captureVisibleTab: async () => {
        const recent = calls.filter((c) => c.kind === "visible" && clock.t - c.at < 1000);
        calls.push({ kind: "visible", at: clock.t });
        if (recent.length >= 2) throw new Error("This request exceeds the MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND quota.");
        return "data:image/png;base64," + Buffer.from(`shot@${clock.t}`).toString("base64");
      },
    },
    debugger: {
      attach: async () => {
        if (!cdp) throw new Error("Cannot attach");
        calls.push({ kind: "attach", at: clock.t });
      },
      sendCommand: async () => ({ data: Buffer.from(`cdp@${clock.t}`).toString("base64") }),
      detach: async () => calls.push({ kind: "detach", at: clock.t }),
    },
  };
  return chrome;
}

function setup(options) {
  const clock = fakeClock(T0);
  global.chrome = fakeChrome(clock, options);
  const shots = new Shots({ now: clock.now, sleep: async (ms) => clock.advance(ms), log: quiet });
  return { clock, shots, chrome: global.chrome };
}

const T0 = 10000; // the fake clock's start; no capture happened before it
const text = (bytes) => Buffer.from(bytes).toString();

test("spaced captures keep CAPTURE_SPACING_MS apart, so none hits the quota", async () => {
  const { shots, chrome } = setup();
  const results = await Promise.all([1, 2, 3, 4].map(() => shots.captureSpaced({ tabId: 1 })));
  const times = chrome.calls.map((c) => c.at);
  const spacing = C.TIMING.CAPTURE_SPACING_MS;
  assert.deepEqual(times, [T0, T0 + spacing, T0 + 2 * spacing, T0 + 3 * spacing]);
  assert.deepEqual(results.map(text), times.map((t) => `shot@${t}`));
  assert.equal(results[1].capturedAt, T0 + spacing);
});

test("higher priority goes first; a request still waiting at its deadline is dropped", async () => {
  const { shots, chrome } = setup();
  const frame = shots.later({ tabId: 1 }, T0 + 100, PRIORITY.FRAME);
  const late = shots.later({ tabId: 1 }, T0 + 200, PRIORITY.FRAME);
  const state = shots.later({ tabId: 1 }, T0 + 5000, PRIORITY.STATE);
  const [a, b, c] = await Promise.all([frame, late, state]);
  assert.equal(text(a), `shot@${T0}`);
  assert.equal(text(c), `shot@${T0 + 550}`, "the load screenshot overtakes the waiting frame");
  assert.equal(b, null);
  assert.match(shots.stats.lastFailure, /too late/);
  assert.equal(chrome.calls.length, 2);
});

test("a tab that is not visible is not captured (captureVisibleTab would show another tab)", async () => {
  const { shots, chrome } = setup({ activeTabs: [2] });
  assert.equal(await shots.later({ tabId: 1 }), null);
  assert.equal(chrome.calls.length, 0);
  assert.match(shots.stats.lastFailure, /not the visible tab/);
});

test("an action whose gesture capture failed gets a spaced one, else CDP, else none", async () => {
  const { shots, chrome } = setup();
  const failed = Promise.reject(new Error("MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND"));
  failed.catch(() => {});
  assert.equal(text(await shots.resolve(failed, { tabId: 1 })), `shot@${T0}`);
  assert.equal(shots.stats.spaced, 1);

  const hidden = setup({ activeTabs: [] });
  const viaCdp = await hidden.shots.resolve(Promise.reject(new Error("no gesture")), { tabId: 1 });
  assert.equal(text(viaCdp), `cdp@${T0}`);
  assert.deepEqual(hidden.chrome.calls.map((c) => c.kind), ["attach", "detach"], "detached right after");

  const nothing = setup({ activeTabs: [], cdp: false });
  assert.equal(await nothing.shots.resolve(Promise.reject(new Error("x")), { tabId: 1 }), null);
  assert.equal(nothing.shots.stats.failed, 1);
  assert.equal(chrome.calls.length, 1);
});

test("a quota error (gesture captures count too) is retried once a second later", async () => {
  const { shots, chrome } = setup();
  chrome.calls.push({ kind: "visible", at: T0 }, { kind: "visible", at: T0 }); // two gesture captures just now
  shots.lastAt = T0;
  const png = await shots.captureSpaced({ tabId: 1 });
  assert.equal(text(png), `shot@${T0 + 1550}`);
  assert.deepEqual(chrome.calls.slice(2).map((c) => c.at - T0), [550, 1550], "refused at 550, retried a second later");
});

test("a screenshot for a page the tab has left is refused without using the quota; the action's retries too", async () => {
  const { shots, chrome } = setup({ cdp: true });
  const png = await shots.captureSpaced({ tabId: 1, url: "https://a.test/" });
  assert.equal(png.capturedUrl, "https://a.test/");
  chrome.url = "https://b.test/"; // a link was followed
  await assert.rejects(shots.captureSpaced({ tabId: 1, url: "https://a.test/" }), /left https:\/\/a.test/);
  assert.equal(chrome.calls.filter((c) => c.kind === "visible").length, 1, "no quota used");
  const failedGesture = Promise.reject(new Error("no gesture"));
  failedGesture.catch(() => {});
  assert.equal(await shots.resolve(failedGesture, { tabId: 1, url: "https://a.test/" }), null, "nor a CDP screenshot of b.test");
  assert.equal(shots.stats.failed, 1);
});

test("CDP captures run one at a time: a second never loses its attachment to the first's detach", async () => {
  const { shots, chrome } = setup();
  let attached = 0;
  const log = [];
  chrome.debugger = {
    attach: async () => {
      if (attached) throw new Error("Another debugger is already attached to the tab with id: 1.");
      attached += 1;
      log.push("attach");
    },
    sendCommand: async () => {
      await new Promise((resolve) => setImmediate(resolve));
      if (!attached) throw new Error("Debugger is not attached to the tab with id: 1.");
      log.push("capture");
      return { data: Buffer.from("cdp").toString("base64") };
    },
    detach: async () => {
      attached -= 1;
      log.push("detach");
    },
  };
  const shotsTaken = await Promise.all([shots.captureCdp(1), shots.captureCdp(1), shots.captureCdp(1)]);
  assert.deepEqual(shotsTaken.map(text), ["cdp", "cdp", "cdp"]);
  assert.deepEqual(log, ["attach", "capture", "detach", "attach", "capture", "detach", "attach", "capture", "detach"]);
});
