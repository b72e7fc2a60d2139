/* Commands (start/stop/pause/resume/status, the storage command hook) and turns built from browser events. */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");
const { Recorder, buildActionTurn, isRecordableUrl, tabActivated } = require("../lib/recorder.js");
const { FakeServer, freshStore, fakeClock, sha256, quiet } = require("./sw_fakes.js");

async function setup({ config = {} } = {}) {
  const server = new FakeServer();
  const store = await freshStore();
  const kv = new Kv(new MemoryArea());
  const tabsKv = new Kv(new MemoryArea());
  const clock = fakeClock();
  const broadcasts = [];
  let ids = 0;
  const uploader = new Uploader({ store, kv, fetch: server.fetch, now: clock.now, random: () => 0, log: quiet });
  const recorder = new Recorder({
    kv, tabsKv, store, uploader, now: clock.now, uuid: () => `id-${++ids}`, log: quiet,
    broadcast: (state) => broadcasts.push(state), activeTabs: async () => [{ tabId: 7, windowId: 1 }, { tabId: 9, windowId: 2 }],
    userAgent: "Mozilla/5.0 test", timezoneOffsetMinutes: -60,
  });
  const signIn = { serverUrl: "http://server.test/", token: "secret", project: "alpha", ...config };
  return { server, store, kv, tabsKv, clock, recorder, uploader, broadcasts, signIn };
}

async function started(ctx, extra = {}) {
  const result = await ctx.recorder.command("start", { ...ctx.signIn, task_description: "Book a table", ...extra });
  assert.equal(result.ok, true, result.error);
  return { result, session: await ctx.recorder.session() };
}

test("start creates the session, resets counters, tells the content scripts, and creates the recording", async () => {
  const ctx = await setup();
  const { result, session } = await started(ctx, { mode: "task", websites: "a.com, b.org", instructor_sees_screen: false });
  assert.equal(session.mode, "task");
  assert.equal(session.serverUrl, "http://server.test");
  assert.deepEqual(session.websites, ["a.com", "b.org"]);
  assert.equal(session.startedAt, ctx.clock.t);
  assert.equal(result.demoName, session.demoName);
  assert.ok(result.demoName, "the recording is created at once when the server is up");
  const body = ctx.server.requests("POST", /^\/api\/recordings\/$/)[0].json;
  assert.equal(body.project, "alpha");
  assert.equal(body.mode, "task");
  assert.equal(body.instructor_sees_screen, false);
  assert.equal(body.task_description, "Book a table");
  assert.equal(body.recording_start, new Date(ctx.clock.t).toISOString());
  assert.equal(body.timezone_offset_minutes, -60);
  assert.equal(body.recorder_version, C.VERSION);
  assert.equal(ctx.broadcasts.at(-1).recording, true);
  assert.deepEqual(await ctx.kv.get(C.STORAGE.LAST_TAB), { tabId: 7, windowId: 1, byWindow: { 1: 7, 2: 9 } });
  assert.equal((await ctx.kv.get(C.STORAGE.CONFIG)).project, "alpha", "sign-in is saved for next time");
});

test("start needs sign-in and refuses a second recording", async () => {
  const ctx = await setup();
  const missing = await ctx.recorder.command("start", { project: "alpha" });
  assert.equal(missing.ok, false);
  assert.match(missing.error, /serverUrl is required/);
  await started(ctx);
  const again = await ctx.recorder.command("start", ctx.signIn);
  assert.equal(again.ok, false);
  assert.match(again.error, /already being recorded/);
});

test("start works offline: the recording is created later", async () => {
  const ctx = await setup();
  ctx.server.down = true;
  const { result } = await started(ctx);
  assert.equal(result.ok, true);
  assert.equal(result.demoName, null);
});

test("pause and resume flip the state; a paused recording takes no turns", async () => {
  const ctx = await setup();
  await started(ctx);
  assert.equal((await ctx.recorder.command("pause")).ok, true);
  assert.equal((await ctx.recorder.state()).paused, true);
  assert.equal(await ctx.recorder.recording(), null);
  assert.equal(ctx.broadcasts.at(-1).paused, true);
  await ctx.recorder.command("resume");
  assert.equal((await ctx.recorder.state()).paused, false);
  assert.ok(await ctx.recorder.recording());
});

test("stop moves the session to the outbox, uploads, finishes and answers with the demo name", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  await ctx.recorder.recordChat(session, { speaker: "instructor", utterance: "Hello" });
  const result = await ctx.recorder.command("stop");
  assert.equal(result.ok, true);
  assert.equal(result.demoName, session.demoName);
  assert.equal(await ctx.recorder.session(), undefined);
  const demo = ctx.server.recordings.get(session.demoName);
  assert.equal(demo.finished, true);
  assert.equal(demo.turns.size, 1);
  assert.equal((await ctx.recorder.command("stop")).ok, false, "nothing to stop");
  const status = await ctx.recorder.status();
  assert.equal(status.state.recording, false);
  assert.equal(status.upload.recent[0].demoName, session.demoName);
  assert.equal(status.counters.uploaded, 1);
});

test("the storage command hook runs each nonce once and writes its result", async () => {
  const ctx = await setup();
  const command = { action: "start", config: { ...ctx.signIn, task_description: "x" }, nonce: "n1" };
  const result = await ctx.recorder.runStoredCommand(command);
  assert.equal(result.ok, true);
  assert.equal(result.nonce, "n1");
  assert.ok(result.demoName);
  assert.deepEqual(await ctx.kv.get(C.STORAGE.COMMAND_RESULT), result);
  assert.equal(await ctx.recorder.runStoredCommand(command), null, "same nonce: not run again");
  const fresh = new Recorder({ ...ctx.recorder.d }); // a restarted worker sees the answered command
  assert.equal(await fresh.runStoredCommand(command), null);
  const bad = await ctx.recorder.runStoredCommand({ action: "explode", nonce: "n2" });
  assert.equal(bad.ok, false);
  assert.match(bad.error, /unknown action/);
  const stop = await ctx.recorder.runStoredCommand({ action: "stop", nonce: "n3" });
  assert.equal(stop.ok, true);
  assert.equal(stop.demoName, result.demoName);
});

test("status never reveals the token", async () => {
  const ctx = await setup();
  await started(ctx);
  const status = await ctx.recorder.command("status");
  assert.equal(status.ok, true);
  assert.equal(status.session.token, "…");
  assert.ok(!JSON.stringify(status).includes("secret"));
});

test("an action from the content script becomes a stored turn with its blobs and recording-clock timestamp", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const message = {
    turn: {
      client_id: "c-1", type: "browser", intent: "click", eventTime: session.startedAt + 6200,
      arguments: { metadata: { url: "https://example.com/", viewportWidth: 1280, viewportHeight: 800, mouseX: 5, mouseY: 6 },
        properties: { x: 5, y: 6 } },
    },
    page: { html: "<html><body data-webtasks-id=\"1\"></body></html>", bboxes: { 1: { x: 0, y: 0, width: 1, height: 1 } } },
  };
  const png = new Uint8Array([137, 80, 78, 71]);
  const turn = await ctx.recorder.recordAction(session, message, { tabId: 3, screenshot: png, zoomLevel: 1.25 });
  assert.equal(turn.client_id, "c-1");
  assert.equal(turn.timestamp, 6.2);
  assert.equal(turn.arguments.metadata.tabId, 3);
  assert.equal(turn.arguments.metadata.zoomLevel, 1.25);
  assert.equal(turn.arguments.metadata.viewportWidth, 1280);
  assert.equal(turn.eventTime, undefined, "only server fields are sent");
  assert.equal(turn.screenshot, sha256(png));
  assert.equal(turn.page, sha256(Buffer.from(message.page.html)));
  assert.equal(turn.bboxes, sha256(Buffer.from(JSON.stringify(message.page.bboxes))));
  const blobs = await ctx.store.getBlobs([turn.screenshot, turn.page, turn.bboxes]);
  assert.deepEqual(Object.values(blobs).map((b) => b.mediaType).sort(), ["application/json", "image/png", "text/html"]);
  const record = await ctx.store.getTurn("c-1");
  assert.equal(record.readyAt, ctx.clock.t + C.TIMING.FRAME_SETTLE_MS, "held back for its after-frame");
  assert.equal((await ctx.kv.get(C.STORAGE.COUNTERS)).captured, 1);
});

test("frames: the previous screenshot of the tab is the 'before' frame, the 'after' frame is attached while held", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const click = (id, ms) => ({ turn: { client_id: id, intent: "click", eventTime: session.startedAt + ms, arguments: { metadata: { url: "u" } } } });
  const first = await ctx.recorder.recordAction(session, click("c-1", 1000), { tabId: 3, screenshot: new Uint8Array([1]) });
  assert.equal(first.frames, undefined, "nothing before the first action");
  ctx.clock.advance(300);
  const attached = await ctx.recorder.attachFrame(session, "c-1", { tabId: 3, png: new Uint8Array([2]), label: "after", atMs: session.startedAt + 1300 });
  assert.equal(attached, true);
  const stored = (await ctx.store.getTurn("c-1")).turn;
  assert.deepEqual(stored.frames, [{ screenshot: sha256(new Uint8Array([2])), timestamp: 1.3, label: "after" }]);
  assert.equal(stored.screenshot, sha256(new Uint8Array([1])), "the action's own screenshot stays");
  const second = await ctx.recorder.recordAction(session, click("c-2", 2000), { tabId: 3, screenshot: new Uint8Array([3]) });
  assert.deepEqual(second.frames, [{ screenshot: sha256(new Uint8Array([2])), timestamp: 1.3, label: "before" }]);
  const otherTab = await ctx.recorder.recordAction(session, click("c-3", 2100), { tabId: 4, screenshot: null });
  assert.equal(otherTab.frames, undefined, "frames are per tab");
  assert.match((await ctx.kv.get(C.STORAGE.COUNTERS)).lastError, /no screenshot/);
  ctx.clock.advance(C.TIMING.FRAME_SETTLE_MS);
  const late = await ctx.recorder.attachFrame(session, "c-2", { tabId: 3, png: new Uint8Array([4]), label: "after", atMs: session.startedAt + 4000 });
  assert.equal(late, false, "too late once the turn may be uploading");
});

test("loads, tab events and chat become WebLINX turns", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const load = await ctx.recorder.recordLoad(session, {
    tabId: 3, url: "https://example.com/a", transitionType: "typed", transitionQualifiers: ["from_address_bar"],
    timeStamp: session.startedAt + 500,
  });
  assert.deepEqual(load.arguments, {
    metadata: { url: "https://example.com/a", tabId: 3 },
    properties: { url: "https://example.com/a", transitionType: "typed", transitionQualifiers: ["from_address_bar"], tabId: 3 },
  });
  assert.equal(load.timestamp, 0.5);
  assert.equal(await ctx.recorder.takeLoad(3), load.client_id);
  assert.equal(await ctx.recorder.takeLoad(3), null, "taken once");
  const attached = await ctx.recorder.attachScreenshot(session, load.client_id, { tabId: 3, png: new Uint8Array([9]), atMs: session.startedAt + 900 });
  assert.equal(attached, true);
  const record = await ctx.store.getTurn(load.client_id);
  assert.equal(record.turn.screenshot, sha256(new Uint8Array([9])));
  assert.equal(record.readyAt, 0, "released for upload");

  const removed = await ctx.recorder.recordTab(session, "tabremove", { tabId: 3, eventTime: session.startedAt + 1000 });
  assert.deepEqual(removed.arguments, { metadata: { url: "https://example.com/a", tabId: 3 }, properties: { tabId: 3 } });
  const switched = await ctx.recorder.recordTab(session, "tabswitch", { tabId: 5, tabIdOrigin: 3, url: "https://b.org/" });
  assert.deepEqual(switched.arguments.properties, { tabId: 5, tabIdOrigin: 3 });
  const created = await ctx.recorder.recordTab(session, "tabcreate", { tabId: 9 });
  assert.deepEqual(created.arguments, { metadata: { url: "", tabId: 9 }, properties: { tabId: 9 } });

  ctx.clock.advance(2000);
  const chat = await ctx.recorder.recordChat(session, { speaker: "navigator", utterance: "Done" });
  assert.deepEqual(Object.keys(chat).sort(), ["client_id", "speaker", "timestamp", "type", "utterance"]);
  assert.equal(chat.timestamp, 2);
  await assert.rejects(ctx.recorder.recordChat(session, { utterance: "  " }), /utterance is required/);
});

test("every stored turn passes the server's shape rules", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  await ctx.recorder.recordChat(session, { speaker: "navigator", utterance: "hi" });
  await ctx.recorder.recordTab(session, "tabcreate", { tabId: 2 });
  await ctx.recorder.recordLoad(session, { tabId: 2, url: "https://x.org/", transitionType: "link", transitionQualifiers: [] });
  await ctx.recorder.command("stop");
  const demo = ctx.server.recordings.get(session.demoName);
  assert.equal(demo.turns.size, 3);
  for (const json of demo.turns.values()) {
    const turn = JSON.parse(json);
    assert.ok(Number.isFinite(turn.timestamp) && turn.timestamp >= 0);
    if (turn.type === "browser") assert.equal(typeof turn.arguments.metadata.url, "string");
  }
});

test("helpers: buildActionTurn keeps a valid client id, replaces a bad one; URL filter", () => {
  const made = buildActionTurn({ client_id: "x".repeat(65), intent: "scroll", arguments: { scrollX: 0, scrollY: 5 } }, {
    clientId: "fallback", timestamp: 1, tabId: 2,
  });
  assert.equal(made.client_id, "fallback");
  assert.deepEqual(made.arguments, { scrollX: 0, scrollY: 5, metadata: { tabId: 2, url: "" } });
  assert.equal(isRecordableUrl("https://a.b/"), true);
  assert.equal(isRecordableUrl("chrome-extension://id/sidepanel/sidepanel.html"), false);
  assert.equal(isRecordableUrl("about:blank"), false);
});

test("a tabswitch's origin is the tab that was active in the same window", () => {
  let last = { tabId: 7, windowId: 1, byWindow: { 1: 7, 2: 9 } };
  const step = (tabId, windowId) => {
    const { origin, next } = tabActivated(last, tabId, windowId);
    last = JSON.parse(JSON.stringify(next)); // as chrome.storage keeps it
    return origin;
  };
  assert.equal(step(9, 2), 9, "re-activating a window's active tab: origin = itself (no tabswitch)");
  assert.equal(step(11, 1), 7, "a new tab in window 1 comes from window 1's tab, not the last activated (9)");
  assert.equal(step(7, 1), 11, "closing it returns to 7, origin the closed tab");
  assert.equal(step(20, 3), 7, "a tab in a window never seen: the last activated tab anywhere");
  assert.equal(tabActivated(null, 5, 1).origin, -1);
});

test("captures a page saved because the worker never answered are stored once, in the right session", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const pending = (id, ms, tabId) => ({
    message: { turn: { client_id: id, intent: "click", eventTime: session.startedAt + ms, arguments: { metadata: { url: "u" } } },
      page: { html: "<p data-webtasks-id='1'></p>", bboxes: { 1: { x: 0, y: 0, width: 1, height: 1 } } } },
    tabId, at: session.startedAt + ms,
  });
  const prefix = C.STORAGE.PENDING_CAPTURE;
  await ctx.recorder.recordAction(session, pending("seen", 100, 3).message, { tabId: 3, screenshot: null });
  await ctx.kv.set(prefix + "lost-2", pending("lost-2", 900, 3));
  await ctx.kv.set(prefix + "lost-1", pending("lost-1", 800, 3));
  await ctx.kv.set(prefix + "seen", pending("seen", 100, 3)); // delivered after all: not stored twice
  await ctx.kv.set(prefix + "before", pending("before", -5000, 3)); // before this recording: dropped
  const captured = (await ctx.kv.get(C.STORAGE.COUNTERS)).captured;
  assert.equal(await ctx.recorder.drainPendingCaptures(), 2);
  for (const key of ["lost-1", "lost-2", "seen", "before"]) assert.equal(await ctx.kv.get(prefix + key), undefined);
  const lost = await ctx.store.getTurn("lost-1");
  assert.equal(lost.turn.arguments.metadata.tabId, 3);
  assert.equal(lost.turn.timestamp, 0.8);
  assert.ok(lost.turn.page && lost.turn.bboxes && !lost.turn.screenshot);
  assert.ok((await ctx.store.getTurn("lost-1")).seq < (await ctx.store.getTurn("lost-2")).seq, "stored in event order");
  assert.equal(await ctx.store.getTurn("before"), null);
  assert.equal((await ctx.kv.get(C.STORAGE.COUNTERS)).captured, captured + 2);
  assert.equal(await ctx.recorder.drainPendingCaptures(), 0);
});

test("a capture its page saved at unload waits for the same capture in flight, which keeps its screenshot", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const message = { turn: { client_id: "link", intent: "click", eventTime: session.startedAt + 500, arguments: { metadata: { url: "https://a.test/" } } } };
  await ctx.kv.set(C.STORAGE.PENDING_CAPTURE + "link", { message, tabId: 3, tabUrl: "https://a.test/", at: session.startedAt + 500 });
  let finish;
  const screenshotTaken = new Promise((resolve) => (finish = resolve));
  const png = new Uint8Array([7, 7]);
  const inFlight = ctx.recorder.capturing("link", async () => {
    await screenshotTaken; // the worker is still screenshotting when the next page says HELLO
    return ctx.recorder.recordAction(session, message, { tabId: 3, screenshot: png, tabUrl: "https://a.test/" });
  });
  const drained = ctx.recorder.drainPendingCaptures();
  finish();
  await inFlight;
  assert.equal(await drained, 0, "not stored a second time");
  assert.equal((await ctx.store.getTurn("link")).turn.screenshot, sha256(png));
  assert.equal(ctx.recorder.inflight.size, 0);
});

test("an action without a screenshot gets the tab's last screenshot of the same URL, never one of another page", async () => {
  const ctx = await setup();
  const { session } = await started(ctx);
  const click = (id, ms, url) => ({ turn: { client_id: id, intent: "click", eventTime: session.startedAt + ms, arguments: { metadata: { url } } } });
  const shot = new Uint8Array([1, 2, 3]);
  await ctx.recorder.recordAction(session, click("c-1", 100, "https://a.test/"), { tabId: 3, screenshot: shot, tabUrl: "https://a.test/" });
  const same = await ctx.recorder.recordAction(session, click("c-2", 700, "https://a.test/"), { tabId: 3, screenshot: null });
  assert.equal(same.screenshot, sha256(shot), "the state the action was taken in");
  assert.deepEqual(same.frames, [{ screenshot: sha256(shot), timestamp: 0.1, label: "before" }]);
  const other = await ctx.recorder.recordAction(session, click("c-3", 900, "https://b.test/"), { tabId: 3, screenshot: null, tabUrl: "https://b.test/" });
  assert.equal(other.screenshot, undefined, "a screenshot of another page never stands in");
  assert.deepEqual(ctx.recorder.shotStats, { standIn: 1, missing: 1 });
  // The tab moved on to b.test (its after-frame), then text typed on a.test arrives (sent at pagehide).
  await ctx.recorder.setLastShot(session, 3, "b".repeat(64), 0.95, "https://b.test/");
  const late = await ctx.recorder.recordAction(session, click("c-4", 960, "https://a.test/"), { tabId: 3, screenshot: null });
  assert.equal(late.screenshot, sha256(shot), "the last screenshot of the action's own page");
  assert.equal(late.frames[0].screenshot, "b".repeat(64), "the 'before' frame is still the tab's last one");
  // A copy stored first without a screenshot gets the real one while it is still held back.
  await ctx.recorder.recordAction(session, click("c-3", 900, "https://b.test/"), { tabId: 3, screenshot: new Uint8Array([9]), tabUrl: "https://b.test/" });
  assert.equal((await ctx.store.getTurn("c-3")).turn.screenshot, sha256(new Uint8Array([9])));
});

test("tabLeftPage: an action's page against the tab's URL when its message arrived (fragments ignored)", () => {
  const { tabLeftPage } = require("../lib/recorder.js");
  const at = (url, frame = { isTop: true, crossOrigin: false }) => ({ frame, turn: { arguments: { metadata: { url } } } });
  assert.equal(tabLeftPage(at("https://a.test/p"), "https://a.test/p"), false);
  assert.equal(tabLeftPage(at("https://a.test/p#x"), "https://a.test/p"), false);
  assert.equal(tabLeftPage(at("https://a.test/p"), "https://a.test/next"), true);
  assert.equal(tabLeftPage(at("https://x.test/frame", { isTop: false, crossOrigin: true }), "https://a.test/p"), false, "unknown in a cross-origin frame");
});
