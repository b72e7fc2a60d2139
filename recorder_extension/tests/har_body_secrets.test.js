/*
 * lib/har.js: secret-named fields in request bodies the page's script sends (WebLINX traffic review): JSON at any
 * depth (also escaped names, numbers), multipart parts, and a form body's first field are masked; other fields and
 * the body's shape are kept.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { NetworkLog, buildHar } = require("../lib/har.js");
const { Redactor } = require("../lib/redact.js");

async function posted(body, type) {
  const log = new NetworkLog({ fetchBody: async () => ({ body: "{}", base64Encoded: false }) });
  log.event("Network.requestWillBeSent", {
    requestId: "r1", type: "Fetch", timestamp: 100, wallTime: 1700000000, frameId: "top", loaderId: "L1",
    request: { method: "POST", url: "https://api.test/x", headers: { "Content-Type": type }, hasPostData: true, postData: body },
  });
  log.event("Network.responseReceived", { requestId: "r1", response: { status: 200, statusText: "OK", mimeType: "application/json", headers: {} } });
  log.event("Network.loadingFinished", { requestId: "r1", timestamp: 100.25, encodedDataLength: 2 });
  const [entry] = (await buildHar(log.take(), { redactor: new Redactor([]) })).log.entries;
  return entry.request.postData.text;
}

test("JSON bodies: secret-named values at any depth are masked, other values and the layout kept", async () => {
  const body = '{"user": "Ann", "api_key": "Key-Plover-8830", "nested": {"access_token":"Tok-1", "pin": 12345678},'
    + ' "pass\\u0077ord": "Pw-Godwit", "n": 3, "list": [{"jwt": "eyJ-Stint"}]}';
  const text = await posted(body, "application/json");
  for (const secret of ["Key-Plover-8830", "Tok-1", "Pw-Godwit", "eyJ-Stint"]) assert.ok(!text.includes(secret), text);
  assert.deepEqual(JSON.parse(text).user, "Ann");
  assert.equal(JSON.parse(text).n, 3);
  assert.equal(JSON.parse(text).nested.pin, 12345678);
  assert.equal(JSON.parse(text).api_key, "********");
});

test("multipart bodies: a secret-named part's value is masked, the others and the boundaries kept", async () => {
  const b = "----WebKitFormBoundaryAb12";
  const body = `--${b}\r\nContent-Disposition: form-data; name="user"\r\n\r\nAnn\r\n`
    + `--${b}\r\nContent-Disposition: form-data; name="access_token"\r\n\r\nMulti-Sanderling-3390\r\n`
    + `--${b}\r\nContent-Disposition: form-data; name="password"\r\nContent-Type: text/plain\r\n\r\nPw-2\r\n--${b}--\r\n`;
  const text = await posted(body, `multipart/form-data; boundary=${b}`);
  assert.ok(!text.includes("Multi-Sanderling-3390") && !text.includes("Pw-2"), text);
  assert.ok(text.includes('name="user"\r\n\r\nAnn\r\n'), text);
  assert.equal(text.split(`--${b}`).length, body.split(`--${b}`).length);
});

test("form bodies: the first field is masked like the others", async () => {
  const text = await posted("password=Form-Dunlin&user=Ann&token=T-2", "application/x-www-form-urlencoded");
  assert.equal(text, "password=********&user=Ann&token=********");
});
