/*
 * lib/har.js: CDP Network events → HAR 1.2 entries (redirects, timings, bodies up to the limits), and what never
 * gets in: cookie and credential headers, private values in any encoding, bodies of pages with private fields.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { NetworkLog, buildHar, captureDom, LIMITS, DOM_STYLES } = require("../lib/har.js");
const { Redactor } = require("../lib/redact.js");

const SECRET = "Zq7pw-Secret-4242";

function request(id, url, extra = {}) {
  return {
    requestId: id, type: "XHR", timestamp: 100, wallTime: 1700000000,
    request: { method: "GET", url, headers: { Accept: "*/*", Cookie: "sid=abc" }, ...extra },
  };
}

function response(id, status = 200, mimeType = "application/json", headers = {}) {
  return { requestId: id, response: { status, statusText: "OK", protocol: "http/1.1", mimeType, headers: { "Content-Type": mimeType, "Set-Cookie": "sid=abc", ...headers } } };
}

function finished(log, id, size = 20) {
  log.event("Network.loadingFinished", { requestId: id, timestamp: 100.25, encodedDataLength: size });
}

function logWith(bodies) {
  return new NetworkLog({ fetchBody: async (id) => (id in bodies ? { body: bodies[id], base64Encoded: false } : Promise.reject(new Error("gone"))) });
}

test("a finished request becomes a HAR 1.2 entry with its body, timings and no cookie or credential header", async () => {
  const log = logWith({ r1: '{"items": [1, 2]}' });
  log.event("Network.requestWillBeSent", request("r1", "https://shop.test/api/items?page=2", { headers: { Authorization: "Bearer x", Accept: "*/*" } }));
  log.event("Network.responseReceived", response("r1"));
  finished(log, "r1");
  const har = await buildHar(log.take());
  assert.equal(har.log.version, "1.2");
  const [entry] = har.log.entries;
  assert.equal(entry.request.url, "https://shop.test/api/items?page=2");
  assert.deepEqual(entry.request.queryString, [{ name: "page", value: "2" }]);
  assert.deepEqual(entry.request.headers, [{ name: "Accept", value: "*/*" }]);
  assert.deepEqual(entry.response.headers, [{ name: "Content-Type", value: "application/json" }]);
  assert.deepEqual([entry.request.cookies, entry.response.cookies], [[], []]);
  assert.equal(entry.response.content.text, '{"items": [1, 2]}');
  assert.equal(entry.response.status, 200);
  assert.equal(entry.time, 250);
  assert.equal(entry.startedDateTime, "2023-11-14T22:13:20.000Z");
  assert.deepEqual(log.take(), [], "taken once");
});

test("a redirect is an entry of its own with redirectURL, then the request it led to", async () => {
  const log = logWith({ r2: "<html>done</html>" });
  log.event("Network.requestWillBeSent", request("r2", "https://shop.test/go"));
  log.event("Network.requestWillBeSent", {
    ...request("r2", "https://shop.test/landing"), timestamp: 100.1,
    redirectResponse: { status: 302, statusText: "Found", mimeType: "text/html", headers: { Location: "/landing" } },
  });
  log.event("Network.responseReceived", response("r2", 200, "text/html"));
  finished(log, "r2");
  const { log: har } = await buildHar(log.take());
  assert.deepEqual(har.entries.map((e) => [e.request.url, e.response.status, e.response.redirectURL]), [
    ["https://shop.test/go", 302, "https://shop.test/landing"],
    ["https://shop.test/landing", 200, ""],
  ]);
  assert.equal(har.entries[1].response.content.text, "<html>done</html>");
});

test("private values and secret URL parameters are masked in URLs, headers and bodies, in any encoding", async () => {
  const log = logWith({ r3: `{"echo": "${SECRET}"}` });
  const body = `user=ann&password=${encodeURIComponent(SECRET)}`;
  log.event("Network.requestWillBeSent", request("r3", `https://shop.test/login?token=abc123&q=${SECRET}`, {
    method: "POST", hasPostData: true, postData: body, headers: { "Content-Type": "application/x-www-form-urlencoded", Referer: `https://shop.test/?q=${SECRET}` },
  }));
  log.event("Network.responseReceived", response("r3"));
  finished(log, "r3");
  const text = JSON.stringify(await buildHar(log.take(), { redactor: new Redactor([SECRET]) }));
  assert.ok(!text.includes(SECRET) && !text.includes(encodeURIComponent(SECRET)), text);
  assert.ok(!text.includes("abc123"), "secret parameter masked");
  assert.ok(text.includes("user=ann"), "the rest of the body is kept");
});

test("no body of a request sent from a page with a private field, nor of a step whose page has one", async () => {
  const log = logWith({ r4: "public", r5: "later" });
  log.setPrivate(true);
  log.event("Network.requestWillBeSent", request("r4", "https://shop.test/login", { method: "POST", hasPostData: true, postData: "pin=1234" }));
  log.event("Network.responseReceived", response("r4", 200, "text/plain"));
  finished(log, "r4");
  log.setPrivate(false);
  log.event("Network.requestWillBeSent", request("r5", "https://shop.test/next"));
  log.event("Network.responseReceived", response("r5", 200, "text/plain"));
  finished(log, "r5");
  const [sent, next] = (await buildHar(log.take())).log.entries;
  assert.deepEqual([sent.request.postData.text, sent.response.content.text], ["", undefined]);
  assert.match(sent.request.postData.comment, /private field/);
  assert.equal(next.response.content.text, "later");

  log.event("Network.requestWillBeSent", request("r6", "https://shop.test/more"));
  log.event("Network.responseReceived", response("r6", 200, "text/plain"));
  finished(log, "r6");
  const [onPrivatePage] = (await buildHar(log.take(), { keepBodies: false })).log.entries;
  assert.equal(onPrivatePage.response.content.text, undefined);
});

test("the top frame's navigation from a private page starts a page whose requests keep their bodies", async () => {
  const log = new NetworkLog({ mainFrame: "top", fetchBody: async () => ({ body: "page data", base64Encoded: false }) });
  log.setPrivate(true);
  log.event("Network.requestWillBeSent", { ...request("nav", "https://shop.test/login", { method: "POST", hasPostData: true, postData: "pin=1234" }), type: "Document", frameId: "top" });
  log.event("Network.requestWillBeSent", { ...request("nav", "https://shop.test/welcome"), type: "Document", frameId: "top", redirectResponse: { status: 303, headers: {} } });
  log.event("Network.responseReceived", response("nav", 200, "text/html"));
  finished(log, "nav");
  log.event("Network.requestWillBeSent", { ...request("xhr", "https://shop.test/api/profile"), frameId: "top", loaderId: "nav" });
  log.event("Network.responseReceived", response("xhr", 200, "application/json"));
  finished(log, "xhr");
  const entries = (await buildHar(log.take())).log.entries;
  assert.deepEqual(entries.map((e) => [e.response.status, e.request.postData && e.request.postData.text, e.response.content.text]), [
    [303, "", undefined],
    [200, undefined, undefined],
    [200, undefined, "page data"],
  ]);
});

test("bodies over the limits, not text, or gone are not kept, and the HAR says so", async () => {
  const log = logWith({ big: "x".repeat(10), img: "PNG" });
  log.event("Network.requestWillBeSent", request("big", "https://shop.test/big"));
  log.event("Network.responseReceived", response("big", 200, "text/plain"));
  finished(log, "big", LIMITS.BODY_BYTES + 1);
  log.event("Network.requestWillBeSent", request("img", "https://shop.test/a.png"));
  log.event("Network.responseReceived", response("img", 200, "image/png"));
  finished(log, "img");
  log.event("Network.requestWillBeSent", request("gone", "https://shop.test/gone"));
  log.event("Network.responseReceived", response("gone", 200, "text/plain"));
  finished(log, "gone");
  log.event("Network.requestWillBeSent", request("fail", "https://shop.test/fail"));
  log.event("Network.loadingFailed", { requestId: "fail", timestamp: 100.5, errorText: "net::ERR_FAILED" });
  const entries = (await buildHar(log.take())).log.entries;
  assert.deepEqual(entries.map((e) => e.response.content.text), [undefined, undefined, undefined, undefined]);
  assert.deepEqual(entries.map((e) => e.request.url.split("/").pop()), ["big", "a.png", "gone", "fail"]);
  assert.equal(entries[3].response.status, 0);
  assert.equal(entries[3]._error, "net::ERR_FAILED");
});

test("the DOM snapshot asks for the documented styles and masks private values in its strings", async () => {
  let asked = null;
  const send = async (method, params) => {
    asked = [method, params];
    return { documents: [{ nodes: {}, layout: {} }], strings: ["INPUT", SECRET, "block"] };
  };
  const dom = await captureDom(send, "https://shop.test/?token=abc123", new Redactor([SECRET]));
  assert.deepEqual(asked, ["DOMSnapshot.captureSnapshot", { computedStyles: DOM_STYLES, includeDOMRects: true }]);
  assert.equal(dom.format, "webtasks-dom-snapshot/1");
  assert.deepEqual(dom.strings, ["INPUT", "********", "block"]);
  assert.ok(!dom.url.includes("abc123"));
});
