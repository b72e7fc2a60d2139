/*
 * lib/har.js under attack (issue 39 review): credentials in custom headers, a body larger than the limit once
 * decompressed, a password value in a DOM snapshot the page check missed (closed shadow root, autofill, a short one),
 * and requests of a private page after a top-frame navigation that did not replace it (204, download).
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { NetworkLog, buildHar, captureDom, LIMITS } = require("../lib/har.js");
const { Redactor } = require("../lib/redact.js");

const TOKEN = "tok-9f8e7d6c5b4a";

function sent(log, id, url, extra = {}) {
  log.event("Network.requestWillBeSent", {
    requestId: id, type: "XHR", timestamp: 100, wallTime: 1700000000, frameId: "top", loaderId: "L1",
    request: { method: "GET", url, headers: { Accept: "*/*" } }, ...extra,
  });
}

function answered(log, id, mimeType = "application/json", headers = {}, size = 20) {
  log.event("Network.responseReceived", { requestId: id, response: { status: 200, statusText: "OK", mimeType, headers } });
  log.event("Network.loadingFinished", { requestId: id, timestamp: 100.25, encodedDataLength: size });
}

test("credential headers by name (X-Auth-Token, X-Api-Key, X-CSRF-Token, any case) keep their name, not their value", async () => {
  const log = new NetworkLog({ fetchBody: async () => ({ body: "{}", base64Encoded: false }) });
  sent(log, "r1", "https://api.test/me", {
    request: { method: "GET", url: "https://api.test/me", headers: { "X-Auth-Token": TOKEN, "x-api-key": TOKEN, "X-CSRF-Token": TOKEN, Accept: "*/*" } },
  });
  answered(log, "r1", "application/json", { "X-Session-Id": TOKEN, "Content-Type": "application/json" });
  const text = JSON.stringify(await buildHar(log.take(), { redactor: new Redactor([]) }));
  assert.ok(!text.includes(TOKEN), text);
  const [entry] = JSON.parse(text).log.entries;
  assert.deepEqual(entry.request.headers.map((h) => [h.name, h.value]), [
    ["X-Auth-Token", "********"], ["x-api-key", "********"], ["X-CSRF-Token", "********"], ["Accept", "*/*"],
  ]);
  assert.deepEqual(entry.response.headers.map((h) => h.name), ["X-Session-Id", "Content-Type"]);
});

test("a response body over the per-body limit once decoded is not kept, however small it was on the wire", async () => {
  const big = JSON.stringify({ rows: "x".repeat(LIMITS.BODY_BYTES + 10) });
  const log = new NetworkLog({ fetchBody: async () => ({ body: big, base64Encoded: false }) });
  sent(log, "gz", "https://api.test/rows");
  answered(log, "gz", "application/json", { "Content-Encoding": "gzip" }, 2000);
  const [entry] = (await buildHar(log.take())).log.entries;
  assert.equal(entry.response.content.text, undefined);
  assert.match(entry.response.content.comment, /over the size limit/);
});

function passwordSnapshot(value, type = "password", autocomplete = null) {
  // strings: 0 "INPUT", 1 "type", 2 type, 3 the value, 4 "autocomplete", 5 its value
  const attributes = [1, 2, ...(autocomplete ? [4, 5] : [])];
  return {
    documents: [{ nodes: { nodeName: [0], attributes: [attributes], inputValue: { index: [0], value: [3] } }, layout: {} }],
    strings: ["INPUT", "type", type, value, "autocomplete", autocomplete || ""],
  };
}

test("a password input's value never stays in a DOM snapshot, whether the recorder knew it or not", async () => {
  for (const [value, type, autocomplete, known] of [
    ["Autofilled-Pass-77", "password", null, []], // a closed shadow root's field the page check missed, autofilled
    ["ab1", "PASSWORD", null, ["ab1"]], // a short typed password: text() masks only 4 characters or more
    ["card-4111111111111111", "text", "cc-number", []],
  ]) {
    const dom = await captureDom(async () => passwordSnapshot(value, type, autocomplete), "https://x.test/", new Redactor(known));
    const text = JSON.stringify(dom);
    assert.ok(!text.includes(value), `${value} in ${text}`);
    assert.equal(dom.strings[dom.documents[0].nodes.inputValue.value[0]], "********");
  }
  const area = { documents: [{ nodes: { attributes: [[]], textValue: { index: [0], value: [1] } }, layout: {} }], strings: ["TEXTAREA", "pin"] };
  assert.deepEqual((await captureDom(async () => area, "", new Redactor(["pin"]))).strings, ["TEXTAREA", "********"]);
  const plain = await captureDom(async () => passwordSnapshot("blue shoes", "search"), "https://x.test/", new Redactor([]));
  assert.equal(plain.strings[plain.documents[0].nodes.inputValue.value[0]], "blue shoes", "other inputs keep their value");
});

test("a top-frame navigation that leaves the private page in place (204, download) does not unlock its bodies", async () => {
  const log = new NetworkLog({ mainFrame: "top", fetchBody: async () => ({ body: `{"echo": "${TOKEN}"}`, base64Encoded: false }) });
  log.setPrivate(true);
  sent(log, "nav", "https://shop.test/ping", { type: "Document", loaderId: "nav" });
  log.event("Network.responseReceived", { requestId: "nav", response: { status: 204, mimeType: "text/html", headers: {} } });
  log.event("Network.loadingFinished", { requestId: "nav", timestamp: 100.2, encodedDataLength: 0 });
  // The login page is still there (its loader L1) and sends the password.
  sent(log, "login", "https://shop.test/api/login", {
    request: { method: "POST", url: "https://shop.test/api/login", headers: { "Content-Type": "application/json" }, hasPostData: true, postData: `{"password": "${TOKEN}"}` },
  });
  answered(log, "login");
  // A real new document (its requests carry the navigation's loader) does keep its bodies.
  sent(log, "nav2", "https://shop.test/home", { type: "Document", loaderId: "nav2" });
  answered(log, "nav2", "text/html");
  sent(log, "next", "https://shop.test/api/feed", { loaderId: "nav2" });
  answered(log, "next");
  const entries = (await buildHar(log.take())).log.entries;
  const login = entries.find((e) => e.request.url.endsWith("/login"));
  assert.ok(!JSON.stringify(login).includes(TOKEN), JSON.stringify(login));
  assert.equal(entries.find((e) => e.request.url.endsWith("/feed")).response.content.text, `{"echo": "${TOKEN}"}`);
});

test("a chatty page between two steps: the log holds at most the entries kept, and bodies up to the step's limit", async () => {
  let asked = 0;
  const body = JSON.stringify({ poll: "y".repeat(200 * 1024) });
  const log = new NetworkLog({ fetchBody: async () => ++asked && { body, base64Encoded: false } });
  for (let i = 0; i < 3 * LIMITS.ENTRIES; i++) {
    sent(log, `p${i}`, `https://shop.test/poll?i=${i}`);
    answered(log, `p${i}`, "application/json", {}, 100);
  }
  for (let i = 0; i < 2 * LIMITS.ENTRIES; i++) sent(log, `hang${i}`, "https://shop.test/never-answered");
  const records = log.take();
  assert.ok(records.length <= LIMITS.ENTRIES, `${records.length} records held`);
  assert.ok(asked <= LIMITS.ENTRIES, `${asked} bodies asked for`);
  const held = (await Promise.all(records.map((r) => r.body))).filter((text) => typeof text === "string");
  assert.ok(held.reduce((sum, text) => sum + text.length, 0) <= LIMITS.STEP_BODY_BYTES, "bodies held in memory");
  assert.ok(log.pending.size <= LIMITS.ENTRIES, `${log.pending.size} unfinished requests held`);
  // 2,000 answered past the first 1,000, and 1,000 never answered past the 1,000 held
  assert.match((await buildHar(records)).log.comment, /^3000 requests over the limit not kept$/);
});

test("a step's HAR stays under the server's 32 MiB (chunked uploads, long data: URLs), the rest counted", async () => {
  const chunk = "c".repeat(60 * 1024);
  const log = new NetworkLog({ fetchBody: async () => null });
  for (let i = 0; i < LIMITS.ENTRIES; i++) {
    const url = i % 2 ? `https://shop.test/upload?part=${i}` : `data:image/png;base64,${"A".repeat(100 * 1024)}`;
    sent(log, `u${i}`, url, { request: { method: "POST", url, headers: { Referer: url }, hasPostData: true, postData: chunk } });
    answered(log, `u${i}`, "application/json", {}, 10);
  }
  const har = await buildHar(log.take());
  const bytes = Buffer.byteLength(JSON.stringify(har));
  assert.ok(bytes <= LIMITS.HAR_BYTES && LIMITS.HAR_BYTES < 32 * 1024 * 1024, `${bytes} bytes`);
  assert.ok(har.log.entries.length > 10, "the first requests are kept");
  assert.match(har.log.comment, new RegExp(`^${LIMITS.ENTRIES - har.log.entries.length} requests over the limit not kept$`));
});

test("a private value sent or echoed as a JSON string (escaped quote, backslash, slash, \\u escapes) is masked", async () => {
  const value = 'pa"ss\\wörd/1';
  const redactor = new Redactor([value]);
  const bodies = [
    JSON.stringify({ password: value }),
    JSON.stringify({ password: value }).replace(/ö/g, "\\u00f6"),
    JSON.stringify({ password: value }).replace(/\//g, "\\/").replace(/ö/g, "\\u00F6"),
  ];
  const log = new NetworkLog({ fetchBody: async (id) => ({ body: bodies[Number(id)], base64Encoded: false }) });
  bodies.forEach((body, i) => {
    sent(log, String(i), "https://api.test/me", { request: { method: "PUT", url: "https://api.test/me", headers: {}, hasPostData: true, postData: body } });
    answered(log, String(i));
  });
  const text = JSON.stringify(await buildHar(log.take(), { redactor }));
  for (const needle of ["wörd", "w\\\\u00f6rd", "w\\\\u00F6rd", "pa\\\\\\\"ss"]) assert.ok(!text.includes(needle), `${needle} in ${text}`);
});

test("a password field in a closed shadow root counts as a private field of the page (no DOM snapshot, no bodies)", () => {
  const { JSDOM } = require("jsdom");
  const dom = require("../lib/dom.js");
  const frames = require("../lib/frames.js");
  const { window } = new JSDOM("<!doctype html><html><body><login-box></login-box></body></html>", { url: "https://shop.test/" });
  const host = window.document.querySelector("login-box");
  const closed = host.attachShadow({ mode: "closed" });
  closed.innerHTML = '<input type="password" value="">';
  const shadowRootOf = (el) => (el === host ? closed : el.shadowRoot || null); // chrome.dom.openOrClosedShadowRoot
  const geometry = frames.createFrames({ window, dom, selectors: () => [], shadowRootOf });
  assert.equal(geometry.regionsReport(null, null, true).privateFields, 1);
});
