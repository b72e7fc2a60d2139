/*
 * lib/step_worker.js actionTraffic: a WebLINX recording in a project keeping traffic (session.traffic, learnt from the
 * server's answer to POST /api/recordings/) gets the tab's traffic since the action before as each action turn's
 * HAR, with no body on a page with private fields; without the setting (or in step mode) nothing is attached.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { StepWorker } = require("../lib/step_worker.js");

const TAB = 4;

function fakeChrome() {
  const log = [];
  const listeners = [];
  return {
    log,
    emit: (method, params) => listeners.forEach((l) => l({ tabId: TAB }, method, params)),
    debugger: {
      attach: async ({ tabId }) => log.push(["attach", tabId]),
      detach: async ({ tabId }) => log.push(["detach", tabId]),
      sendCommand: async (target, method) =>
        method === "Network.getResponseBody" ? { body: '{"more": "Green shoe"}', base64Encoded: false } : {},
      onEvent: { addListener: (l) => listeners.push(l) },
      onDetach: { addListener: () => {} },
    },
  };
}

function request(chrome, id, url) {
  chrome.emit("Network.requestWillBeSent", {
    requestId: id, type: "XHR", timestamp: 1, wallTime: 1700000000,
    request: { method: "GET", url, headers: { Authorization: "Bearer x", Accept: "*/*" } },
  });
  chrome.emit("Network.responseReceived", { requestId: id, response: { status: 200, mimeType: "application/json", headers: {} } });
  chrome.emit("Network.loadingFinished", { requestId: id, timestamp: 1.1, encodedDataLength: 22 });
}

const recorder = { note: async () => {} };
const tab = { tabId: TAB, url: "https://shop.test/" };

test("each action turn gets the traffic since the one before; none kept without the project's setting", async () => {
  const chrome = fakeChrome();
  const steps = new StepWorker({ ready: Promise.resolve({}), tabsKv: null, chrome, network: true });
  assert.equal(await steps.actionTraffic(recorder, { traffic: false }, tab, async () => false), null);
  assert.equal(await steps.actionTraffic(recorder, { traffic: true, step: true }, tab, async () => false), null);
  assert.deepEqual(chrome.log, []);

  const first = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, async () => false));
  assert.deepEqual(first.log.entries, []);
  request(chrome, "r1", "https://shop.test/api/more");
  const second = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, async () => false));
  const [entry] = second.log.entries;
  assert.equal(entry.response.content.text, '{"more": "Green shoe"}');
  assert.deepEqual(entry.request.headers, [{ name: "Accept", value: "*/*" }]);
  request(chrome, "r2", "https://shop.test/api/profile");
  const hidden = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, async () => true));
  assert.equal(hidden.log.entries[0].response.content.text, undefined, "a page with private fields: no body");
  assert.deepEqual(chrome.log, [["attach", TAB]]);
});

test("the start, the server's answer and a capture asking at once attach the debugger once", async () => {
  const chrome = fakeChrome();
  const steps = new StepWorker({ ready: Promise.resolve({}), tabsKv: null, chrome, network: true });
  await Promise.all([steps.startNetwork(TAB), steps.startNetwork(TAB), steps.actionTraffic(recorder, { traffic: true }, tab, async () => false)]);
  assert.deepEqual(chrome.log, [["attach", TAB]]);
});
