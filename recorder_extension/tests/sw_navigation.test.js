/*
 * lib/navigation.js: the worker's webNavigation and tabs listeners, over a real Recorder and store, with a fake
 * chrome (its events are fired by calling the registered listeners) and a fake spaced screenshot (shotLater).
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Recorder } = require("../lib/recorder.js");
const { PRIORITY } = require("../lib/shots.js");
const { Navigation, activeTabs, STATE_SHOT_DEADLINE_MS } = require("../lib/navigation.js");
const { FakeServer, freshStore, fakeClock, sha256, quiet } = require("./sw_fakes.js");

const A = "https://a.test/page-a.html";
const B = "https://a.test/page-b.html";
const TAB = 3;
const WINDOW = 1;

/** A fake chrome: listeners by event name, tabs by id. */
function fakeChrome(tabs) {
  const listeners = {};
  const event = (name) => ({ addListener: (fn) => (listeners[name] = fn) });
  return {
    listeners,
    webNavigation: { onCommitted: event("onCommitted"), onHistoryStateUpdated: event("onHistoryStateUpdated"), onCompleted: event("onCompleted") },
    tabs: {
      onCreated: event("onCreated"), onRemoved: event("onRemoved"), onUpdated: event("onUpdated"), onActivated: event("onActivated"),
      get: async (tabId) => {
        if (!tabs.has(tabId)) throw new Error(`No tab with id: ${tabId}`);
        return tabs.get(tabId);
      },
      query: async ({ lastFocusedWindow }) => [...tabs.values()].filter((t) => t.active && (!lastFocusedWindow || t.focused)),
    },
  };
}

async function setup({ recording = true } = {}) {
  const ctx = { server: new FakeServer(), store: await freshStore(), kv: new Kv(new MemoryArea()), tabsKv: new Kv(new MemoryArea()), clock: fakeClock() };
  let ids = 0;
  ctx.tabs = new Map([[TAB, { id: TAB, windowId: WINDOW, active: true, focused: true, url: A }]]);
  ctx.chrome = fakeChrome(ctx.tabs);
  // The uploader stays idle: every turn stays in the store for the test to read.
  const uploader = { kick: async () => null };
  const recorder = new Recorder({
    kv: ctx.kv, tabsKv: ctx.tabsKv, store: ctx.store, uploader, now: ctx.clock.now, uuid: () => `id-${++ids}`,
    log: quiet, userAgent: "test", timezoneOffsetMinutes: 0, activeTabs: () => activeTabs(ctx.chrome),
  });
  ctx.recorder = recorder;
  ctx.shots = [];
  ctx.slept = [];
  ctx.png = new Uint8Array([7, 7]);
  ctx.navigation = new Navigation({
    ready: Promise.resolve({ recorder }), kv: ctx.kv, chrome: ctx.chrome, now: ctx.clock.now, log: quiet,
    sleep: async (ms) => ctx.slept.push(ms),
    shotLater: async (tab, deadline, priority) => {
      ctx.shots.push({ tab, deadline, priority });
      return { png: ctx.png, at: ctx.clock.t, url: tab.url };
    },
  });
  ctx.navigation.listen();
  if (recording) {
    const started = await recorder.command("start", { serverUrl: "http://server.test", token: "secret", project: "alpha" });
    assert.equal(started.ok, true, started.error);
    ctx.session = await recorder.session();
  }
  ctx.fire = (name, ...args) => ctx.chrome.listeners[name](...args);
  ctx.settled = () => ctx.navigation.inFlight();
  return ctx;
}

const details = (ctx, url, more = {}) => ({
  tabId: TAB, frameId: 0, url, transitionType: "link", transitionQualifiers: [], timeStamp: ctx.clock.t, ...more,
});

async function turns(ctx, intent) {
  const records = await ctx.store.readyTurns(ctx.session.clientId, 100, Infinity);
  return records.map((r) => r.turn).filter((turn) => !intent || turn.intent === intent);
}

test("listen registers every webNavigation and tabs listener the worker needs", async () => {
  const ctx = await setup({ recording: false });
  assert.deepEqual(Object.keys(ctx.chrome.listeners).sort(), [
    "onActivated", "onCommitted", "onCompleted", "onCreated", "onHistoryStateUpdated", "onRemoved", "onUpdated",
  ]);
});

test("a committed load and its completion, fired back to back: one load turn with its page's screenshot", async () => {
  const ctx = await setup();
  // Handled in the order they fired: onCompleted finds the load that onCommitted is still storing.
  ctx.fire("onCommitted", details(ctx, A));
  ctx.fire("onCompleted", details(ctx, A));
  await ctx.settled();
  const [load] = await turns(ctx, "load");
  assert.equal(load.arguments.properties.url, A);
  assert.equal(load.screenshot, sha256(ctx.png));
  assert.deepEqual(ctx.shots, [{ tab: { tabId: TAB, windowId: WINDOW, url: A }, deadline: ctx.clock.t + STATE_SHOT_DEADLINE_MS, priority: PRIORITY.STATE }]);
  const record = await ctx.store.getTurn(load.client_id);
  assert.equal(record.readyAt, 0, "released for upload once it has its screenshot");
});

test("a load's screenshot is taken only once its page has painted (before, the tab may show the previous page)", async () => {
  const ctx = await setup();
  const order = [];
  let paint;
  ctx.navigation.d.painted = (tabId) => {
    order.push(`painted? ${tabId}`);
    return new Promise((resolve) => (paint = resolve));
  };
  const shotLater = ctx.navigation.d.shotLater;
  ctx.navigation.d.shotLater = async (...args) => (order.push("shot"), shotLater(...args));
  ctx.fire("onCommitted", details(ctx, B));
  ctx.fire("onCompleted", details(ctx, B));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(order, [`painted? ${TAB}`], "no screenshot before the page has painted");
  paint({ painted: true, url: B });
  await ctx.settled();
  assert.deepEqual(order, [`painted? ${TAB}`, "shot"]);
  const [load] = await turns(ctx, "load");
  assert.equal(load.screenshot, sha256(ctx.png));
});

test("subframes, tabs that are not tabs and pages that are not web pages make no load", async () => {
  const ctx = await setup();
  ctx.fire("onCommitted", details(ctx, A, { frameId: 2 }));
  ctx.fire("onCommitted", details(ctx, A, { tabId: -1 }));
  ctx.fire("onCommitted", details(ctx, "chrome://newtab/"));
  ctx.fire("onHistoryStateUpdated", details(ctx, "chrome-extension://x/page.html"));
  ctx.fire("onCompleted", details(ctx, A, { frameId: 2 }));
  await ctx.settled();
  assert.deepEqual(await turns(ctx, "load"), []);
  assert.deepEqual(ctx.shots, []);
});

test("a load completed in a background tab gets no screenshot now: it waits for a stand-in", async () => {
  const ctx = await setup();
  ctx.tabs.set(TAB, { ...ctx.tabs.get(TAB), active: false });
  ctx.fire("onCommitted", details(ctx, A));
  ctx.fire("onCompleted", details(ctx, A));
  await ctx.settled();
  assert.deepEqual(ctx.shots, []);
  const [record] = (await ctx.store.readyTurns(ctx.session.clientId, 100, Infinity)).filter((r) => r.turn.intent === "load");
  assert.ok(record.readyAt > ctx.clock.t, "held back");
  assert.equal(record.turn.screenshot, undefined);
});

test("a single-page app's URL change is a load screenshotted once the URL has been quiet", async () => {
  const ctx = await setup();
  ctx.fire("onCommitted", details(ctx, A));
  ctx.fire("onCompleted", details(ctx, A));
  await ctx.settled();
  ctx.clock.advance(3000);
  ctx.fire("onHistoryStateUpdated", details(ctx, `${A}?view=list`));
  await ctx.settled();
  assert.deepEqual(ctx.slept, [C.TIMING.HISTORY_COALESCE_MS]);
  const loads = await turns(ctx, "load");
  assert.deepEqual(loads.map((t) => t.arguments.properties.url), [A, `${A}?view=list`]);
  assert.equal(ctx.shots[1].tab.url, `${A}?view=list`);
  assert.equal(loads[1].screenshot, sha256(ctx.png));
  ctx.fire("onHistoryStateUpdated", details(ctx, `${A}?view=list#top`)); // the same document: no navigation
  await ctx.settled();
  assert.equal((await turns(ctx, "load")).length, 2);
});

test("tab events are timed when they fire, not when their turn is stored", async () => {
  const ctx = await setup();
  const firedAt = ctx.clock.t;
  ctx.fire("onCreated", { id: 9, pendingUrl: B, url: "" });
  ctx.fire("onRemoved", 9);
  ctx.clock.advance(5000); // before the queued handlers ran
  await ctx.settled();
  const [created] = await turns(ctx, "tabcreate");
  const [removed] = await turns(ctx, "tabremove");
  assert.equal(created.arguments.properties.tabId, 9);
  assert.equal(created.arguments.metadata.url, B);
  const expected = (firedAt - ctx.session.startedAt) / 1000;
  assert.equal(created.timestamp, expected);
  assert.equal(removed.timestamp, expected);
});

test("switching tabs: a tabswitch from the window's previous tab with the new page's screenshot; the same tab again, none", async () => {
  const ctx = await setup();
  ctx.tabs.set(TAB, { ...ctx.tabs.get(TAB), active: false });
  ctx.tabs.set(4, { id: 4, windowId: WINDOW, active: true, url: B });
  ctx.fire("onActivated", { tabId: 4, windowId: WINDOW });
  ctx.fire("onActivated", { tabId: 4, windowId: WINDOW });
  await ctx.settled();
  const switches = await turns(ctx, "tabswitch");
  assert.equal(switches.length, 1, "activating the active tab again is no switch");
  const [turn] = switches;
  assert.equal(turn.arguments.properties.tabId, 4);
  assert.equal(turn.arguments.properties.tabIdOrigin, TAB);
  assert.equal(turn.screenshot, sha256(ctx.png));
  assert.deepEqual(ctx.shots.map((s) => [s.tab, s.priority]), [[{ tabId: 4, windowId: WINDOW, url: B }, PRIORITY.STATE]]);
  assert.equal((await ctx.kv.get(C.STORAGE.LAST_TAB)).tabId, 4);
});

test("while not recording nothing is recorded, but the tab's document URL and the active tabs are still followed", async () => {
  const ctx = await setup({ recording: false });
  ctx.fire("onCommitted", details(ctx, A));
  ctx.fire("onActivated", { tabId: TAB, windowId: WINDOW });
  ctx.fire("onUpdated", TAB, { url: B });
  await ctx.settled();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(await ctx.store.countPending(), 0);
  const info = await ctx.recorder.tabInfo(TAB);
  assert.equal(info.docUrl, A);
  assert.equal(info.url, B);
  assert.equal((await ctx.kv.get(C.STORAGE.LAST_TAB)).tabId, TAB);
});

test("inFlight settles only once the screenshots being taken are attached (stop waits for them)", async () => {
  const ctx = await setup();
  let release;
  const pending = new Promise((resolve) => (release = resolve));
  ctx.navigation.d.shotLater = async (tab) => {
    await pending;
    return { png: ctx.png, at: ctx.clock.t, url: tab.url };
  };
  ctx.fire("onCommitted", details(ctx, A));
  ctx.fire("onCompleted", details(ctx, A));
  let settled = false;
  const waiting = ctx.navigation.inFlight().then(() => (settled = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(settled, false);
  release();
  await waiting;
  assert.equal((await turns(ctx, "load"))[0].screenshot, sha256(ctx.png));
  assert.equal(ctx.navigation.followUps.size, 0);
});

test("a failing handler is logged and does not stop the events after it", async () => {
  const ctx = await setup();
  const warned = [];
  ctx.navigation.d.log = { warn: (...args) => warned.push(args[0]) };
  ctx.recorder.recordTab = async () => {
    throw new Error("storage full");
  };
  ctx.fire("onCreated", { id: 9, url: B });
  ctx.fire("onCommitted", details(ctx, A));
  await ctx.settled();
  assert.deepEqual(warned, ["event not recorded"]);
  assert.equal((await turns(ctx, "load")).length, 1);
});

test("activeTabs: the active tab of every window, the last focused window's first", async () => {
  const tabs = new Map([
    [1, { id: 1, windowId: 10, active: true }], [2, { id: 2, windowId: 20, active: true, focused: true }],
    [3, { id: 3, windowId: 20, active: false }],
  ]);
  assert.deepEqual(await activeTabs(fakeChrome(tabs)), [{ tabId: 2, windowId: 20 }, { tabId: 1, windowId: 10 }]);
});
