/*
 * What the side panel shows of a recording (lib/activity.js, kept by lib/recorder.js): the last actions with their
 * labels and pages, newest first, at most ten; chat turns counted; no typed text of a private field; the status
 * line's upload words (offline, all sent) and the stop confirmation's upload state, through a real uploader.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const A = require("../lib/activity.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");
const { Recorder } = require("../lib/recorder.js");
const { SecretStore } = require("../lib/redact.js");
const { FakeServer, freshStore, fakeClock, quiet } = require("./sw_fakes.js");

const SECRET = "Hunter2-Orca-77";

async function setup() {
  const ctx = { server: new FakeServer(), store: await freshStore(), kv: new Kv(new MemoryArea()), clock: fakeClock() };
  ctx.secrets = new SecretStore(new MemoryArea());
  let ids = 0;
  ctx.uploader = new Uploader({
    store: ctx.store, kv: ctx.kv, fetch: ctx.server.fetch, now: ctx.clock.now, random: () => 0, log: quiet, schedule() {},
  });
  ctx.recorder = new Recorder({
    kv: ctx.kv, tabsKv: new Kv(new MemoryArea()), store: ctx.store, uploader: ctx.uploader, now: ctx.clock.now,
    uuid: () => `id-${++ids}`, log: quiet, redactor: () => ctx.secrets.redactor(),
  });
  return ctx;
}

async function start(ctx, extra = {}) {
  const config = { serverUrl: "http://server.test", token: "secret", project: "alpha", task_description: "Order tea", ...extra };
  const result = await ctx.recorder.command("start", config);
  assert.equal(result.ok, true, result.error);
  return ctx.recorder.session();
}

function element(tagName, attributes = {}, textContent = "") {
  return { tagName, attributes, textContent };
}

/** A CAPTURE the way the content script sends it, the private values beside it (taken by the worker first). */
async function act(ctx, session, intent, { el, args = {}, url = "https://shop.test/order?card=4111#top", privateValues } = {}) {
  const turn = { type: "browser", intent, eventTime: ctx.clock.now(), arguments: { metadata: { url }, ...args } };
  if (el) turn.arguments.element = el;
  const message = { target: C.TARGET.SW, type: C.MSG.CAPTURE, turn };
  if (privateValues) message.privateValues = privateValues;
  ctx.secrets.take(message);
  ctx.clock.advance(100);
  return ctx.recorder.recordAction(session, message, { tabId: 1, screenshot: null });
}

test("labels name the target by its accessible name, text or field name, never its value; pages drop the query", () => {
  assert.equal(A.labelOf(element("A", {}, "  Second\n page ")), "Second page");
  assert.equal(A.labelOf(element("BUTTON", { "aria-label": "Close dialog" }, "×")), "Close dialog");
  assert.equal(A.labelOf(element("INPUT", { id: "q", placeholder: "Search", value: "typed words" })), "Search");
  assert.equal(A.labelOf(element("INPUT", { type: "password", name: "password", value: "x" })), "password");
  assert.equal(A.labelOf(element("FORM", { id: "order" }, "--CanadaFrance Send")), "order");
  assert.equal(A.labelOf(element("DIV", {}, "x".repeat(200))).length, A.LABEL_MAX);
  const editor = element("DIV", { contenteditable: "true", "aria-placeholder": "Message" }, "Dear Ada, my PIN is 4321");
  assert.equal(A.labelOf(editor), "div", "an editor is named, never by the text typed in it");
  assert.equal(A.labelOf(element("DIV", { contenteditable: "", title: "Reply" }, "typed words")), "Reply");
  assert.equal(A.labelOf(element("DIV", { contenteditable: "false" }, "Read only")), "Read only");
  assert.equal(A.pageOf("https://shop.test:8443/a/b?token=t#f"), "shop.test:8443/a/b");
  assert.equal(A.pageOf("not a url"), "");
  assert.deepEqual(A.itemOf({ type: "chat", speaker: "instructor", utterance: "hi" }), { type: "chat", label: "Instructor", page: "", at: null });
  const select = { type: "browser", intent: "change", arguments: { metadata: { url: "http://a.test/x" }, element: element("SELECT", { name: "color" }) } };
  assert.deepEqual(A.itemOf(select), { type: "select", label: "color", page: "a.test/x", at: null });
  const typed = { type: "browser", intent: "textInput", arguments: { metadata: { url: "http://a.test/" }, text: "Ada", element: element("INPUT", { id: "name" }) } };
  assert.deepEqual(A.itemOf(typed), { type: "type", label: "name", page: "a.test/", at: null });
});

test("the recorder keeps the last ten actions newest first, counts chat turns, and starts afresh per recording", async () => {
  const ctx = await setup();
  ctx.server.down = true;
  let session = await start(ctx);
  for (let i = 1; i <= 12; i++) await act(ctx, session, "click", { el: element("BUTTON", {}, `Button ${i}`) });
  await ctx.recorder.recordChat(session, { speaker: "navigator", utterance: "Done?" });
  await ctx.recorder.recordChat(session, { speaker: "instructor", utterance: "Yes" });
  let { activity } = await ctx.recorder.status();
  assert.equal(activity.turns, 14);
  assert.equal(activity.chats, 2);
  assert.equal(activity.items.length, A.RING_SIZE);
  assert.deepEqual(activity.items.slice(0, 3).map((i) => `${i.type} ${i.label}`), ["chat Instructor", "chat Navigator", "click Button 12"]);
  assert.equal(activity.items[2].page, "shop.test/order");
  await ctx.recorder.command("stop");
  session = await start(ctx, { task_description: "Second one" });
  ({ activity } = await ctx.recorder.status());
  assert.deepEqual([activity.turns, activity.chats, activity.items, activity.taskDescription], [0, 0, [], "Second one"]);
  assert.equal(activity.clientId, session.clientId);
});

test("a private field's typed text is in no item and nowhere in the panel's storage", async () => {
  const ctx = await setup();
  ctx.server.down = true;
  const session = await start(ctx);
  const field = element("INPUT", { type: "password", id: "password", name: "password", value: SECRET });
  await act(ctx, session, "click", { el: field, privateValues: [SECRET] });
  await act(ctx, session, "textInput", { el: field, args: { text: SECRET }, privateValues: [SECRET] });
  await act(ctx, session, "submit", { el: element("FORM", { id: "login" }, `Password ${SECRET}`), privateValues: [SECRET] });
  await ctx.recorder.recordChat(session, { speaker: "navigator", utterance: `my password is ${SECRET}` });
  const { activity } = await ctx.recorder.status();
  assert.deepEqual(activity.items.map((i) => `${i.type} ${i.label}`), ["chat Navigator", "submit login", "type password", "click password"]);
  const everything = JSON.stringify(await ctx.kv.area.get(null));
  assert.ok(everything.includes("password"), "the ring is in storage");
  assert.ok(!everything.includes(SECRET), "the typed password is in chrome.storage.local");
});

test("stop: the confirmation's upload state goes from waiting to all saved once the server is back", async () => {
  const ctx = await setup();
  const session = await start(ctx);
  ctx.server.down = true;
  for (let i = 0; i < 3; i++) await act(ctx, session, "click", { el: element("A", {}, `Link ${i}`) });
  await ctx.recorder.command("stop", { taskDescription: "Order green tea" });
  let { activity, upload, counters } = await ctx.recorder.status();
  assert.ok(activity.stoppedAt);
  assert.equal(activity.demoName, session.demoName || activity.demoName);
  assert.equal(activity.taskDescription, "Order green tea");
  assert.equal(A.savedLine(activity), "3 waiting to upload");
  assert.equal(A.uploadLine({ upload, queued: counters.queued, sentBefore: true }), "Offline — 3 actions kept, will send when the server is back");
  ctx.server.down = false;
  ctx.clock.advance(120000);
  await ctx.uploader.kick({ force: true });
  ({ activity, upload, counters } = await ctx.recorder.status());
  assert.ok(activity.demoName);
  assert.equal(activity.finished, true);
  assert.equal(A.savedLine(activity), "all 3 actions saved");
  assert.equal(A.uploadLine({ upload, queued: counters.queued, sentBefore: true }), "All sent");
});

test("the upload words: offline for a network error, a server error in plain words, counts, nothing before anything was sent", () => {
  const offline = { attempt: 2, offline: true, lastRetryError: "POST /api/recordings/: Failed to fetch" };
  assert.equal(A.uploadLine({ upload: offline, queued: 1 }), "Offline — 1 action kept, will send when the server is back");
  const busy = { attempt: 1, offline: false, lastRetryError: "HTTP 503: unavailable" };
  assert.equal(A.uploadLine({ upload: busy, queued: 4 }), "The server is not answering — 4 actions kept, will retry");
  assert.equal(A.uploadLine({ upload: { attempt: 0 }, queued: 2 }), "2 to send");
  assert.equal(A.uploadLine({ upload: {}, queued: 0, sentBefore: false }), "");
  assert.equal(A.uploadLine({ upload: {}, queued: 0, sentBefore: true }), "All sent");
  assert.equal(A.savedLine({ turns: 1, pending: 0, finished: true }), "all 1 action saved");
  assert.equal(A.savedLine({ turns: 5, pending: 0, finished: false }), "saving…");
});

test("a server answering 503 is not offline; a closed port is", async () => {
  const ctx = await setup();
  const session = await start(ctx);
  await act(ctx, session, "click", { el: element("A", {}, "Link") });
  ctx.server.failNext(5, 503);
  ctx.clock.advance(5000);
  await ctx.uploader.kick({ force: true });
  let { upload } = await ctx.recorder.status();
  assert.equal(upload.offline, false);
  assert.match(A.uploadLine({ upload, queued: 1 }), /^The server is not answering/);
  ctx.server.failures = [];
  ctx.server.down = true;
  ctx.clock.advance(120000);
  await ctx.uploader.kick({ force: true });
  ({ upload } = await ctx.recorder.status());
  assert.equal(upload.offline, true);
  assert.match(A.uploadLine({ upload, queued: 1 }), /^Offline — 1 action kept/);
});

test("chat turns are counted once whether the recorder or the live session stored them", async () => {
  const ctx = await setup();
  ctx.server.down = true;
  const session = await start(ctx, { mode: "chat" });
  const typed = await ctx.recorder.recordChat(session, { speaker: "navigator", utterance: "Starting" });
  assert.equal((await ctx.recorder.chatSeen({ client_id: typed.client_id, speaker: "navigator" })).ok, true);
  await ctx.recorder.chatSeen({ client_id: "live-1", speaker: "instructor" });
  await ctx.recorder.chatSeen({ client_id: "live-1", speaker: "instructor" }); // replayed after a reconnect
  await ctx.recorder.chatSeen({ client_id: "live-2", speaker: "navigator" });
  const { activity } = await ctx.recorder.status();
  assert.equal(activity.chats, 3);
  assert.equal(activity.turns, 3, "every turn of the recording, whichever way it went to the server");
  assert.deepEqual(activity.items.map((i) => i.label), ["Navigator", "Instructor", "Navigator"]);
  await ctx.recorder.command("stop");
  assert.equal((await ctx.recorder.chatSeen({ client_id: "live-3", speaker: "navigator" })).ok, false);
});

test("the list is in the actions' order, not their storing order (a click stored after the load it caused)", () => {
  let activity = A.started({ clientId: "s1", taskDescription: "", mode: "task", step: false, startedAt: 0 });
  const turn = (intent, timestamp, text) => ({
    type: "browser", intent, timestamp, arguments: { metadata: { url: "http://a.test/p" }, element: element("A", {}, text) },
  });
  activity = A.added(activity, "s1", turn("click", 1.0, "First"));
  activity = A.added(activity, "s1", turn("load", 2.5));
  activity = A.added(activity, "s1", turn("click", 2.0, "Link"));
  activity = A.added(activity, "s2", turn("click", 3.0, "Another recording's"));
  assert.deepEqual(activity.items.map((i) => `${i.type} ${i.label}`), ["load a", "click Link", "click First"]);
  assert.equal(activity.turns, 3);
});
