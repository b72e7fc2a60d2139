/*
 * service_worker.js itself, run as Chrome runs it: a global scope where importScripts loads its lib/ modules in its
 * order, with a fake chrome. Its top level must register every listener synchronously (an event that wakes a
 * stopped worker finds only those), and answer through the modules it wires (lib/recorder.js, lib/step_worker.js,
 * lib/navigation.js). Real browser runs of the whole extension are in tests/recordings/test_recorder*.py.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const { IDBFactory, IDBKeyRange } = require("fake-indexeddb");

const C = require("../lib/constants.js");
const { MemoryArea } = require("../lib/sessions.js");
const { quiet } = require("./sw_fakes.js");

const ROOT = path.join(__dirname, "..");
const MANIFEST = JSON.parse(fs.readFileSync(path.join(ROOT, "manifest.json"), "utf8"));
const EXTENSION = "chrome-extension://ojofndafcmbnamgfemifimjhmebbdglk/";

function event() {
  const listeners = [];
  return { listeners, addListener: (fn) => listeners.push(fn) };
}

/** A fake chrome with every event the worker listens to, and the calls it makes at start. */
function fakeChrome() {
  const executed = [];
  const chrome = {
    executed,
    runtime: {
      id: "ojofndafcmbnamgfemifimjhmebbdglk", onMessage: event(), onStartup: event(), onInstalled: event(),
      getURL: (p) => EXTENSION + p, getManifest: () => MANIFEST, sendMessage: async () => undefined,
      getPlatformInfo: async () => ({}), getContexts: async () => [],
    },
    storage: { local: new MemoryArea(), session: new MemoryArea(), onChanged: event() },
    webNavigation: { onCommitted: event(), onHistoryStateUpdated: event(), onCompleted: event(), getAllFrames: async () => [] },
    tabs: {
      onCreated: event(), onRemoved: event(), onUpdated: event(), onActivated: event(),
      query: async () => [{ id: 1, windowId: 1, active: true, url: "https://shop.test/" }, { id: 2, windowId: 1, url: "chrome://settings/" }],
      sendMessage: async () => undefined, get: async (id) => ({ id, windowId: 1, active: true }), getZoom: async () => 1,
    },
    scripting: { executeScript: async (details) => executed.push(details) },
    action: { onClicked: event() },
    alarms: { onAlarm: event(), create() {} },
    offscreen: { hasDocument: async () => false },
  };
  return chrome;
}

/** Run service_worker.js in a fresh global scope; timers are kept so they can be cleared at the end. */
function startWorker(chrome) {
  const timers = new Set();
  const track = (set, clear) => [
    (...args) => {
      const id = set(...args);
      timers.add([id, clear]);
      return id;
    },
    clear,
  ];
  const [setTimeoutTracked, clearTimeoutTracked] = track(setTimeout, clearTimeout);
  const [setIntervalTracked, clearIntervalTracked] = track(setInterval, clearInterval);
  const scope = {
    chrome, indexedDB: new IDBFactory(), IDBKeyRange, crypto, atob, btoa, TextEncoder, TextDecoder, console: quiet,
    navigator: { userAgent: "test" }, fetch: async () => { throw new Error("offline"); },
    setTimeout: setTimeoutTracked, clearTimeout: clearTimeoutTracked, setInterval: setIntervalTracked, clearInterval: clearIntervalTracked,
  };
  scope.self = scope;
  const context = vm.createContext(scope);
  const run = (file) => vm.runInContext(fs.readFileSync(path.join(ROOT, file), "utf8"), context, { filename: file });
  scope.importScripts = (...files) => files.forEach(run);
  run(MANIFEST.background.service_worker);
  return { scope, stop: () => timers.forEach(([id, clear]) => clear(id)) };
}

/** Send `message` to the worker as the side panel does; resolves with its answer. */
function ask(chrome, message) {
  const sender = { id: chrome.runtime.id, url: `${EXTENSION}sidepanel/sidepanel.html` };
  return new Promise((resolve) => {
    const [listener] = chrome.runtime.onMessage.listeners;
    // What crosses the message boundary: JSON-clonable data (and objects of this realm).
    const respond = (answer) => resolve(JSON.parse(JSON.stringify(answer)));
    assert.equal(listener({ target: C.TARGET.SW, ...message }, sender, respond), true, "answers asynchronously");
  });
}

test("the worker's top level loads its modules and registers every listener at once", async (t) => {
  const chrome = fakeChrome();
  const worker = startWorker(chrome);
  t.after(worker.stop);
  const W = worker.scope.WebTasks;
  for (const name of ["C", "recorder", "shots", "regions", "video", "step", "stepWorker", "navigation"]) assert.ok(W[name], name);
  const registered = (api) => Object.fromEntries(Object.entries(api).filter(([, v]) => v && v.listeners).map(([k, v]) => [k, v.listeners.length]));
  assert.deepEqual(registered(chrome.runtime), { onMessage: 1, onStartup: 1, onInstalled: 1 });
  assert.deepEqual(registered(chrome.webNavigation), { onCommitted: 1, onHistoryStateUpdated: 1, onCompleted: 1 });
  assert.deepEqual(registered(chrome.tabs), { onCreated: 1, onRemoved: 1, onUpdated: 1, onActivated: 1 });
  assert.deepEqual([chrome.storage.onChanged, chrome.action.onClicked, chrome.alarms.onAlarm].map((e) => e.listeners.length), [1, 1, 1]);
});

test("the worker answers STATUS with the step state, and refuses a step operation before a selection", async (t) => {
  const chrome = fakeChrome();
  const worker = startWorker(chrome);
  t.after(worker.stop);
  const status = await ask(chrome, { type: C.MSG.STATUS });
  assert.equal(status.ok, true);
  assert.equal(status.state.recording, false);
  assert.deepEqual(status.step, { phase: "idle", op: null, selection: null });
  const started = await ask(chrome, { type: C.MSG.START, config: { serverUrl: "http://server.test", token: "t", project: "p", step: true } });
  assert.equal(started.ok, true, started.error);
  const refused = await ask(chrome, { type: C.MSG.STEP_OPERATE, op: "click" });
  assert.deepEqual(refused, { ok: false, error: "select an element on the page first" });
  assert.equal((await ask(chrome, { type: C.MSG.STOP })).ok, true);
});

test("on install, open web tabs get the manifest's content scripts in its order, in every frame", async (t) => {
  const chrome = fakeChrome();
  const worker = startWorker(chrome);
  t.after(worker.stop);
  chrome.runtime.onInstalled.listeners[0]({ reason: "update" });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(JSON.parse(JSON.stringify(chrome.executed)), [
    { target: { tabId: 1, allFrames: true }, files: MANIFEST.content_scripts[0].js },
  ]);
  assert.equal(MANIFEST.content_scripts[0].js.at(-1), "content/capture.js", "the wiring comes last");
  for (const file of MANIFEST.content_scripts[0].js) assert.ok(fs.existsSync(path.join(ROOT, file)), file);
});
