/*
 * lib/redact.js: secret URL parameters masked in any text (the same cases the server's test reads), and the values of
 * private fields masked wherever they reappear — URLs, page HTML, turns, MHTML — in the forms a browser writes them
 * in; short values only as whole values; the values remembered in memory (chrome.storage.session) only.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const C = require("../lib/constants.js");
const redact = require("../lib/redact.js");
const { MemoryArea } = require("../lib/sessions.js");

const { MASK, createRedactor, maskParameters, isSecretParameter, SecretStore } = redact;
const VECTORS = JSON.parse(fs.readFileSync(path.join(__dirname, "fixtures", "secret_parameters.json"), "utf8"));
const UID = C.UID_ATTRIBUTE;

// A password with a space and characters a URL encodes: the GET form writes it as Zq7+pass%26word%3DOrca%21.
const PASSWORD = "Zq7 pass&word=Orca!";
const FORMS = [PASSWORD, "Zq7+pass%26word%3DOrca%21", "Zq7%20pass%26word%3DOrca!", "Zq7%20pass&word=Orca!", "Zq7 pass&amp;word=Orca!", "Zq7+pass%26word%3dOrca%21"];

function assertNoForm(text, what) {
  for (const form of FORMS) assert.ok(!text.includes(form), `${JSON.stringify(form)} in ${what}: ${text}`);
}

// --- Rule 1: secret parameters ------------------------------------------------------------------------------------

test("secret-named parameters are masked in URLs, fragments, path parameters, HTML and text (shared cases)", () => {
  for (const [input, expected] of VECTORS.cases) assert.equal(maskParameters(input), expected, input);
});

test("the masking is stable: masked text masked again is the same", () => {
  for (const [, expected] of VECTORS.cases) assert.equal(maskParameters(expected), expected, expected);
});

test("a parameter is secret when its name contains a listed part, whatever its case or encoding", () => {
  for (const name of ["password", "NEW_PASSWORD", "pwd", "passwd", "csrf_token", "authCode", "key", "client_secret", "PHPSESSID", "session_id", "Authorization", "otp", "X-Amz-Signature", "sig", "credentials", "%70assword"]) {
    assert.ok(isSecretParameter(name), name);
  }
  for (const name of ["q", "page", "lang", "user", "color", "state", "expires_in", "to+ken"]) assert.ok(!isSecretParameter(name), name);
});

// --- Rule 2: private values ---------------------------------------------------------------------------------------

test("a private value is masked in a URL in every form a browser writes it, and a secret name's value too", () => {
  const r = createRedactor([PASSWORD]);
  const url = "http://127.0.0.1:8000/echo?user=Ann+Lee&pw=Zq7+pass%26word%3DOrca%21&color=blue&csrf_token=T0k#pw=Zq7%20pass%26word%3DOrca%21";
  assert.equal(r.text(url), "http://127.0.0.1:8000/echo?user=Ann+Lee&pw=********&color=blue&csrf_token=********#pw=********");
  assert.equal(r.text("http://a.test/Zq7%20pass&word=Orca!/x"), "http://a.test/********/x", "in a path (encodeURI)");
  assert.equal(r.text("http://a.test/x?w=zq7+pass%26word%3dorca%21"), "http://a.test/x?w=zq7+pass%26word%3dorca%21", "another value (case)");
  assert.equal(r.text("http://a.test/x?w=Zq7+pass%26word%3dOrca%21"), "http://a.test/x?w=********", "lower-case hex");
});

test("a private value is masked in a page's title, text, attributes, links, form values and frames; the structure stays", () => {
  const r = createRedactor([PASSWORD]);
  const html = `<!DOCTYPE html><html ${UID}="u1"><head><title>Signed in with Zq7 pass&amp;word=Orca!</title></head>`
    + `<body><p ${UID}="u2" data-echo="Zq7 pass&amp;word=Orca!">You typed Zq7 pass&amp;word=Orca! here</p>`
    + `<a href="/next?pw=Zq7+pass%26word%3DOrca%21&amp;lang=en">again</a><input value="Zq7 pass&amp;word=Orca!">`
    + `<form action="/echo?pw=Zq7+pass%26word%3DOrca%21"></form>`
    + `<iframe srcdoc='<p title="Zq7 pass&amp;amp;word=Orca!">Zq7 pass&amp;amp;word=Orca!</p>'></iframe></body></html>`;
  const out = r.html(html);
  assertNoForm(out, "the page");
  assert.equal(out, `<!DOCTYPE html><html ${UID}="u1"><head><title>Signed in with ********</title></head>`
    + `<body><p ${UID}="u2" data-echo="********">You typed ******** here</p>`
    + `<a href="/next?pw=********&amp;lang=en">again</a><input value="********">`
    + `<form action="/echo?pw=********"></form>`
    + `<iframe srcdoc='<p title="********">********</p>'></iframe></body></html>`);
});

test("a value that looks like a secret parameter itself is masked whole, not only its tail", () => {
  const r = createRedactor(["abc&token=xyz"]);
  assert.equal(r.text("typed abc&token=xyz here, and ?q=abc%26token%3Dxyz"), "typed ******** here, and ?q=********");
});

test("a value that is also a tag or attribute name never breaks the page: names and uids are kept", () => {
  const r = createRedactor(["class", "k3x9"]);
  const html = `<div class="class" ${UID}="k3x9qa1b" title="a class act">class</div>`;
  assert.equal(r.html(html), `<div class="********" ${UID}="k3x9qa1b" title="a ******** act">********</div>`);
});

test("style rules get the secret-parameter rule only: a private value never breaks a page's layout", () => {
  const r = createRedactor(["none", "Zq7pw-Secret-4242"]);
  const html = '<style>.a { display: none } .b { background: url(/i.png?sig=s1) }</style>'
    + '<p style="display:none;background:url(/j.png?token=t1)">none of Zq7pw-Secret-4242</p>';
  assert.equal(r.html(html), '<style>.a { display: none } .b { background: url(/i.png?sig=********) }</style>'
    + '<p style="display:none;background:url(/j.png?token=********)">******** of ********</p>');
});

test("a value shorter than MIN_TEXT_LENGTH is masked only as a whole parameter or field value", () => {
  assert.equal(redact.MIN_TEXT_LENGTH, 4);
  const r = createRedactor(["a1b"]);
  assert.equal(r.text("http://a.test/x?p=a1b&q=xa1b"), "http://a.test/x?p=********&q=xa1b");
  assert.equal(r.text("the a1b route and ta1bs"), "the a1b route and ta1bs", "not in free text");
  assert.equal(r.html('<p title="a1b">a1b</p><input value="a1b"><input value=" a1b "><input value="a1bc">'),
    '<p title="a1b">a1b</p><input value="********"><input value="********"><input value="a1bc">');
  assert.equal(r.value("a1b"), MASK, "a field's value");
  assert.equal(r.value("a1b2"), "a1b2");
  const long = createRedactor(["a1b2"]);
  assert.equal(long.text("the a1b2 route and ta1b2s"), "the ******** route and t********s", "4 characters and more: anywhere");
});

test("the mask, blank values and over-long values are not remembered", () => {
  const r = createRedactor([MASK, "****", "", "   ", "x".repeat(redact.MAX_VALUE_LENGTH + 1), 42]);
  assert.deepEqual(r.values, []);
  assert.equal(r.text("**** and ******** stay"), "**** and ******** stay");
});

test("a turn's arguments are redacted (URLs, element, text); ids, uids and xpaths are kept", () => {
  const r = createRedactor([PASSWORD]);
  const url = "http://a.test/echo?pw=Zq7+pass%26word%3DOrca%21&session_id=s1";
  const turn = {
    client_id: "c1", type: "browser", timestamp: 1, intent: "click", screenshot: "ab".repeat(32),
    arguments: {
      metadata: { url, frameUrl: url, tabId: 3, viewportWidth: 10 },
      properties: { x: 1, url, pointerType: "mouse" },
      element: {
        attributes: { [UID]: "u7", href: url, title: PASSWORD, value: PASSWORD }, tagName: "A", xpath: "/html/body/a",
        textContent: `hello ${PASSWORD}`, innerHTML: `hi ${"Zq7 pass&amp;word=Orca!"}`, outerHTML: `<a href="${url}">x</a>`,
        bbox: { x: 1 },
      },
      text: PASSWORD,
    },
  };
  const out = r.turn(turn);
  assertNoForm(JSON.stringify(out), "the turn");
  assert.ok(!JSON.stringify(out).includes("s1"), "the session id");
  const masked = "http://a.test/echo?pw=********&session_id=********";
  assert.equal(out.arguments.metadata.url, masked);
  assert.equal(out.arguments.metadata.frameUrl, masked);
  assert.equal(out.arguments.properties.url, masked);
  assert.deepEqual(out.arguments.element.attributes, { [UID]: "u7", href: masked, title: MASK, value: MASK });
  assert.equal(out.arguments.element.outerHTML, `<a href="${masked}">x</a>`);
  assert.equal(out.arguments.text, MASK);
  assert.equal(out.arguments.element.xpath, "/html/body/a");
  assert.equal(out.screenshot, turn.screenshot);
  assert.equal(turn.arguments.metadata.url, url, "the turn given is left as it is");
  const load = { client_id: "l1", type: "browser", intent: "load", arguments: { metadata: { url, tabId: 1 }, properties: { url, transitionType: "form_submit" } } };
  assert.equal(createRedactor([]).turn(load).arguments.properties.url, "http://a.test/echo?pw=Zq7+pass%26word%3DOrca%21&session_id=********",
    "without the value known, only the secret name");
  const chat = { client_id: "c2", type: "chat", speaker: "navigator", utterance: "hi" };
  assert.equal(r.turn(chat), chat);
});

test("a capture's page is redacted before its blob is made", () => {
  const r = createRedactor([PASSWORD]);
  const message = {
    type: C.MSG.CAPTURE, turn: { client_id: "c", intent: "click", arguments: { metadata: { url: "http://a.test/?pw=Zq7+pass%26word%3DOrca%21" } } },
    page: { html: "<title>Zq7 pass&amp;word=Orca!</title>", bboxes: { u1: { x: 1 } } },
  };
  const out = r.capture(message);
  assert.equal(out.page.html, "<title>********</title>");
  assert.deepEqual(out.page.bboxes, message.page.bboxes);
  assert.equal(out.turn.arguments.metadata.url, "http://a.test/?pw=********");
  assert.equal(message.page.html, "<title>Zq7 pass&amp;word=Orca!</title>", "the message given is left as it is");
});

// --- MHTML --------------------------------------------------------------------------------------------------------

// As Chromium's pageCapture writes it: a Q-encoded title, a quoted-printable page (soft line breaks inside the value
// and its encoded forms), an image part in base64.
const MHTML = [
  "From: <Saved by Blink>",
  "Snapshot-Content-Location: http://a.test/echo?pw=Zq7+pass%26word%3DOrca%21&token=t1",
  "Subject: =?utf-8?Q?Echo=20Zq7=20pass&word=3DOrca!=20=C3=A9?=",
  "MIME-Version: 1.0",
  "Content-Type: multipart/related;",
  '\ttype="text/html";',
  '\tboundary="----MultipartBoundary--abc----"',
  "",
  "",
  "------MultipartBoundary--abc----",
  "Content-Type: text/html",
  "Content-ID: <frame-1@mhtml.blink>",
  "Content-Transfer-Encoding: quoted-printable",
  "Content-Location: http://a.test/echo?pw=Zq7+pass%26word%3DOrca%21&token=t1",
  "",
  "<html><head><title>Echo Zq7 pass&amp;word=3DOrca! =C3=A9</title></head><body><p>You typed Zq7 pass&amp;wo=",
  "rd=3DOrca!</p><a href=3D\"http://a.test/n?pw=3DZq7+pass%26word%3DOrca%21&amp;t=",
  "oken=3Dt1\">n</a></body></html>",
  "------MultipartBoundary--abc----",
  "Content-Type: image/png",
  "Content-Transfer-Encoding: base64",
  "Content-Location: http://a.test/i.png?sig=s1",
  "",
  "iVBORw0KGgo=",
  "------MultipartBoundary--abc------",
  "",
].join("\r\n");

/** Every text an MHTML reader sees: the headers with encoded words decoded, each part's body decoded. */
function readMhtml(text) {
  const decodeQp = (s) => s.replace(/=\r\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, h) => String.fromCharCode(parseInt(h, 16)));
  const words = text.replace(/=\?utf-8\?([QB])\?([^?]*)\?=/gi, (_, kind, t) => (kind.toUpperCase() === "B" ? atob(t) : decodeQp(t.replace(/_/g, " "))));
  const bodies = text.split("------MultipartBoundary--abc----").slice(1).map((part) => {
    const [headers, ...rest] = part.split("\r\n\r\n");
    const body = rest.join("\r\n\r\n");
    if (/base64/i.test(headers)) return atob(body.replace(/\s/g, ""));
    return /quoted-printable/i.test(headers) ? decodeQp(body) : body;
  });
  return Buffer.from([words, ...bodies].join("\n"), "latin1").toString("utf8");
}

test("an MHTML snapshot is redacted in its headers, encoded title and text parts, and still reads as MHTML", () => {
  assert.ok(readMhtml(MHTML).includes(PASSWORD), "the reader finds the value in the original");
  const r = createRedactor([PASSWORD]);
  const out = Buffer.from(r.mhtml(new Uint8Array(Buffer.from(MHTML, "latin1")))).toString("latin1");
  const read = readMhtml(out);
  assertNoForm(read, "the MHTML as read");
  assertNoForm(out, "the MHTML bytes");
  assert.ok(!read.includes("t1") && !read.includes("s1"), "the token and the signature");
  assert.match(read, /Echo \*{8} é/, "the title, still UTF-8");
  assert.match(read, /<title>Echo \*{8} é<\/title>/);
  assert.match(read, /<a href="http:\/\/a.test\/n\?pw=\*{8}&amp;token=\*{8}">n<\/a>/);
  assert.match(out, /^MIME-Version: 1.0\r$/m, "the headers the server checks");
  assert.match(out, /^Content-Type: multipart\/related;/m);
  assert.match(out, /Content-Type: image\/png\r\nContent-Transfer-Encoding: base64\r\nContent-Location: http:\/\/a.test\/i.png\?sig=\*{8}\r\n\r\niVBORw0KGgo=\r\n/);
});

test("an MHTML snapshot without anything to mask is returned byte for byte", () => {
  const clean = MHTML.replace(/Zq7( |\+|%20|=20)pass(&amp;|&|%26)(wo=\r\nrd|word)(=3D|%3D|=)Orca(!|%21)/g, "plain").replace(/token=t1|t=\r\noken=3Dt1|sig=s1/g, "q=1");
  const bytes = new Uint8Array(Buffer.from(clean, "latin1"));
  assert.equal(createRedactor([PASSWORD]).mhtml(bytes), bytes);
});

test("a private value with letters outside ASCII is masked in an MHTML's UTF-8 bytes", () => {
  const value = "Pässwörd-Ünïcode";
  const page = `Content-Type: multipart/related; boundary="b"\r\nMIME-Version: 1.0\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>${value}</p><a href="/x?p=${encodeURIComponent(value)}">x</a>\r\n--b--\r\n`;
  const out = Buffer.from(createRedactor([value]).mhtml(new Uint8Array(Buffer.from(page, "utf8")))).toString("utf8");
  assert.ok(!out.includes(value) && !out.includes(encodeURIComponent(value)), out);
  assert.ok(!Buffer.from(atob(out.split("\r\n\r\n")[2].split("\r\n--b--")[0].replace(/\s/g, "")), "latin1").toString("utf8").includes(value));
});

test("a page with nothing to mask is returned as it is after one scan (no page is rebuilt for nothing)", () => {
  const page = `<html><head><style>p{display:none}</style></head><body>${'<p class="c"><a href="/x?page=2&amp;q=shoes">next</a> text</p>'.repeat(2000)}</body></html>`;
  const r = createRedactor([PASSWORD, "ab"]);
  assert.equal(r.mayChange(page), false);
  assert.equal(r.html(page), page);
  for (const change of ['<a href="/x?token=1">', `<p>${PASSWORD}</p>`, '<a href="/x?q=ab">', '<input value="ab">',
    '<input name="csrf_token" value="v">', '<a href="https://u:p@h/">', '<a href="/x?%74oken=1">', '<a href="/x?\u212Aey=1">']) {
    assert.equal(r.mayChange(page + change), true, change);
  }
  assert.equal(createRedactor([]).mayChange(`<p>${PASSWORD}</p>`), false, "no value known: only rule 1");
});

test("a short private value is masked as a whole parameter value in an MHTML part, raw or percent-encoded", () => {
  const page = 'Content-Type: multipart/related; boundary="b"\r\nMIME-Version: 1.0\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n'
    + '<a href="/x?p=%C3%A4b&amp;q=äb">x</a><input value="äb">\r\n--b--\r\n';
  const out = Buffer.from(createRedactor(["äb"]).mhtml(new Uint8Array(Buffer.from(page, "utf8")))).toString("latin1");
  const html = Buffer.from(atob(out.split("\r\n\r\n")[2].split("\r\n--b--")[0].replace(/\s/g, "")), "latin1").toString("utf8");
  assert.equal(html, '<a href="/x?p=********&amp;q=********">x</a><input value="********">');
});

// --- The values remembered ----------------------------------------------------------------------------------------

test("the worker remembers private values in memory and storage.session, takes them out of messages, keeps the latest", async () => {
  const area = new MemoryArea();
  const store = new SecretStore(area);
  const message = { type: C.MSG.CAPTURE, turn: {}, privateValues: [PASSWORD, MASK, ""] };
  assert.equal(store.take(message), 1, "counted at once (synchronously)");
  assert.ok(!("privateValues" in message), "nothing of them goes further");
  assert.equal((await store.redactor()).text(`x ${PASSWORD}`), `x ${MASK}`);
  await store.writes;
  assert.deepEqual((await area.get(C.STORAGE.SECRETS))[C.STORAGE.SECRETS], [PASSWORD]);
  const restarted = new SecretStore(area); // a stopped worker's successor
  assert.equal((await restarted.redactor()).text(PASSWORD), MASK);
  for (let i = 0; i < redact.MAX_VALUES + 5; i++) restarted.add(`value-${i}`);
  const kept = (await restarted.redactor()).values;
  assert.equal(kept.length, redact.MAX_VALUES);
  assert.equal(kept.at(-1), `value-${redact.MAX_VALUES + 4}`);
  assert.ok(!kept.includes(PASSWORD), "the oldest goes first");
});
