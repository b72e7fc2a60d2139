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
  assert.equal(await steps.actionTraffic(recorder, { traffic: false }, tab, false, async () => false), null);
  assert.equal(await steps.actionTraffic(recorder, { traffic: true, step: true }, tab, false, async () => false), null);
  assert.deepEqual(chrome.log, []);

  const first = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => false));
  assert.deepEqual(first.log.entries, []);
  request(chrome, "r1", "https://shop.test/api/more");
  const second = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => false));
  const [entry] = second.log.entries;
  assert.equal(entry.response.content.text, '{"more": "Green shoe"}');
  assert.deepEqual(entry.request.headers, [{ name: "Accept", value: "*/*" }]);
  request(chrome, "r2", "https://shop.test/api/profile");
  const hidden = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => true));
  assert.equal(hidden.log.entries[0].response.content.text, undefined, "a page with private fields: no body");
  assert.deepEqual(chrome.log, [["attach", TAB]]);
});

test("the start, the server's answer and a capture asking at once attach the debugger once", async () => {
  const chrome = fakeChrome();
  const steps = new StepWorker({ ready: Promise.resolve({}), tabsKv: null, chrome, network: true });
  await Promise.all([steps.startNetwork(TAB), steps.startNetwork(TAB), steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => false)]);
  assert.deepEqual(chrome.log, [["attach", TAB]]);
});

test("an action handled after its page was left keeps no body of that page's requests, and the next page's", async () => {
  const chrome = fakeChrome();
  const ask = chrome.debugger.sendCommand;
  chrome.debugger.sendCommand = async (target, method, params) =>
    method === "Page.getFrameTree" ? { frameTree: { frame: { id: "top" } } } : ask(target, method, params);
  const steps = new StepWorker({ ready: Promise.resolve({}), tabsKv: null, chrome, network: true });
  await steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => false);
  const send = (id, type, loaderId, url, extra = {}) => {
    chrome.emit("Network.requestWillBeSent", {
      requestId: id, type, frameId: "top", loaderId, timestamp: 1, wallTime: 1700000000,
      request: { method: "GET", url, headers: {}, ...extra },
    });
    chrome.emit("Network.responseReceived", { requestId: id, response: { status: 200, mimeType: "application/json", headers: {} } });
    chrome.emit("Network.loadingFinished", { requestId: id, timestamp: 1.1, encodedDataLength: 22 });
  };
  // The sign-in page (its own XHR), its form posted, the next page and what it fetched: all before the click's turn.
  send("d1", "Document", "L1", "https://shop.test/login.html");
  send("x1", "XHR", "L1", "https://shop.test/api/hint");
  send("p1", "Document", "L2", "https://shop.test/login", { method: "POST", postData: "pw=Hunter2", hasPostData: true });
  send("x2", "XHR", "L2", "https://shop.test/api/profile");
  const left = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, true, async () => false));
  const byPath = Object.fromEntries(left.log.entries.map((e) => [new URL(e.request.url).pathname, e]));
  assert.equal(byPath["/api/hint"].response.content.text, undefined, "the page left: its fields could not be asked");
  assert.equal(byPath["/login"].request.postData.text, "");
  assert.equal(byPath["/api/profile"].response.content.text, '{"more": "Green shoe"}', "the page in place's");
  send("x3", "XHR", "L2", "https://shop.test/api/more");
  const next = JSON.parse(await steps.actionTraffic(recorder, { traffic: true }, tab, false, async () => false));
  assert.equal(next.log.entries[0].response.content.text, '{"more": "Green shoe"}', "the page in place stays unjudged");
});
