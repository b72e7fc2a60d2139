/*
 * The worker's redaction (lib/redact.js through lib/recorder.js): a password typed into a GET form reappears in the
 * next page's URL, title, text, links and attributes, in tab and history URLs and in an MHTML snapshot; nothing the
 * recorder stores in IndexedDB or uploads holds it, in any form, nor a secret-named parameter's value.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const zlib = require("node:zlib");

const C = require("../lib/constants.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");
const { Recorder } = require("../lib/recorder.js");
const { SecretStore, MASK } = require("../lib/redact.js");
const step = require("../lib/step.js");
const privacy = require("../lib/privacy.js");
const { FakeServer, freshStore, fakeClock, quiet } = require("./sw_fakes.js");

const PASSWORD = "Zq7 pass&word=Orca!";
const FORMS = [PASSWORD, "Zq7+pass%26word%3DOrca%21", "Zq7%20pass%26word%3DOrca%21", "Zq7 pass&amp;word=Orca!", "Zq7+pass%26word%3dOrca%21"];
const TOKEN = "Tok-Otter-8812"; // a hidden csrf_token's value: only its parameter's name marks it
const FORM_URL = "https://shop.test/login.html";
const ECHO_URL = `https://shop.test/echo?user=Ann&pw=Zq7+pass%26word%3DOrca%21&color=blue&csrf_token=${TOKEN}`;
const TAB = 5;

async function setup() {
  const ctx = { server: new FakeServer(), store: await freshStore(), kv: new Kv(new MemoryArea()), tabsKv: new Kv(new MemoryArea()), clock: fakeClock() };
  ctx.area = new MemoryArea(); // chrome.storage.session
  ctx.secrets = new SecretStore(ctx.area);
  let ids = 0;
  ctx.server.down = true; // nothing is uploaded (and so left IndexedDB) before the test reads what is stored
  ctx.uploader = new Uploader({
    store: ctx.store, kv: ctx.kv, fetch: ctx.server.fetch, now: ctx.clock.now, random: () => 0, log: quiet, schedule: () => {},
  });
  ctx.recorder = new Recorder({
    kv: ctx.kv, tabsKv: ctx.tabsKv, store: ctx.store, uploader: ctx.uploader, now: ctx.clock.now, uuid: () => `id-${++ids}`,
    log: quiet, userAgent: "test", timezoneOffsetMinutes: 0, redactor: () => ctx.secrets.redactor(),
  });
  const started = await ctx.recorder.command("start", { serverUrl: "http://server.test", token: "secret", project: "alpha" });
  assert.equal(started.ok, true, started.error);
  ctx.session = await ctx.recorder.session();
  return ctx;
}

/** A CAPTURE as the content script sends it (privateValues beside the turn), taken in by the worker's listener. */
function capture(ctx, { id, intent, url, ms, html, element, privateValues, args = {} }) {
  const message = {
    target: C.TARGET.SW, type: C.MSG.CAPTURE,
    turn: { client_id: id, type: "browser", intent, eventTime: ctx.session.startedAt + ms, arguments: { metadata: { url }, ...args } },
    page: { html, bboxes: { u1: { x: 0, y: 0, width: 1, height: 1 } } },
  };
  if (element) message.turn.arguments.element = element;
  if (privateValues) message.privateValues = privateValues;
  ctx.secrets.take(message); // service_worker.js, synchronously in onMessage
  return message;
}

const ECHO_PAGE = `<!DOCTYPE html><html data-webtasks-id="e1"><head><title>Welcome Zq7 pass&amp;word=Orca!</title></head>`
  + `<body><p data-echo="Zq7 pass&amp;word=Orca!">You typed Zq7 pass&amp;word=Orca!</p>`
  + `<a id="again" href="/echo?user=Ann&amp;pw=Zq7+pass%26word%3DOrca%21&amp;csrf_token=${TOKEN}">again</a></body></html>`;

const MHTML = [
  `Snapshot-Content-Location: ${ECHO_URL}`, "Subject: =?utf-8?Q?Welcome=20Zq7=20pass&word=3DOrca!?=", "MIME-Version: 1.0",
  'Content-Type: multipart/related; type="text/html"; boundary="B"', "", "--B", "Content-Type: text/html",
  "Content-Transfer-Encoding: quoted-printable", `Content-Location: ${ECHO_URL}`, "",
  "<title>Welcome Zq7 pass&amp;word=3DOrca!</title><p>You typed Zq7 pass&amp;word=3DOrca!</p>", "--B--", "",
].join("\r\n");

/** Every byte the recorder keeps for the session: its turns and their blobs in IndexedDB. */
async function stored(ctx) {
  const records = await ctx.store.readyTurns(ctx.session.clientId, 1000, Infinity);
  const shas = records.flatMap(({ turn }) => [turn.page, turn.bboxes, turn.screenshot, (turn.arguments.properties || {}).mhtml]).filter(Boolean);
  const blobs = Object.values(await ctx.store.getBlobs(shas)).map((b) => Buffer.from(b.bytes).toString("latin1"));
  return { turns: records.map((r) => r.turn), text: JSON.stringify(records) + blobs.join("\n"), blobs };
}

function assertNowhere(text, what) {
  for (const secret of [...FORMS, TOKEN]) assert.ok(!text.includes(secret), `${JSON.stringify(secret)} in ${what}`);
}

test("a GET form's password is masked in the next page's load, actions, page, tab and history URLs and snapshot", async () => {
  const ctx = await setup();
  const { session } = ctx;
  // The form page: the password field's value goes to the worker with the submit (the page shows only the mask).
  const form = `<form><input type="password" value="${MASK}"><input type="hidden" name="csrf_token" value="${TOKEN}"></form>`;
  await ctx.recorder.recordAction(session, capture(ctx, { id: "submit", intent: "submit", url: FORM_URL, ms: 100, html: form, privateValues: [PASSWORD] }), { tabId: TAB, screenshot: null });
  // The browser commits the echo page, a script replaces its URL at once, the annotator acts on it.
  const load = await ctx.recorder.recordLoad(session, { tabId: TAB, url: ECHO_URL, transitionType: "form_submit", timeStamp: session.startedAt + 300 });
  assert.equal(load.arguments.metadata.url, ECHO_URL, "what the worker works with keeps the real URL (tab matching)");
  const replaced = "https://shop.test/echo/done?again=Zq7%20pass%26word%3DOrca%21#pw=Zq7%20pass%26word%3DOrca%21";
  await ctx.recorder.recordHistoryState(session, { tabId: TAB, frameId: 0, url: replaced, transitionType: "link", transitionQualifiers: [], timeStamp: session.startedAt + 400 });
  const element = {
    attributes: { id: "again", href: `/echo?user=Ann&pw=Zq7+pass%26word%3DOrca%21&csrf_token=${TOKEN}`, "data-webtasks-id": "a1" },
    tagName: "A", xpath: "/html/body/a", textContent: "again", outerHTML: '<a id="again">again</a>', bbox: { x: 0 },
  };
  for (const [i, intent] of ["click", "hover", "click", "scroll"].entries()) {
    const message = capture(ctx, { id: `act-${i}`, intent, url: ECHO_URL, ms: 1000 + i * 100, html: ECHO_PAGE, element, args: { properties: { x: 1 } } });
    await ctx.recorder.recordAction(session, message, { tabId: TAB, screenshot: new Uint8Array([i + 1]), tabUrl: ECHO_URL });
  }
  await ctx.recorder.recordTab(session, "tabswitch", { tabId: TAB, tabIdOrigin: 2, url: ECHO_URL, eventTime: session.startedAt + 2000 });
  const snapshot = capture(ctx, { id: "step", intent: "click", url: ECHO_URL, ms: 2100, html: ECHO_PAGE, element });
  await ctx.recorder.recordAction(session, snapshot, { tabId: TAB, screenshot: null, tabUrl: ECHO_URL, mhtml: new Uint8Array(Buffer.from(MHTML, "latin1")) });

  const { turns, text, blobs } = await stored(ctx);
  assertNowhere(text, "IndexedDB");
  const echo = "https://shop.test/echo?user=Ann&pw=********&color=blue&csrf_token=********";
  const loads = turns.filter((t) => t.intent === "load");
  const done = "https://shop.test/echo/done?again=********#pw=********";
  assert.deepEqual(loads.map((t) => [t.arguments.metadata.url, t.arguments.properties.url]), [[done, done]], "the load moved by the replaceState");
  const actions = turns.filter((t) => t.client_id.startsWith("act-"));
  assert.equal(actions.length, 4);
  for (const turn of actions) {
    assert.equal(turn.arguments.metadata.url, echo);
    assert.equal(turn.arguments.element.attributes.href, "/echo?user=Ann&pw=********&csrf_token=********");
    assert.equal(turn.arguments.element.attributes["data-webtasks-id"], "a1");
  }
  assert.ok(blobs.some((b) => b.includes("<title>Welcome ********</title>")), "the page keeps its structure, the value masked");
  assert.equal(turns.find((t) => t.intent === "tabswitch").arguments.metadata.url, echo);
  assert.ok(blobs.some((b) => b.startsWith("Snapshot-Content-Location: https://shop.test/echo?user=Ann&pw=********")), "the snapshot is kept, masked");
  assert.deepEqual(await ctx.area.get(C.STORAGE.SECRETS), { [C.STORAGE.SECRETS]: [PASSWORD] }, "remembered in storage.session only");

  // What goes to the server.
  ctx.server.down = false;
  await ctx.recorder.command("stop");
  await ctx.uploader.kick({ force: true });
  const sent = ctx.server.log.map((r) => (r.body instanceof Uint8Array || Buffer.isBuffer(r.body) || r.body instanceof ArrayBuffer
    ? zlib.gunzipSync(Buffer.from(r.body)).toString("latin1") : String(r.body))).join("\n");
  assert.ok(sent.includes("act-3"), "the turns were uploaded");
  assertNowhere(sent, "the requests to the server");
  assert.ok(!sent.includes("privateValues"));
});

test("without the value known, only secret-named parameters are masked: the worker never guesses", async () => {
  const ctx = await setup();
  await ctx.recorder.recordLoad(ctx.session, { tabId: TAB, url: ECHO_URL, transitionType: "form_submit", timeStamp: ctx.session.startedAt + 300 });
  const [load] = (await stored(ctx)).turns;
  assert.equal(load.arguments.metadata.url, "https://shop.test/echo?user=Ann&pw=Zq7+pass%26word%3DOrca%21&color=blue&csrf_token=********");
});

test("a step's Type into a private element is remembered and masked in what follows; a plain one is not", async () => {
  const ctx = await setup();
  const selection = (level) => ({ privacy: level, options: null, capture: { turn: { arguments: { element: { attributes: {} } } } } });
  assert.deepEqual(step.privateValuesOf(selection(privacy.VALUE), "type", PASSWORD), [PASSWORD]);
  assert.deepEqual(step.privateValuesOf(selection(privacy.NONE), "type", "blue shoes"), []);
  assert.deepEqual(step.privateValuesOf(selection(privacy.SUBTREE), "click", PASSWORD), []);
  const select = { ...selection(privacy.SUBTREE), options: [{ value: "v-77", text: "Secret option" }] };
  assert.deepEqual(step.privateValuesOf(select, "select", "v-77"), ["v-77", "Secret option"]);
  ctx.secrets.add(step.privateValuesOf(selection(privacy.VALUE), "type", PASSWORD));
  await ctx.recorder.recordLoad(ctx.session, { tabId: TAB, url: ECHO_URL, transitionType: "form_submit", timeStamp: ctx.session.startedAt + 300 });
  assertNowhere((await stored(ctx)).text, "IndexedDB");
});
