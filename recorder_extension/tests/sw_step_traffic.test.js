/*
 * lib/step_worker.js with deps.network: the debugger stays attached to the step's tab from the first selection,
 * each step's turn gets the tab's traffic since the step before (HAR) and the DOM snapshot before the action, not
 * kept (nor any body) on a page with private fields; stopping detaches. chrome (debugger events) is a fake.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const privacy = require("../lib/privacy.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Recorder } = require("../lib/recorder.js");
const { StepWorker } = require("../lib/step_worker.js");
const { freshStore, fakeClock, quiet } = require("./sw_fakes.js");

const URL = "https://shop.test/search";
const TAB = 3;
const sender = { tab: { id: TAB, windowId: 1, url: URL }, frameId: 0 };

function fakeChrome() {
  const log = [];
  const listeners = { event: [], detach: [] };
  const answers = {
    "Page.getFrameTree": { frameTree: { frame: { id: "top" } } },
    "Network.getResponseBody": { body: '{"items": ["Red shoe"]}', base64Encoded: false },
    "DOMSnapshot.captureSnapshot": { documents: [{ nodes: {}, layout: { bounds: [[0, 0, 10, 10]] } }], strings: ["Red shoe"] },
  };
  return {
    log,
    emit: (method, params) => listeners.event.forEach((l) => l({ tabId: TAB }, method, params)),
    tabs: {
      getZoom: async () => 1,
      sendMessage: async (tabId, message) => (message.type === C.MSG.STEP_EXEC ? { ok: true, x: 5, y: 5 } : { ok: true }),
    },
    debugger: {
      attach: async ({ tabId }) => log.push(["attach", tabId]),
      detach: async ({ tabId }) => log.push(["detach", tabId]),
      sendCommand: async (target, method) => {
        log.push(["cdp", method]);
        return answers[method] || {};
      },
      onEvent: { addListener: (l) => listeners.event.push(l) },
      onDetach: { addListener: (l) => listeners.detach.push(l) },
    },
  };
}

async function setup({ privateFields = false } = {}) {
  const ctx = { store: await freshStore(), clock: fakeClock(), tabsKv: new Kv(new MemoryArea()) };
  let ids = 0;
  ctx.recorder = new Recorder({
    kv: new Kv(new MemoryArea()), tabsKv: ctx.tabsKv, store: ctx.store, uploader: { kick: async () => null },
    now: ctx.clock.now, uuid: () => `id-${++ids}`, log: quiet, userAgent: "test", timezoneOffsetMinutes: 0,
  });
  const started = await ctx.recorder.command("start", { serverUrl: "http://server.test", token: "t", project: "alpha", step: true, mode: "task" });
  assert.equal(started.ok, true, started.error);
  ctx.chrome = fakeChrome();
  ctx.steps = new StepWorker({
    ready: Promise.resolve({ recorder: ctx.recorder }), tabsKv: ctx.tabsKv, chrome: ctx.chrome, network: true,
    shots: { resolve: async (first) => first }, maskTab: async (png) => png, hasPrivateFields: async () => privateFields,
  });
  return ctx;
}

function selectMessage(ctx) {
  return {
    target: C.TARGET.SW, type: C.MSG.STEP_SELECT, label: "<button#b>", privacy: privacy.NONE,
    turn: {
      client_id: `sel-${ctx.clock.t}`, type: "browser", intent: "click", eventTime: ctx.clock.t,
      arguments: { metadata: { url: URL }, element: { tagName: "BUTTON", attributes: { id: "b", [C.UID_ATTRIBUTE]: "u1" } }, properties: {} },
    },
    page: { html: "<html><body><button id=b></button></body></html>", bboxes: { u1: { x: 1, y: 2, width: 3, height: 4 } } },
  };
}

function traffic(chrome) {
  chrome.emit("Network.requestWillBeSent", {
    requestId: "r1", type: "XHR", frameId: "top", timestamp: 1, wallTime: 1700000000,
    request: { method: "GET", url: "https://shop.test/api/items", headers: { Cookie: "sid=1", Accept: "*/*" } },
  });
  chrome.emit("Network.responseReceived", { requestId: "r1", response: { status: 200, mimeType: "application/json", headers: { "Set-Cookie": "sid=2" } } });
  chrome.emit("Network.loadingFinished", { requestId: "r1", timestamp: 1.1, encodedDataLength: 23 });
}

async function blobJson(ctx, sha) {
  const found = await ctx.store.getBlobs([sha]);
  return JSON.parse(Buffer.from(found[sha].bytes).toString("utf-8"));
}

test("a step's turn refers to its traffic and DOM snapshot; the debugger stays attached until the recording stops", async () => {
  const ctx = await setup();
  assert.deepEqual(await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(new Uint8Array([1]))), { ok: true });
  traffic(ctx.chrome);
  const done = await ctx.steps.operate(ctx.recorder, { op: "click" });
  assert.equal(done.ok, true, done.error);
  const { turn } = await ctx.store.getTurn(done.client_id);
  const har = await blobJson(ctx, turn.har);
  assert.equal(har.log.version, "1.2");
  const [entry] = har.log.entries;
  assert.equal(entry.response.content.text, '{"items": ["Red shoe"]}');
  assert.deepEqual([entry.request.headers, entry.response.headers], [[{ name: "Accept", value: "*/*" }], []]);
  const dom = await blobJson(ctx, turn.dom_snapshot);
  assert.equal(dom.format, "webtasks-dom-snapshot/1");
  assert.deepEqual(dom.strings, ["Red shoe"]);
  assert.deepEqual(ctx.chrome.log.filter((e) => e[0] !== "cdp" || e[1].startsWith("Network.enable")), [["attach", TAB], ["cdp", "Network.enable"]]);

  await ctx.steps.reset();
  assert.deepEqual(ctx.chrome.log.at(-1), ["detach", TAB]);
});

test("on a page with private fields: no DOM snapshot and no bodies", async () => {
  const ctx = await setup({ privateFields: true });
  await ctx.steps.select(selectMessage(ctx), sender, Promise.resolve(new Uint8Array([1])));
  traffic(ctx.chrome);
  const done = await ctx.steps.operate(ctx.recorder, { op: "click" });
  const { turn } = await ctx.store.getTurn(done.client_id);
  assert.equal(turn.dom_snapshot, undefined);
  const har = await blobJson(ctx, turn.har);
  assert.equal(har.log.entries[0].response.content.text, undefined);
  assert.ok(!ctx.chrome.log.some((e) => e[1] === "DOMSnapshot.captureSnapshot"));
});
