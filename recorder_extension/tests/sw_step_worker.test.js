/*
 * lib/step_worker.js: step mode in the worker, over a real Recorder and store: the selection kept with its masked
 * screenshot, the operation's turn stored before the operation is performed with CDP input, the page told when the
 * step is done. chrome (tabs, debugger), the screenshot and the regions are fakes.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const privacy = require("../lib/privacy.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Recorder } = require("../lib/recorder.js");
const { StepWorker } = require("../lib/step_worker.js");
const { freshStore, fakeClock, sha256, quiet } = require("./sw_fakes.js");

const URL = "https://shop.test/search";
const TAB = 3;
const FRAME = 2;
const SECRET = "Zq7pw-Secret-4242";

/** A fake chrome: what reaches the tab (messages by frame, debugger commands), the content script's STEP_EXEC answer. */
function fakeChrome() {
  const log = [];
  const chrome = {
    log,
    placed: { ok: true, x: 60, y: 35 },
    tabs: {
      getZoom: async () => 1.25,
      sendMessage: async (tabId, message, { frameId }) => {
        log.push(["message", tabId, frameId, message.type, message.op, message.clear]);
        return message.type === C.MSG.STEP_EXEC ? chrome.placed : { ok: true };
      },
    },
    debugger: {
      attach: async ({ tabId }) => log.push(["attach", tabId]),
      sendCommand: async ({ tabId }, method, params) => log.push(["cdp", tabId, method, params.type || params.text]),
      detach: async ({ tabId }) => log.push(["detach", tabId]),
    },
  };
  return chrome;
}

async function setup({ config = { step: true, mode: "task", mhtml: true }, privateFields = false } = {}) {
  const ctx = { store: await freshStore(), kv: new Kv(new MemoryArea()), tabsKv: new Kv(new MemoryArea()), clock: fakeClock() };
  let ids = 0;
  // The uploader stays idle: the turns stay in the store for the test to read.
  ctx.recorder = new Recorder({
    kv: ctx.kv, tabsKv: ctx.tabsKv, store: ctx.store, uploader: { kick: async () => null }, now: ctx.clock.now,
    uuid: () => `id-${++ids}`, log: quiet, userAgent: "test", timezoneOffsetMinutes: 0,
  });
  const started = await ctx.recorder.command("start", { serverUrl: "http://server.test", token: "secret", project: "alpha", ...config });
  assert.equal(started.ok, true, started.error);
  ctx.chrome = fakeChrome();
  ctx.notified = 0;
  ctx.masked = [];
  ctx.steps = new StepWorker({
    ready: Promise.resolve({ recorder: ctx.recorder }), tabsKv: ctx.tabsKv, chrome: ctx.chrome,
    shots: { resolve: async (first) => first },
    maskTab: async (png, tabId, options) => {
      ctx.masked.push({ tabId, frameId: options.own && options.own.frameId, topUrl: options.topUrl });
      return new Uint8Array([...png, 0]); // "blacked out"
    },
    hasPrivateFields: async () => privateFields,
    notify: () => (ctx.notified += 1),
  });
  return ctx;
}

/** A STEP_SELECT message as the content script sends it, for an element of `tagName` at privacy `level`. */
function selectMessage(ctx, { tagName = "INPUT", level = privacy.NONE, options } = {}) {
  const message = {
    target: C.TARGET.SW, type: C.MSG.STEP_SELECT, label: `<${tagName.toLowerCase()}#q>`, privacy: level,
    turn: {
      client_id: `sel-${ctx.clock.t}`, type: "browser", intent: "click", eventTime: ctx.clock.t,
      arguments: {
        metadata: { url: URL }, element: { tagName, attributes: { id: "q", [C.UID_ATTRIBUTE]: "u1" } },
        properties: { x: 60, y: 35, button: 0 },
      },
    },
    page: { html: "<html><body><input id=q></body></html>", bboxes: { u1: { x: 10, y: 20, width: 100, height: 30 } } },
    regions: { url: URL, viewport: { width: 1280, height: 800 }, rects: [], frames: [] },
  };
  if (options) message.options = options;
  return message;
}

const sender = { tab: { id: TAB, windowId: 1, url: URL }, frameId: FRAME };
const PNG = new Uint8Array([1, 2, 3]);

test("select, then Type: the turn (the page before the step) is stored, then the text typed with CDP in that frame", async () => {
  const ctx = await setup();
  assert.deepEqual(await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG)), { ok: true });
  assert.deepEqual(ctx.masked, [{ tabId: TAB, frameId: FRAME, topUrl: URL }], "masked with the frame's own report");
  const selected = await ctx.steps.status();
  assert.equal(selected.phase, "selected");
  assert.deepEqual(selected.selection, { tabId: TAB, frameId: FRAME, label: "<input#q>", options: null, tagName: "INPUT", private: false });

  const done = await ctx.steps.operate(ctx.recorder, { op: "type", value: "blue shoes" });
  assert.equal(done.ok, true, done.error);
  const { turn } = await ctx.store.getTurn(done.client_id);
  assert.equal(turn.intent, "textInput");
  assert.equal(turn.arguments.text, "blue shoes");
  assert.equal(turn.arguments.properties.stepOp, "TYPE");
  assert.equal(turn.arguments.metadata.zoomLevel, 1.25);
  assert.equal(turn.screenshot, sha256(new Uint8Array([1, 2, 3, 0])), "the masked screenshot of the selection");
  assert.equal(turn.arguments.properties.mhtml, undefined, "the panel sent none");
  assert.deepEqual(ctx.chrome.log, [
    ["attach", TAB],
    ["message", TAB, FRAME, C.MSG.STEP_EXEC, "type", undefined],
    ["cdp", TAB, "Input.insertText", "blue shoes"],
    ["detach", TAB],
    ["message", TAB, FRAME, C.MSG.STEP_DONE, undefined, true],
  ]);
  assert.equal((await ctx.steps.status()).phase, "idle");
  assert.equal(ctx.steps.blobs.size, 0, "the selection's screenshot is let go");
  assert.ok(ctx.notified >= 3, "the panel hears of every phase");
});

test("a private element's text is masked in its turn; only the CDP input gets the real one", async () => {
  const ctx = await setup();
  await ctx.steps.select(selectMessage(ctx, { level: privacy.VALUE }), sender, Promise.resolve(PNG));
  assert.equal((await ctx.steps.status()).selection.private, true);
  const done = await ctx.steps.operate(ctx.recorder, { op: "type", value: SECRET });
  const record = await ctx.store.getTurn(done.client_id);
  assert.equal(record.turn.arguments.text, privacy.MASK);
  assert.ok(!JSON.stringify(record).includes(SECRET));
  assert.deepEqual(ctx.chrome.log.find((entry) => entry[0] === "cdp"), ["cdp", TAB, "Input.insertText", SECRET]);
});

test("an MHTML snapshot is kept with the step's turn, unless a frame of the tab has private fields", async () => {
  const mhtml = Buffer.from("MIME-Version: 1.0\r\nContent-Type: multipart/related\r\n\r\n").toString("base64");
  const kept = await setup();
  await kept.steps.select(selectMessage(kept), sender, Promise.resolve(PNG));
  const withSnapshot = await kept.steps.operate(kept.recorder, { op: "click", mhtml });
  const { turn } = await kept.store.getTurn(withSnapshot.client_id);
  assert.equal(turn.arguments.properties.mhtml, sha256(Buffer.from(mhtml, "base64")));

  const dropped = await setup({ privateFields: true });
  await dropped.steps.select(selectMessage(dropped), sender, Promise.resolve(PNG));
  const without = await dropped.steps.operate(dropped.recorder, { op: "click", mhtml });
  assert.equal((await dropped.store.getTurn(without.client_id)).turn.arguments.properties.mhtml, undefined);
  const { counters } = await dropped.recorder.status();
  assert.match(counters.lastError, /MHTML snapshot not kept/);
});

test("Ignore records nothing and performs nothing; a fake click is recorded and not performed", async () => {
  const ctx = await setup();
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG));
  assert.deepEqual(await ctx.steps.operate(ctx.recorder, { op: "ignore" }), { ok: true });
  assert.equal(await ctx.store.countPending(), 0);
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG));
  const fake = await ctx.steps.operate(ctx.recorder, { op: "fake" });
  assert.equal((await ctx.store.getTurn(fake.client_id)).turn.arguments.properties.fakeClick, true);
  const sent = ctx.chrome.log.map((entry) => entry[0] === "message" ? entry[3] : entry[0]);
  assert.deepEqual(sent, [C.MSG.STEP_DONE, C.MSG.STEP_DONE], "no debugger, only the end of each step");
});

test("operations are refused without a selection, with a bad value, or outside step mode", async () => {
  const ctx = await setup();
  assert.match((await ctx.steps.operate(ctx.recorder, { op: "click" })).error, /select an element/);
  await ctx.steps.select(selectMessage(ctx, { tagName: "SELECT", options: [{ value: "m", text: "M" }] }), sender, Promise.resolve(PNG));
  assert.match((await ctx.steps.operate(ctx.recorder, { op: "select", value: "xl" })).error, /not one of/);
  assert.match((await ctx.steps.operate(ctx.recorder, { op: "type", value: "" })).error, /^value:/);
  assert.equal((await ctx.steps.status()).phase, "selected", "a refused operation keeps the selection");
  assert.equal(await ctx.store.countPending(), 0);

  const plain = await setup({ config: { mode: "task" } });
  assert.match((await plain.steps.select(selectMessage(plain), sender, Promise.resolve(PNG))).error, /not recording in step mode/);
  assert.match((await plain.steps.operate(plain.recorder, { op: "click" })).error, /not recording in step mode/);
});

test("a page that cannot place the element: the turn stays, the error is noted, the debugger is let go", async () => {
  const ctx = await setup();
  ctx.chrome.placed = { ok: false, error: "the selected element is no longer on the page" };
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG));
  const result = await ctx.steps.operate(ctx.recorder, { op: "click" });
  assert.deepEqual(result, { ok: false, error: "the selected element is no longer on the page" });
  assert.equal(await ctx.store.countPending(), 1, "recorded before it was performed");
  assert.deepEqual(ctx.chrome.log.map((entry) => entry[0]), ["attach", "message", "detach", "message"]);
  assert.match((await ctx.recorder.status()).counters.lastError, /step not performed/);
  assert.equal((await ctx.steps.status()).phase, "idle");
});

test("nothing can be selected while a step is performed; reset clears the step", async () => {
  const ctx = await setup();
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG));
  let release;
  ctx.chrome.debugger.attach = () => new Promise((resolve) => (release = resolve));
  const performing = ctx.steps.operate(ctx.recorder, { op: "click" });
  while (!release) await new Promise((resolve) => setImmediate(resolve));
  assert.equal((await ctx.steps.status()).phase, "executing");
  assert.match((await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG))).error, /being performed/);
  release();
  assert.equal((await performing).ok, true);
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(PNG));
  await ctx.steps.reset();
  assert.deepEqual(await ctx.steps.status(), { phase: "idle", op: null, selection: null });
});
