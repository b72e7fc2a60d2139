/*
 * Single-page apps change the URL with history.pushState/replaceState and never commit a navigation: such a
 * change is a load turn (webNavigation.onHistoryStateUpdated), once per burst of changes, never for the same URL.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");
const { Recorder } = require("../lib/recorder.js");
const { FakeServer, freshStore, fakeClock, sha256, quiet } = require("./sw_fakes.js");

const APP = "https://app.test/spa.html";
const TAB = 3;

async function setup({ before } = {}) {
  const ctx = { server: new FakeServer(), store: await freshStore(), kv: new Kv(new MemoryArea()), tabsKv: new Kv(new MemoryArea()), clock: fakeClock() };
  let ids = 0;
  const uploader = new Uploader({ store: ctx.store, kv: ctx.kv, fetch: ctx.server.fetch, now: ctx.clock.now, random: () => 0, log: quiet });
  ctx.recorder = new Recorder({
    kv: ctx.kv, tabsKv: ctx.tabsKv, store: ctx.store, uploader, now: ctx.clock.now, uuid: () => `id-${++ids}`,
    log: quiet, userAgent: "test", timezoneOffsetMinutes: 0,
  });
  if (before) await before(ctx);
  const started = await ctx.recorder.command("start", { serverUrl: "http://server.test", token: "secret", project: "alpha" });
  assert.equal(started.ok, true, started.error);
  ctx.session = await ctx.recorder.session();
  return ctx;
}

const at = (ctx, ms) => ctx.session.startedAt + ms;
const commit = (ctx, url, ms) => ctx.recorder.recordLoad(ctx.session, { tabId: TAB, url, transitionType: "link", timeStamp: at(ctx, ms) });
const history = (ctx, url, ms) =>
  ctx.recorder.recordHistoryState(ctx.session, { tabId: TAB, frameId: 0, url, transitionType: "link", transitionQualifiers: [], timeStamp: at(ctx, ms) });

/** The load turns not uploaded yet (held ones stay), in order: all but the page's own (onPage). */
async function loads(ctx) {
  const pending = await ctx.store.readyTurns(ctx.session.clientId, 100, Infinity);
  return pending.map((r) => r.turn).filter((turn) => turn.intent === "load" && turn.client_id !== ctx.page);
}

/** The committed page A, completed and screenshotted: the state before the app's own navigations. */
async function onPage(ctx, url) {
  const turn = await commit(ctx, url, 100);
  assert.equal(await ctx.recorder.takeLoad(TAB), turn.client_id);
  const png = new Uint8Array([1]);
  assert.equal(await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png, atMs: at(ctx, 300), url }), true);
  ctx.page = turn.client_id;
  return turn;
}

test("a pushState to a new URL is one load turn of that URL, screenshotted once the URL is quiet", async () => {
  const ctx = await setup();
  await onPage(ctx, APP);
  const recorded = await history(ctx, `${APP}?view=list`, 5000);
  assert.equal(recorded.awaitsCommit, false, "no onCompleted will come: the caller takes its screenshot");
  const turn = recorded.turn;
  assert.equal(turn.intent, "load");
  assert.equal(turn.arguments.metadata.url, `${APP}?view=list`);
  assert.equal(turn.arguments.properties.url, `${APP}?view=list`);
  assert.equal(turn.arguments.properties.tabId, TAB);
  assert.equal(turn.timestamp, 5);
  assert.equal((await loads(ctx)).length, 1);

  const url = await ctx.recorder.historySettled(TAB, turn.client_id, at(ctx, 5000));
  assert.equal(url, `${APP}?view=list`);
  const png = new Uint8Array([2]);
  assert.equal(await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png, atMs: at(ctx, 6100), url }), true);
  const r = await ctx.store.getTurn(turn.client_id);
  assert.equal(r.turn.screenshot, sha256(png));
  assert.equal(r.readyAt, 0, "released for upload");
});

test("a replaceState to the same URL, or to another fragment of it, is no load", async () => {
  const ctx = await setup();
  await onPage(ctx, APP);
  assert.equal(await history(ctx, APP, 5000), null);
  assert.equal(await history(ctx, `${APP}#details`, 8000), null);
  assert.equal(await history(ctx, `${APP}#other`, 11000), null);
  assert.deepEqual(await loads(ctx), []);
});

test("a page loaded before the recording started: a replaceState of its URL is no load either", async () => {
  const ctx = await setup({ before: (c) => c.recorder.noteDocUrl(TAB, APP) });
  assert.equal(await history(ctx, APP, 1000), null);
  assert.ok(await history(ctx, `${APP}?q=a`, 2000), "a new URL is");
});

test("a burst of replaceStates is one load turn with the last URL and the first one's time", async () => {
  const ctx = await setup();
  await onPage(ctx, APP);
  const typed = ["a", "ab", "abc", "abcd"];
  const results = [];
  for (const [i, q] of typed.entries()) results.push(await history(ctx, `${APP}?q=${q}`, 5000 + i * 300));
  const [turn] = await loads(ctx);
  assert.equal((await loads(ctx)).length, 1);
  assert.equal(turn.client_id, results[0].turn.client_id);
  assert.ok(results.every((r) => r.turn.client_id === turn.client_id && !r.awaitsCommit));
  assert.equal(turn.arguments.metadata.url, `${APP}?q=abcd`);
  assert.equal(turn.arguments.properties.url, `${APP}?q=abcd`);
  assert.equal(turn.timestamp, 5);

  // Only the last change's settle asks for a screenshot, of the last URL.
  assert.equal(await ctx.recorder.historySettled(TAB, turn.client_id, at(ctx, 5000)), null);
  assert.equal(await ctx.recorder.historySettled(TAB, turn.client_id, at(ctx, 5900)), `${APP}?q=abcd`);
  const early = new Uint8Array([3]); // taken while the box still said "ab"
  assert.equal(await ctx.recorder.attachScreenshot(ctx.session, turn.client_id, { tabId: TAB, png: early, atMs: at(ctx, 5400), url: `${APP}?q=ab` }), false);
  assert.equal((await ctx.store.getTurn(turn.client_id)).turn.screenshot, undefined, "another URL's screenshot never fits");

  // A change after a quiet window is a new load.
  const later = await history(ctx, `${APP}?q=abcde`, 5900 + C.TIMING.HISTORY_COALESCE_MS + 1);
  assert.notEqual(later.turn.client_id, turn.client_id);
  assert.equal((await loads(ctx)).length, 2);
});

test("a committed navigation right after a history load is its own load; a router redirect while it loads amends it", async () => {
  const ctx = await setup();
  await onPage(ctx, APP);
  const spa = (await history(ctx, `${APP}?view=list`, 5000)).turn;
  const hop = await commit(ctx, "https://app.test/hop-a.html", 5200);
  assert.notEqual(hop.client_id, spa.client_id);
  let all = await loads(ctx);
  assert.deepEqual(all.map((t) => t.arguments.metadata.url), [`${APP}?view=list`, "https://app.test/hop-a.html"]);
  assert.equal(await ctx.recorder.historySettled(TAB, spa.client_id, at(ctx, 5000)), null, "the tab moved on: no screenshot");

  // The new page's router replaces its URL before onCompleted: the same load, of the URL the person sees.
  const redirect = await history(ctx, "https://app.test/hop-a.html?tab=home", 5400);
  assert.equal(redirect.turn.client_id, hop.client_id);
  assert.equal(redirect.awaitsCommit, true, "onCompleted takes its screenshot");
  all = await loads(ctx);
  assert.equal(all.length, 2);
  assert.equal(all[1].arguments.metadata.url, "https://app.test/hop-a.html?tab=home");
  assert.equal(all[1].arguments.properties.transitionType, "link", "still the committed navigation's transition");
  assert.equal(await ctx.recorder.takeLoad(TAB), hop.client_id);
  assert.equal(await ctx.recorder.waitingUrl(TAB, hop.client_id), "https://app.test/hop-a.html?tab=home");
});
