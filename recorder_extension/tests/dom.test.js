// lib/dom.js on jsdom: uids, serialisation, boxes, element info, xpath and masking.
// Run: cd recorder_extension && node --test tests/
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { JSDOM } = require("jsdom");

const C = require("../lib/constants.js");
const dom = require("../lib/dom.js");

const UID = C.UID_ATTRIBUTE;
const BBOX_KEYS = ["x", "y", "width", "height", "top", "right", "bottom", "left"];
const ELEMENT_KEYS = ["attributes", "bbox", "tagName", "textContent", "innerHTML", "outerHTML", "xpath"];

/** getBoundingClientRect from a table (jsdom has no layout); elements not in it are 0×0 at the origin. */
function stubRects(window, table) {
  window.Element.prototype.getBoundingClientRect = function () {
    const r = table.get(this) || { x: 0, y: 0, width: 0, height: 0 };
    return { x: r.x, y: r.y, left: r.x, top: r.y, width: r.width, height: r.height, right: r.x + r.width, bottom: r.y + r.height };
  };
}

const PAGE = `<!doctype html><html><head><title>T</title>
<script>window.secretScript = 1</script><style>p { color: red }</style></head>
<body onload="boot()">
  <!-- a comment -->
  <h1 id="title" onclick="go()">Hello &amp; welcome</h1>
  <form id="form">
    <input id="name" name="name" value="initial">
    <input id="pw" type="password" value="">
    <input id="agree" type="checkbox" value="yes">
    <input id="r1" type="radio" name="r" value="a" checked><input id="r2" type="radio" name="r" value="b">
    <select id="color"><option value="red">Red</option><option value="blue">Blue</option></select>
    <textarea id="notes">default</textarea>
  </form>
  <noscript><p>enable js</p></noscript>
  <div id="host"></div>
  <iframe id="frame"></iframe>
  <ul><li>one</li><li id="two">two</li><li>three</li></ul>
  <template id="tpl"><p>inert</p></template>
</body></html>`;

/** A page with typed form state, an open shadow root and a same-origin iframe. */
function makePage(html = PAGE) {
  const jsdom = new JSDOM(html, { url: "https://example.test/page" });
  const { window } = jsdom;
  const doc = window.document;
  doc.getElementById("name").value = "Ada Lovelace";
  doc.getElementById("agree").checked = true;
  doc.getElementById("r2").checked = true;
  doc.getElementById("color").value = "blue";
  doc.getElementById("notes").value = "typed notes";
  const shadow = doc.getElementById("host").attachShadow({ mode: "open" });
  shadow.innerHTML = '<style>b { margin: 1px }</style><button id="shadow-button">Shadow <b>button</b></button><input id="shadow-input">';
  shadow.getElementById("shadow-input").value = "in the shadow";
  const frameDoc = doc.getElementById("frame").contentDocument;
  frameDoc.body.innerHTML = '<p id="frame-text">In the frame, "quoted" &amp; \'single\'</p><button id="frame-button">Frame button</button>';
  return { window, doc, shadow, frameDoc, frameWindow: doc.getElementById("frame").contentWindow };
}

/** Every start tag of an HTML string (also those inside srcdoc='…', whose markup is literal text). */
function startTags(html) {
  return [...html.matchAll(/<([a-zA-Z][^\s>/]*)([^>]*)>/g)].map((m) => ({ name: m[1], attrs: m[2] }));
}

function uidsIn(html) {
  return [...html.matchAll(/data-webtasks-id="([^"]+)"/g)].map((m) => m[1]);
}

test("every element gets a uid: document, open shadow roots and same-origin frames", () => {
  const { doc, shadow, frameDoc } = makePage();
  const { html, bboxes } = dom.capturePage(doc, {});
  const tags = startTags(html);
  assert.ok(tags.length > 30);
  for (const tag of tags) assert.match(tag.attrs, /data-webtasks-id="[^"]+"/, `<${tag.name}${tag.attrs}> has no uid`);
  const uids = uidsIn(html);
  assert.equal(new Set(uids).size, uids.length, "uids are unique");
  // The live elements carry the same uids, and every real element has a box.
  const live = [...doc.querySelectorAll("*"), ...shadow.querySelectorAll("*"), ...frameDoc.querySelectorAll("*")]
    .filter((el) => !["script", "noscript"].includes(el.localName) && !el.closest("noscript"));
  for (const el of live) {
    const uid = el.getAttribute(UID);
    assert.ok(uid, `${el.localName} not stamped`);
    assert.ok(uids.includes(uid), `${el.localName} uid not in the page`);
    assert.deepEqual(Object.keys(bboxes[uid]), BBOX_KEYS);
  }
  const synthetic = uids.filter((u) => u.endsWith(":shadow"));
  assert.equal(synthetic.length, 1, "the shadow root's template has a derived uid");
  assert.deepEqual(new Set(Object.keys(bboxes)), new Set(uids.filter((u) => !u.endsWith(":shadow"))));
});

test("form state is written as attributes", () => {
  const { doc } = makePage();
  const out = new JSDOM(dom.serializePage(doc, {})).window.document;
  assert.equal(out.getElementById("name").getAttribute("value"), "Ada Lovelace");
  assert.ok(out.getElementById("agree").hasAttribute("checked"));
  assert.ok(!out.getElementById("r1").hasAttribute("checked"), "checked follows the live state, not the markup");
  assert.ok(out.getElementById("r2").hasAttribute("checked"));
  const options = out.querySelectorAll("#color option");
  assert.deepEqual([...options].map((o) => o.hasAttribute("selected")), [false, true]);
  assert.equal(out.getElementById("notes").textContent, "typed notes");
  assert.equal(out.getElementById("title").textContent, "Hello & welcome");
});

test("scripts, noscript, inline handlers, comments and template contents are dropped", () => {
  const { doc } = makePage();
  const html = dom.serializePage(doc, {});
  assert.ok(!/<script/i.test(html));
  assert.ok(!html.includes("secretScript"));
  assert.ok(!/<noscript/i.test(html) && !html.includes("enable js"));
  assert.ok(!/\son[a-z]+=/i.test(html), "no on* attributes");
  assert.ok(!html.includes("boot()") && !html.includes("go()"));
  assert.ok(!html.includes("a comment"));
  assert.ok(!html.includes("inert"));
  assert.match(html, /^<!DOCTYPE html><html /);
  assert.ok(html.includes("p { color: red }"), "styles are kept for rendering");
});

test("a shadow root is serialised as a declarative shadow root template inside its host", () => {
  const { doc, shadow } = makePage();
  const html = dom.serializePage(doc, {});
  const hostUid = doc.getElementById("host").getAttribute(UID);
  const buttonUid = shadow.getElementById("shadow-button").getAttribute(UID);
  const expected = `<div id="host" ${UID}="${hostUid}"><template shadowrootmode="open" ${UID}="${hostUid}:shadow"><style `;
  assert.ok(html.includes(expected), html);
  assert.ok(html.includes(`<button id="shadow-button" ${UID}="${buttonUid}">Shadow <b `));
  assert.ok(html.includes(`<input id="shadow-input" ${UID}="${shadow.getElementById("shadow-input").getAttribute(UID)}" value="in the shadow">`));
  const out = new JSDOM(html).window.document;
  const template = out.querySelector("#host > template");
  assert.equal(template.getAttribute("shadowrootmode"), "open");
  assert.ok(template.content.querySelector("#shadow-button"));
});

test("a same-origin iframe's document goes into srcdoc, with its uids in plain text", () => {
  const { doc, frameDoc } = makePage();
  const html = dom.serializePage(doc, {});
  const uid = frameDoc.getElementById("frame-text").getAttribute(UID);
  assert.ok(html.includes(`${UID}="${uid}"`), "a text search of the page finds the frame's uids");
  assert.match(html, /<iframe id="frame" data-webtasks-id="[^"]+" srcdoc='<html /);
  const srcdoc = new JSDOM(html).window.document.getElementById("frame").getAttribute("srcdoc");
  const inner = new JSDOM(srcdoc).window.document;
  assert.equal(inner.getElementById("frame-text").textContent, `In the frame, "quoted" & 'single'`);
  assert.equal(inner.getElementById("frame-text").getAttribute(UID), uid);
});

test("uids are stable across captures, new elements get new ones, clones do not share them", () => {
  const { doc } = makePage();
  const first = dom.capturePage(doc, {});
  const title = doc.getElementById("title");
  const uid = title.getAttribute(UID);
  const added = doc.createElement("p");
  added.textContent = "new";
  doc.body.appendChild(added);
  const clone = title.cloneNode(true);
  clone.id = "clone";
  doc.body.appendChild(clone);
  const second = dom.capturePage(doc, {});
  assert.equal(title.getAttribute(UID), uid);
  for (const key of Object.keys(first.bboxes)) assert.ok(key in second.bboxes, "every earlier uid is still there");
  const newUid = added.getAttribute(UID);
  assert.ok(newUid && !(newUid in first.bboxes));
  assert.notEqual(clone.getAttribute(UID), uid, "the clone got its own uid");
  const uids = uidsIn(second.html);
  assert.equal(new Set(uids).size, uids.length);
  dom.stampUids(doc);
  assert.equal(title.getAttribute(UID), uid);
  assert.match(uid, /^[0-9a-z]{7,12}$/, "short: unique in the page is enough");
});

test("boxes are viewport rects by uid; a frame's elements are moved by the frame's content offset", () => {
  const { window, doc, frameDoc, frameWindow } = makePage();
  const rects = new Map();
  stubRects(window, rects);
  stubRects(frameWindow, rects);
  const iframe = doc.getElementById("frame");
  iframe.style.padding = "2px";
  Object.defineProperty(iframe, "clientLeft", { value: 1 });
  Object.defineProperty(iframe, "clientTop", { value: 1 });
  rects.set(iframe, { x: 100, y: 50, width: 400, height: 120 });
  rects.set(doc.getElementById("title"), { x: 8, y: 10.5, width: 300, height: 37 });
  rects.set(frameDoc.getElementById("frame-button"), { x: 10, y: 20, width: 80, height: 24 });
  const bboxes = dom.boundingBoxes(doc, {});
  assert.deepEqual(bboxes[doc.getElementById("title").getAttribute(UID)], {
    x: 8, y: 10.5, width: 300, height: 37, top: 10.5, right: 308, bottom: 47.5, left: 8,
  });
  const button = frameDoc.getElementById("frame-button");
  const expected = { x: 113, y: 73, width: 80, height: 24, top: 73, right: 193, bottom: 97, left: 113 };
  assert.deepEqual(bboxes[button.getAttribute(UID)], expected);
  assert.deepEqual(dom.elementInfo(button, {}).bbox, expected, "element info uses the same coordinates");
  // A cross-origin frame's capture adds the offset its parent told it.
  const moved = dom.boundingBoxes(doc, { offset: { x: 5, y: 7 } });
  assert.equal(moved[button.getAttribute(UID)].x, 118);
  assert.equal(moved[button.getAttribute(UID)].bottom, 104);
});

test("element info has exactly the WebLINX keys and shapes", () => {
  const { window, doc } = makePage();
  const rects = new Map();
  stubRects(window, rects);
  const name = doc.getElementById("name");
  rects.set(name, { x: 20, y: 30, width: 200, height: 22 });
  const info = dom.elementInfo(name, {});
  assert.deepEqual(Object.keys(info).sort(), [...ELEMENT_KEYS].sort());
  assert.deepEqual(Object.keys(info.bbox), BBOX_KEYS);
  assert.deepEqual(info.bbox, { x: 20, y: 30, width: 200, height: 22, top: 30, right: 220, bottom: 52, left: 20 });
  assert.equal(info.tagName, "INPUT");
  assert.equal(info.attributes[UID], name.getAttribute(UID));
  assert.equal(info.attributes.id, "name");
  assert.equal(info.attributes.value, "Ada Lovelace");
  assert.equal(info.textContent, "");
  assert.equal(info.innerHTML, "");
  assert.equal(info.outerHTML, `<input id="name" name="name" ${UID}="${name.getAttribute(UID)}" value="Ada Lovelace">`);
  assert.equal(info.xpath, "/html/body/form/input[1]");

  const title = dom.elementInfo(doc.getElementById("title"), {});
  assert.equal(title.tagName, "H1");
  assert.equal(title.textContent, "Hello & welcome");
  assert.ok(!("onclick" in title.attributes));
  assert.equal(title.innerHTML, "Hello &amp; welcome");
  for (const value of Object.values(title.attributes)) assert.equal(typeof value, "string");

  const filler = doc.createElement("p");
  filler.textContent = "filler ".repeat(400); // the body's HTML is longer than OUTER_HTML_MAX
  doc.body.appendChild(filler);
  const body = dom.elementInfo(doc.body, {});
  assert.equal(body.outerHTML.length, C.TIMING.OUTER_HTML_MAX, "outerHTML is truncated");
  assert.ok(body.innerHTML.length <= C.TIMING.OUTER_HTML_MAX);
  assert.ok(!body.textContent.startsWith(" ") && !body.textContent.endsWith("\n"), "textContent is trimmed");
});

test("xpaths: indices only among same-name siblings, shadow roots and frames marked", () => {
  const { doc, shadow, frameDoc } = makePage();
  assert.equal(dom.xpathOf(doc.documentElement), "/html");
  assert.equal(dom.xpathOf(doc.getElementById("two")), "/html/body/ul/li[2]");
  assert.equal(dom.xpathOf(doc.getElementById("color")), "/html/body/form/select");
  assert.equal(dom.xpathOf(doc.getElementById("r2")), "/html/body/form/input[5]");
  assert.equal(dom.xpathOf(shadow.getElementById("shadow-button")), "/html/body/div/#shadow-root/button");
  assert.equal(dom.xpathOf(frameDoc.getElementById("frame-button")), "/html/body/iframe/#document/html/body/button");
});

// --- Privacy -------------------------------------------------------------------------------------------------

const SECRETS = ["Zq7pw-Secret-4242", "PRIVATE-TEXT-77", "PRIVATE-ATTR-88", "SELECTOR-SECRET-99", "CARD-4111", "SHOWN-PW-55", "SHADOW-PRIV-66", "FRAME-PRIV-33", "PRIV-VALUE-11"];

function privatePage() {
  const jsdom = new JSDOM(`<!doctype html><html><body>
    <form id="login">
      <label for="pw">Password</label><input id="pw" type="password" placeholder="Your password">
      <input id="card" autocomplete="billing cc-number">
      <input id="toggle" type="password">
    </form>
    <div id="private" data-private title="PRIVATE-ATTR-88" class="box">PRIVATE-TEXT-77
      <span id="inner" aria-label="PRIVATE-ATTR-88">PRIVATE-TEXT-77</span>
      <input id="private-input"><textarea id="private-area">x</textarea>
      <select id="private-select"><option value="PRIVATE-ATTR-88">PRIVATE-TEXT-77</option></select>
    </div>
    <section class="secret-box"><p id="by-selector" title="SELECTOR-SECRET-99">SELECTOR-SECRET-99</p></section>
    <div id="host"></div>
    <iframe id="frame"></iframe>
    <p id="public">Public text</p>
  </body></html>`, { url: "https://example.test/login" });
  const { window } = jsdom;
  const doc = window.document;
  doc.getElementById("pw").value = "Zq7pw-Secret-4242";
  doc.getElementById("pw").setAttribute("value", "Zq7pw-Secret-4242"); // a page that mirrors it into the attribute
  doc.getElementById("card").value = "CARD-4111";
  const toggle = doc.getElementById("toggle");
  toggle.value = "SHOWN-PW-55";
  dom.stampUids(doc); // seen as a password once ...
  toggle.type = "text"; // ... then "show password"
  doc.getElementById("private-input").value = "PRIV-VALUE-11";
  doc.getElementById("private-area").value = "PRIV-VALUE-11";
  const shadow = doc.getElementById("host").attachShadow({ mode: "open" });
  shadow.innerHTML = '<div data-private><b id="shadow-private">SHADOW-PRIV-66</b></div><i id="shadow-public">ok</i>';
  const frame = doc.getElementById("frame");
  frame.setAttribute("data-private", "");
  frame.contentDocument.body.innerHTML = '<p id="frame-private">FRAME-PRIV-33</p>';
  return { window, doc, shadow, frameDoc: frame.contentDocument };
}

const OPTS = { privateSelectors: [".secret-box"] };

function assertNoSecret(value, what) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${secret} found in ${what}`);
}

test("secrets never appear in the page, the boxes or any element info", () => {
  const { doc, shadow, frameDoc } = privatePage();
  const { privateValues, ...page } = dom.capturePage(doc, OPTS);
  assertNoSecret(page, "the captured page");
  // What the private fields hold is handed to the worker beside the page (lib/redact.js masks it wherever it shows
  // up later): typed-in fields; not a private subtree's plain text, nor a private select's default choice.
  assert.deepEqual(privateValues.sort(), ["CARD-4111", "PRIV-VALUE-11", "PRIV-VALUE-11", "SHOWN-PW-55", "Zq7pw-Secret-4242"]);
  const elements = [...doc.querySelectorAll("*"), ...shadow.querySelectorAll("*"), ...frameDoc.querySelectorAll("*")];
  for (const el of elements) assertNoSecret(dom.elementInfo(el, OPTS), `elementInfo(${el.localName}#${el.id})`);
  // The structure stays (uids, boxes), the secrets go.
  const out = new JSDOM(page.html).window.document;
  const pw = out.getElementById("pw");
  assert.equal(pw.getAttribute("value"), dom.MASK);
  assert.equal(pw.getAttribute("placeholder"), "Your password", "only the value of a password field is secret");
  assert.equal(out.getElementById("card").getAttribute("value"), dom.MASK);
  assert.equal(out.getElementById("toggle").getAttribute("value"), dom.MASK, "still masked after show-password");
  const box = out.getElementById("private");
  assert.equal(box.textContent.replace(dom.MASK, "").trim(), "", "no text but the textarea's mask");
  assert.ok(!box.hasAttribute("title") && box.getAttribute("class") === "box");
  assert.equal(out.getElementById("private-input").getAttribute("value"), dom.MASK);
  assert.equal(out.getElementById("private-area").textContent, dom.MASK);
  assert.ok(out.getElementById("inner").getAttribute(UID), "private elements keep their uid");
  assert.equal(out.getElementById("by-selector").textContent, "");
  assert.ok(page.html.includes("Public text"));
});

test("a private select's option is handed to the worker once it is chosen, not while it is the page's default", () => {
  const { window } = new JSDOM(`<!doctype html><body><div data-private>
    <select id="a"><option value="none">none</option><option value="Opt-Okapi-1">Okapi</option></select>
    <select id="b"><option value="x">x</option><option value="Opt-Marked-2" selected>Marked</option><option disabled>y</option></select>
    <select id="c"><optgroup label="g"><option disabled>-</option><option value="first">First</option></optgroup><option value="Opt-Late-3">Late</option></select>
  </div><select id="plain"><option>one</option><option value="two">two</option></select></body>`);
  const doc = window.document;
  const values = () => dom.capturePage(doc, {}).privateValues.sort();
  assert.deepEqual(values(), [], "nothing chosen yet: every select shows its default");
  doc.getElementById("a").value = "Opt-Okapi-1";
  doc.getElementById("b").value = "x";
  doc.getElementById("c").value = "Opt-Late-3";
  doc.getElementById("plain").value = "two";
  assert.deepEqual(values(), ["Late", "Okapi", "Opt-Late-3", "Opt-Okapi-1", "x", "x"], "value and text of each");
});

test("private element info: masked attributes, empty text, value masked", () => {
  const { doc } = privatePage();
  const pw = dom.elementInfo(doc.getElementById("pw"), OPTS);
  assert.equal(pw.attributes.value, dom.MASK);
  assert.equal(pw.attributes.placeholder, "Your password");
  const inner = dom.elementInfo(doc.getElementById("inner"), OPTS);
  assert.deepEqual(Object.keys(inner.attributes).sort(), ["data-webtasks-id", "id"]);
  assert.equal(inner.textContent, "");
  const body = dom.elementInfo(doc.body, OPTS);
  assert.ok(body.textContent.includes("Public text") || body.textContent.length > 0);
  assert.ok(!body.textContent.includes("PRIVATE"));
});

test("isPrivate and privateRects cover passwords, data-private, selectors, shadow roots and frames", () => {
  const { window, doc, shadow, frameDoc } = privatePage();
  const rects = new Map();
  stubRects(window, rects);
  stubRects(doc.getElementById("frame").contentWindow, rects);
  const byId = (id) => doc.getElementById(id);
  for (const el of [byId("pw"), byId("card"), byId("private"), byId("inner"), byId("by-selector"), shadow.getElementById("shadow-private"), frameDoc.getElementById("frame-private")]) {
    assert.equal(dom.isPrivate(el, OPTS), true, el.id);
  }
  for (const el of [byId("public"), byId("login"), shadow.getElementById("shadow-public")]) assert.equal(dom.isPrivate(el, OPTS), false, el.id);
  assert.equal(dom.isPrivate(byId("by-selector"), {}), false, "selectors come from the configuration");

  rects.set(byId("pw"), { x: 10, y: 10, width: 200, height: 20 });
  rects.set(byId("private"), { x: 0, y: 100, width: 500, height: 60 });
  rects.set(byId("by-selector"), { x: 0, y: 5000, width: 500, height: 20 }); // below the viewport
  rects.set(byId("public"), { x: 0, y: 200, width: 500, height: 20 });
  const found = dom.privateRects(doc, { ...OPTS, viewport: { width: 1280, height: 800 } });
  assert.deepEqual(found, [{ x: 10, y: 10, width: 200, height: 20 }, { x: 0, y: 100, width: 500, height: 60 }]);
});

test("an invalid configured selector is ignored with a warning, the valid ones still apply", (t) => {
  const { doc } = privatePage();
  const warn = t.mock.method(console, "warn", () => {});
  const opts = { privateSelectors: ["p[", ".secret-box"] };
  assert.equal(dom.isPrivate(doc.getElementById("by-selector"), opts), true);
  assert.equal(warn.mock.callCount(), 1);
  assertNoSecret(dom.serializePage(doc, opts), "the page");
});

test("the mask of lib/dom.js and lib/coalesce.js is the same", () => {
  const coalesce = require("../lib/coalesce.js");
  assert.equal(dom.MASK, coalesce.MASK);
  assert.equal(dom.maskValue(""), "");
  assert.equal(dom.maskValue("x"), dom.MASK);
});
