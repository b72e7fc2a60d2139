// lib/events.js on jsdom: what an event acted on (target, text fields, change values, copied selection, scrollbar).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { JSDOM } = require("jsdom");

const events = require("../lib/events.js");

const PAGE = `<!doctype html><html><body>
  <p id="para">Hello <b id="bold">bold</b> world</p>
  <input id="text"><input id="search" type="search"><input id="pw" type="PASSWORD"><input id="num" type="number">
  <input id="box" type="checkbox" value="yes"><input id="radio" type="radio" value="large"><input id="range" type="range" value="30">
  <input id="date" type="date" value="2024-05-01"><input id="file" type="file">
  <select id="multi" multiple><option value="a" selected>A</option><option value="b">B</option><option value="c" selected>C</option></select>
  <select id="empty"></select>
  <textarea id="area">notes</textarea>
  <div id="editable" contenteditable>edit me</div><div id="plain" contenteditable="plaintext-only"></div>
  <div id="off" contenteditable="false"></div>
  <div id="host"></div>
</body></html>`;

function page() {
  const { window } = new JSDOM(PAGE, { url: "https://shop.test/", pretendToBeVisual: true });
  return { window, doc: window.document, byId: (id) => window.document.getElementById(id) };
}

test("targetOf: the innermost element of the composed path, inside open shadow roots, text lifted to its element", () => {
  const { window, doc, byId } = page();
  const shadow = byId("host").attachShadow({ mode: "open" });
  shadow.innerHTML = "<button id='inner'>Go</button>";
  const inner = shadow.getElementById("inner");
  let seen = null;
  doc.addEventListener("click", (e) => (seen = events.targetOf(e)));
  inner.dispatchEvent(new window.MouseEvent("click", { bubbles: true, composed: true }));
  assert.equal(seen, inner, "not the shadow host the document sees as target");
  assert.equal(events.targetOf({ target: byId("bold").firstChild }), byId("bold"));
  assert.equal(events.targetOf({ target: doc }), doc.documentElement);
  assert.equal(events.targetOf({ target: window }), null);
  assert.equal(events.targetOf({ composedPath: () => [], target: null }), null);
});

test("isTextField: textareas, text-like inputs (any case) and contenteditable hosts", () => {
  const { byId } = page();
  const expected = {
    text: true, search: true, pw: true, num: true, area: true, editable: true, plain: true,
    box: false, radio: false, range: false, date: false, file: false, multi: false, para: false, off: false,
  };
  const found = Object.fromEntries(Object.keys(expected).map((id) => [id, events.isTextField(byId(id))]));
  assert.deepEqual(found, expected);
});

test("fieldText: an input's or textarea's value, an editable host's text", () => {
  const { byId } = page();
  byId("text").value = "typed";
  assert.equal(events.fieldText(byId("text")), "typed");
  assert.equal(events.fieldText(byId("area")), "notes");
  assert.equal(events.fieldText(byId("editable")), "edit me");
});

test("changeValue: selected options joined by ',', checkbox state, radio value, an input's value, null otherwise", () => {
  const { byId } = page();
  assert.equal(events.changeValue(byId("multi")), "a,c");
  assert.equal(events.changeValue(byId("empty")), "");
  assert.equal(events.changeValue(byId("box")), "false");
  byId("box").checked = true;
  assert.equal(events.changeValue(byId("box")), "true");
  assert.equal(events.changeValue(byId("radio")), "large");
  assert.equal(events.changeValue(byId("range")), "30");
  assert.equal(events.changeValue(byId("date")), "2024-05-01");
  assert.equal(events.changeValue(byId("file")), "", "no file chosen");
  const files = { localName: "input", type: "file", files: [{ name: "a.pdf" }, { name: "b.png" }] };
  assert.equal(events.changeValue(files), "a.pdf, b.png");
  assert.equal(events.changeValue(byId("para")), null);
});

test("selectionOf: a field's selected text, or the document selection recorded on its element", () => {
  const { window, doc, byId } = page();
  const input = byId("text");
  input.value = "Ada Lovelace";
  input.setSelectionRange(4, 12);
  assert.deepEqual(events.selectionOf(input, doc), { text: "Lovelace", node: input, range: null });

  const range = doc.createRange();
  range.selectNodeContents(byId("bold"));
  window.getSelection().addRange(range);
  const onBody = events.selectionOf(doc.body, doc);
  assert.equal(onBody.text, "bold");
  assert.equal(onBody.node, byId("bold"), "a copy on the page is recorded on the selection's element");
  assert.ok(onBody.range);
  const onPara = events.selectionOf(byId("para"), doc);
  assert.equal(onPara.node, byId("para"), "a copy on an element stays on it");
  input.setSelectionRange(0, 0);
  assert.equal(events.selectionOf(input, doc).text, "bold", "nothing selected in the field: the page's selection");
});

test("onScrollbar: a press right of or below an element's client area, or past the page's", () => {
  const { doc, byId } = page();
  const el = byId("area");
  const metrics = { clientWidth: 100, clientHeight: 50, clientLeft: 1, clientTop: 1, scrollHeight: 200, scrollWidth: 100 };
  for (const key of Object.keys(metrics)) Object.defineProperty(el, key, { get: () => metrics[key] });
  el.getBoundingClientRect = () => ({ left: 10, top: 20, width: 102, height: 52 });
  assert.equal(events.onScrollbar({ clientX: 50, clientY: 40 }, el), false);
  assert.equal(events.onScrollbar({ clientX: 111, clientY: 40 }, el), true, "on the vertical scrollbar");
  assert.equal(events.onScrollbar({ clientX: 50, clientY: 71 }, el), true, "below the client area");
  metrics.scrollHeight = 50;
  assert.equal(events.onScrollbar({ clientX: 111, clientY: 40 }, el), false, "nothing to scroll: no scrollbar");

  const html = doc.documentElement;
  Object.defineProperty(html, "clientWidth", { value: 1265 });
  Object.defineProperty(html, "clientHeight", { value: 800 });
  assert.equal(events.onScrollbar({ clientX: 1270, clientY: 10 }, doc.body), true);
  assert.equal(events.onScrollbar({ clientX: 600, clientY: 10 }, doc.body), false);
});

test("stopEvent: neither the default action nor any later listener", () => {
  const { window, byId } = page();
  const reached = [];
  const button = byId("para");
  button.addEventListener("click", (e) => events.stopEvent(e));
  button.addEventListener("click", () => reached.push("later"));
  const event = new window.MouseEvent("click", { bubbles: true, cancelable: true });
  button.dispatchEvent(event);
  assert.ok(event.defaultPrevented);
  assert.deepEqual(reached, []);
});
