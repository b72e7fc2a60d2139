/*
 * Loads and tab switches that could not get their own screenshot (captureVisibleTab's quota, or the tab left the
 * page first) are held back for a stand-in: a later screenshot of the same tab and URL, never of another page.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");
const { Recorder } = require("../lib/recorder.js");
const { FakeServer, freshStore, fakeClock, sha256, quiet } = require("./sw_fakes.js");

const A = "https://a.test/hop-a.html";
const B = "https://a.test/hop-b.html";
const TAB = 3;

/** A recorder (a fresh worker) over the given stores; a second one over the same stores is a restarted worker. */
function makeRecorder(ctx) {
  let ids = ctx.ids || 0;
  const uploader = new Uploader({ store: ctx.store, kv: ctx.kv, fetch: ctx.server.fetch, now: ctx.clock.now, random: () => 0, log: quiet });
  return new Recorder({
    kv: ctx.kv, tabsKv: ctx.tabsKv, store: ctx.store, uploader, now: ctx.clock.now, uuid: () => `id-${(ctx.ids = ++ids)}`,
    log: quiet, userAgent: "test", timezoneOffsetMinutes: 0,
  });
}

async function setup() {
  const ctx = { server: new FakeServer(), store: await freshStore(), kv: new Kv(new MemoryArea()), tabsKv: new Kv(new MemoryArea()), clock: fakeClock() };
  ctx.recorder = makeRecorder(ctx);
  const started = await ctx.recorder.command("start", { serverUrl: "http://server.test", token: "secret", project: "alpha" });
  assert.equal(started.ok, true, started.error);
  ctx.session = await ctx.recorder.session();
  return ctx;
}

const load = (ctx, url, ms) =>
  ctx.recorder.recordLoad(ctx.session, { tabId: TAB, url, transitionType: "link", timeStamp: ctx.session.startedAt + ms });

/** A click on `url` whose gesture screenshot is `png`. */
const click = (ctx, url, ms, png) =>
  ctx.recorder.recordAction(
    ctx.session,
    { turn: { intent: "click", eventTime: ctx.session.startedAt + ms, arguments: { metadata: { url } } } },
    { tabId: TAB, screenshot: png, tabUrl: url },
  );

const record = (ctx, turn) => ctx.store.getTurn(turn.client_id);
const held = (ctx, r) => r.readyAt > ctx.clock.t;

test("rapid links: a load left before it completed gets the screenshot of the click that left it", async () => {
  const ctx = await setup();
  const first = await load(ctx, A, 100);
  const shotA = new Uint8Array([1]);
  await click(ctx, A, 600, shotA); // the link on A, screenshotted with the gesture
  assert.ok(held(ctx, await record(ctx, first)), "kept back: its own screenshot may still come");
  const second = await load(ctx, B, 700); // A never completed: no screenshot of its own can come
  const a = await record(ctx, first);
  assert.equal(a.turn.screenshot, sha256(shotA));
  assert.equal(a.readyAt, 0, "released at once");
  assert.equal(ctx.recorder.shotStats.standIn, 1);
  assert.ok(held(ctx, await record(ctx, second)));
});

test("a load whose own screenshot failed waits for the next screenshot of its page, never another page's", async () => {
  const ctx = await setup();
  const turn = await load(ctx, A, 100);
  assert.equal(await ctx.recorder.takeLoad(TAB), turn.client_id);
  await ctx.recorder.setLastShot(ctx.session, TAB, "0".repeat(64), 0.05, A); // before the load committed
  assert.equal(await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: null }), false);
  let r = await record(ctx, turn);
  assert.ok(held(ctx, r) && !r.turn.screenshot, "held for a stand-in (an older screenshot of the URL is not one)");
  await ctx.recorder.setLastShot(ctx.session, TAB, "b".repeat(64), 0.5, B);
  await ctx.recorder.setLastShot(ctx.session, 4, "c".repeat(64), 0.5, A); // another tab
  r = await record(ctx, turn);
  assert.ok(held(ctx, r) && !r.turn.screenshot, "screenshots of another URL or tab never stand in");
  const shotA = new Uint8Array([2]);
  await click(ctx, A, 800, shotA);
  r = await record(ctx, turn);
  assert.equal(r.turn.screenshot, sha256(shotA));
  assert.equal(r.readyAt, 0);
  assert.equal(ctx.recorder.shotStats.standIn, 1);
  assert.deepEqual((await ctx.recorder.tabInfo(TAB)).waiting, {}, "no longer waiting");
});

test("its own screenshot wins over a stand-in offered first; one of another URL is refused for the stand-in", async () => {
  const ctx = await setup();
  const own = await load(ctx, A, 100);
  await click(ctx, A, 300, new Uint8Array([3]));
  const png = new Uint8Array([4]);
  assert.equal(await ctx.recorder.attachScreenshot(ctx.session, own.client_id, { tabId: TAB, png, atMs: ctx.session.startedAt + 400, url: A }), true);
  assert.equal((await record(ctx, own)).turn.screenshot, sha256(png));
  assert.equal(ctx.recorder.shotStats.standIn, 0);

  const moved = await load(ctx, A, 1000);
  const shotA = new Uint8Array([5]);
  await click(ctx, A, 1200, shotA);
  await load(ctx, B, 1300); // (moved's onCompleted did come: takeLoad below)
  const wrong = new Uint8Array([6]); // the tab already showed B when its screenshot was taken
  const attached = await ctx.recorder.attachScreenshot(ctx.session, moved.client_id, { tabId: TAB, png: wrong, atMs: ctx.session.startedAt + 1400, url: B });
  assert.equal(attached, false);
  const r = await record(ctx, moved);
  assert.equal(r.turn.screenshot, sha256(shotA), "the click's screenshot of A, not the capture of B");
  assert.equal(r.readyAt, 0);
});

test("the hold survives a worker restart and ends at LOAD_SETTLE_MS (released without a screenshot)", async () => {
  const ctx = await setup();
  const turn = await load(ctx, A, 100);
  await ctx.recorder.takeLoad(TAB);
  await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: null });
  ctx.recorder = makeRecorder(ctx); // the worker was killed; the new one reads IndexedDB and storage.session
  const shotA = new Uint8Array([7]);
  await click(ctx, A, 2000, shotA);
  assert.equal((await record(ctx, turn)).turn.screenshot, sha256(shotA));
  assert.equal(ctx.recorder.shotStats.standIn, 1);

  const lone = await load(ctx, B, 3000);
  ctx.clock.advance(C.TIMING.LOAD_SETTLE_MS);
  const r = await record(ctx, lone);
  assert.ok(!held(ctx, r) && !r.turn.screenshot, "the bound passed: uploaded without one");
  await ctx.recorder.setLastShot(ctx.session, TAB, "d".repeat(64), 20, B);
  assert.equal((await record(ctx, lone)).turn.screenshot, undefined, "nothing changes a released turn");
});

test("a closed tab or the stop settles waiting turns: their stand-in, else released without (counted missing)", async () => {
  const ctx = await setup();
  const withShot = await load(ctx, A, 100);
  const shotA = new Uint8Array([8]);
  await click(ctx, A, 300, shotA);
  const without = await ctx.recorder.recordTab(ctx.session, "tabswitch", {
    tabId: 5, tabIdOrigin: TAB, url: B, eventTime: ctx.session.startedAt + 400, hold: C.TIMING.LOAD_SETTLE_MS,
  });
  await ctx.recorder.settleWaiting(ctx.session, 5); // tab 5 closed
  const s = await record(ctx, without);
  assert.ok(!held(ctx, s) && !s.turn.screenshot);
  assert.deepEqual(ctx.recorder.shotStats, { standIn: 0, missing: 1 });
  assert.ok(held(ctx, await record(ctx, withShot)), "tab 3 is still open");
  await ctx.recorder.command("stop");
  const uploaded = JSON.parse(ctx.server.recordings.get(ctx.session.demoName).turns.get(withShot.client_id));
  assert.equal(uploaded.screenshot, sha256(shotA), "given its stand-in before the stop released it");
  assert.deepEqual(ctx.recorder.shotStats, { standIn: 1, missing: 1 });
});

test("a tab switch gets the next screenshot of the page switched to", async () => {
  const ctx = await setup();
  const turn = await ctx.recorder.recordTab(ctx.session, "tabswitch", {
    tabId: TAB, tabIdOrigin: 1, url: A, eventTime: ctx.session.startedAt + 100, hold: C.TIMING.LOAD_SETTLE_MS,
  });
  await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: null });
  const shotA = new Uint8Array([9]);
  await click(ctx, A, 500, shotA);
  const r = await record(ctx, turn);
  assert.equal(r.turn.screenshot, sha256(shotA));
  assert.equal(r.readyAt, 0);
});

test("a tab switch to a tab of unknown URL waits for nothing: without its screenshot it goes at once", async () => {
  const ctx = await setup();
  const turn = await ctx.recorder.recordTab(ctx.session, "tabswitch", {
    tabId: 8, tabIdOrigin: 1, url: "", eventTime: ctx.session.startedAt + 100, hold: C.TIMING.LOAD_SETTLE_MS,
  });
  assert.equal((await ctx.recorder.tabInfo(8)).waiting, undefined);
  await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: 8, png: null });
  assert.equal((await record(ctx, turn)).readyAt, 0);
});

/** A textInput typed until `ms` on `url`, whose message arrived at `arrivedMs`, without a screenshot of its own. */
const typed = (ctx, url, ms, arrivedMs) =>
  ctx.recorder.recordAction(
    ctx.session,
    { turn: { intent: "textInput", eventTime: ctx.session.startedAt + ms, arguments: { metadata: { url }, text: "x" } } },
    { tabId: TAB, screenshot: null, tabUrl: url, arrivedAt: ctx.session.startedAt + arrivedMs },
  );

test("text typed in a cross-origin frame and sent after the next action gets a screenshot taken before it arrived", async () => {
  // Typing ends at 1.0 s; the click elsewhere at 1.5 s (its gesture screenshot shows the typed text) makes the
  // frame send its text at 1.6 s, too late for a screenshot of its own (quota, the tab switched away).
  const ctx = await setup();
  await click(ctx, A, 200, new Uint8Array([1]));
  await click(ctx, A, 1500, new Uint8Array([2])); // the latest screenshot of A, after the typing ended
  const text = await typed(ctx, A, 1000, 1600);
  assert.equal(text.screenshot, sha256(new Uint8Array([2])));
  // A click (its effect may show after it) never takes a later screenshot.
  const late = await ctx.recorder.recordAction(
    ctx.session,
    { turn: { intent: "click", eventTime: ctx.session.startedAt + 1000, arguments: { metadata: { url: A } } } },
    { tabId: TAB, screenshot: null, tabUrl: A, arrivedAt: ctx.session.startedAt + 1600 },
  );
  assert.equal(late.screenshot, undefined);
  // Nor does a textInput take one taken after its message arrived.
  await click(ctx, A, 3000, new Uint8Array([3]));
  const early = await typed(ctx, A, 2500, 2600);
  assert.equal(early.screenshot, undefined);
});

test("stop waits for a tab switch's screenshot still being taken instead of releasing the turn without it", async () => {
  const ctx = await setup();
  let finish;
  const inFlight = new Promise((resolve) => (finish = resolve));
  ctx.recorder.d.shotsInFlight = () => inFlight;
  const turn = await ctx.recorder.recordTab(ctx.session, "tabswitch", {
    tabId: TAB, url: A, tabIdOrigin: 1, eventTime: ctx.session.startedAt + 100, hold: C.TIMING.LOAD_SETTLE_MS,
  });
  const stopping = ctx.recorder.command("stop");
  // The screenshot arrives while stop waits (taken by the worker's follow-up of the tab switch).
  await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: new Uint8Array([7]), atMs: ctx.session.startedAt + 300, url: A });
  finish();
  assert.equal((await stopping).ok, true);
  await ctx.recorder.d.uploader.kick({ force: true });
  const uploaded = JSON.parse(ctx.server.recordings.get(ctx.session.demoName).turns.get(turn.client_id));
  assert.equal(uploaded.screenshot, sha256(new Uint8Array([7])));
  assert.equal(ctx.recorder.shotStats.missing, 0);
});

test("a tab switched to and closed before any screenshot of it gets the tab's earlier screenshot of that page", async () => {
  const ctx = await setup();
  await click(ctx, A, 100, new Uint8Array([4])); // tab 3 showed A (then another tab was in front)
  const turn = await ctx.recorder.recordTab(ctx.session, "tabswitch", {
    tabId: TAB, url: A, tabIdOrigin: 1, eventTime: ctx.session.startedAt + 5000, hold: C.TIMING.LOAD_SETTLE_MS,
  });
  await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: null }); // the quota: none
  await ctx.recorder.settleWaiting(ctx.session, TAB); // the tab is closed
  assert.equal((await record(ctx, turn)).turn.screenshot, sha256(new Uint8Array([4])));
  assert.deepEqual(ctx.recorder.shotStats, { standIn: 1, missing: 0 });
  // A load never takes an earlier screenshot: it may be of an earlier visit of the page.
  const again = await load(ctx, B, 6000);
  await ctx.recorder.setLastShot(ctx.session, TAB, "d".repeat(64), 5.9, B);
  await ctx.recorder.settleWaiting(ctx.session, TAB);
  assert.equal((await record(ctx, again)).turn.screenshot, undefined);
});
