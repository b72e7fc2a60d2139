// lib/delivery.js: captures re-sent until the worker confirms them, saved when the page goes away first, the end
// of everything when the extension is gone, and the page bridge. A fake chrome.runtime answers as told.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { createDelivery, RESEND_DELAYS_MS } = require("../lib/delivery.js");

const tick = () => new Promise((resolve) => setImmediate(resolve));
const quiet = { warn() {} };

/** A fake chrome whose worker answers CAPTURE with `answer(message, attempt)` (a value, or an Error to reject). */
function harness(answer = () => ({ ok: true })) {
  const sent = [];
  const timers = [];
  const posted = [];
  const stored = {};
  const invalidated = [];
  const chrome = {
    runtime: {
      sendMessage(message) {
        sent.push(message);
        const result = answer(message, sent.filter((m) => m === message).length);
        return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
      },
    },
    storage: { local: { set: async (entries) => Object.assign(stored, entries) } },
  };
  const window = { postMessage: (data, origin) => posted.push([data, origin]) };
  const delivery = createDelivery({
    chrome, window, onInvalidated: () => invalidated.push(true), schedule: (fn, ms) => timers.push({ fn, ms }),
    now: () => 1234, log: quiet,
  });
  /** Run the timers due now (each re-send), answering in between. */
  async function runTimers() {
    await tick();
    while (timers.length) {
      timers.shift().fn();
      await tick();
    }
  }
  return { delivery, sent, timers, posted, stored, invalidated, runTimers, chrome };
}

const capture = (id) => ({ target: C.TARGET.SW, type: C.MSG.CAPTURE, turn: { client_id: id, intent: "click" } });

test("a capture the worker confirms is sent once and forgotten", async () => {
  const h = harness();
  h.delivery.deliver(capture("c1"));
  await h.runTimers();
  assert.equal(h.sent.length, 1);
  assert.equal(h.delivery.unanswered.size, 0);
});

test("a capture is re-sent, spaced out, until the worker confirms it", async () => {
  const delays = [];
  const h = harness((message, attempt) => (attempt < 3 ? (attempt === 1 ? new Error("Receiving end does not exist") : undefined) : { ok: true }));
  h.delivery.deliver(capture("c1"));
  await tick();
  while (h.timers.length) {
    const timer = h.timers.shift();
    delays.push(timer.ms);
    timer.fn();
    await tick();
  }
  assert.equal(h.sent.length, 3);
  assert.deepEqual(delays, RESEND_DELAYS_MS.slice(0, 2));
  assert.equal(h.delivery.unanswered.size, 0);
  assert.deepEqual(h.invalidated, [], "a worker not answering is no reason to stop");
});

test("re-sending stops after the last delay; the capture stays unanswered, saved with the tab when the page goes", async () => {
  const h = harness(() => ({ ok: false }));
  h.delivery.hello({ tabId: 4, tabUrl: "https://shop.test/", state: {} });
  h.delivery.deliver(capture("c1"));
  await h.runTimers();
  assert.equal(h.sent.length, RESEND_DELAYS_MS.length + 1);
  h.delivery.saveUnanswered();
  await tick();
  assert.deepEqual(h.stored, {
    [`${C.STORAGE.PENDING_CAPTURE}c1`]: { message: capture("c1"), tabId: 4, tabUrl: "https://shop.test/", at: 1234 },
  });
  assert.equal(h.delivery.unanswered.size, 0, "handed over once");
  h.delivery.saveUnanswered();
  assert.equal(Object.keys(h.stored).length, 1);
});

test("a capture saved at pagehide is written without what the page's private fields hold", async () => {
  const h = harness(() => ({ ok: false }));
  h.delivery.deliver({ ...capture("c1"), privateValues: ["Zq7pw-Secret-4242"] });
  await h.runTimers();
  assert.equal(h.sent[0].privateValues[0], "Zq7pw-Secret-4242", "the worker is told (in memory)");
  h.delivery.saveUnanswered();
  await tick();
  assert.deepEqual(h.stored[`${C.STORAGE.PENDING_CAPTURE}c1`].message, capture("c1"));
  assert.ok(!JSON.stringify(h.stored).includes("Zq7pw-Secret-4242"), "never on disk");
});

test("a confirmed capture is not saved at pagehide; nothing to save writes nothing", async () => {
  const writes = [];
  const h = harness((message) => (message.turn.client_id === "done" ? { ok: true } : new Promise(() => {})));
  h.chrome.storage.local.set = async (entries) => writes.push(entries);
  h.delivery.saveUnanswered();
  h.delivery.deliver(capture("done"));
  h.delivery.deliver(capture("pending"));
  await tick();
  h.delivery.saveUnanswered();
  assert.equal(writes.length, 1);
  assert.deepEqual(Object.keys(writes[0]), [`${C.STORAGE.PENDING_CAPTURE}pending`]);
  assert.equal(writes[0][`${C.STORAGE.PENDING_CAPTURE}pending`].tabId, null, "no HELLO reply yet");
});

test("once the extension context is invalidated nothing is sent, re-sent or relayed any more", async () => {
  const h = harness(() => new Error("Extension context invalidated."));
  h.delivery.deliver(capture("c1"));
  await h.runTimers();
  assert.equal(h.sent.length, 1);
  assert.equal(h.delivery.alive(), false);
  assert.equal(h.invalidated.length, 1);
  h.delivery.send({ type: C.MSG.HELLO });
  h.delivery.deliver(capture("c2"));
  assert.equal(h.sent.length, 1);
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 1, request: { type: C.MSG.STATUS } }, { recording: true });
  assert.deepEqual(h.posted[0][0], {
    type: C.MSG.PAGE_BRIDGE, id: 1, reply: null, content: { recording: true }, error: "extension context invalidated",
  });
});

test("send: one message, its answer to the callback; a thrown error is no answer", async () => {
  const replies = [];
  const h = harness(() => ({ state: { recording: true } }));
  h.delivery.send({ type: C.MSG.HELLO }, (reply) => replies.push(reply));
  await tick();
  assert.deepEqual(replies, [{ state: { recording: true } }]);
  h.chrome.runtime.sendMessage = () => {
    throw new Error("Could not establish connection");
  };
  h.delivery.send({ type: C.MSG.HELLO }, (reply) => replies.push(reply));
  await tick();
  assert.equal(replies.length, 1);
  assert.equal(h.delivery.alive(), true);
});

test("page bridge: requests go to the worker marked viaPageBridge; captures and selections are refused", async () => {
  const h = harness(() => ({ ok: true, state: "recording" }));
  const content = { recording: true, paused: false, step: false };
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 7, request: { type: C.MSG.STATUS } }, content);
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 8, request: { type: C.MSG.CAPTURE, turn: {} } }, content);
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 9, request: { type: C.MSG.STEP_SELECT } }, content);
  await tick();
  assert.deepEqual(h.sent, [{ type: C.MSG.STATUS, target: C.TARGET.SW, viaPageBridge: true }]);
  const byId = Object.fromEntries(h.posted.map(([data]) => [data.id, data]));
  assert.deepEqual(byId[7], { type: C.MSG.PAGE_BRIDGE, id: 7, reply: { ok: true, state: "recording" }, content });
  assert.match(byId[8].error, /cannot send captures/);
  assert.match(byId[9].error, /cannot send captures/);
  assert.ok(h.posted.every(([, origin]) => origin === "*"));
});

test("page bridge: the worker's failure comes back as the error, no answer as null", async () => {
  let answer = new Error("no listener");
  const h = harness(() => answer);
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 1, request: { type: C.MSG.STATUS } }, {});
  await tick();
  answer = undefined;
  h.delivery.bridge({ type: C.MSG.PAGE_BRIDGE, id: 2, request: null }, {});
  await tick();
  assert.equal(h.posted[0][0].error, "no listener");
  assert.equal(h.posted[1][0].reply, null);
  assert.deepEqual(h.sent[1], { target: C.TARGET.SW, viaPageBridge: true }, "a request that is not an object is empty");
});
