// content/capture.js in jsdom with a fake chrome.runtime: the messages each action sends, checked against a
// mirror of the server's turn validation (annotation/schema.py) and for secrets.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { JSDOM } = require("jsdom");

const C = require("../lib/constants.js");

const ROOT = path.join(__dirname, "..");
// The manifest's content_scripts order.
const FILES = JSON.parse(fs.readFileSync(path.join(ROOT, "manifest.json"), "utf8")).content_scripts[0].js;
const SOURCES = FILES.map((file) => fs.readFileSync(path.join(ROOT, file), "utf8"));
const UID = C.UID_ATTRIBUTE;
const RECORDING = { recording: true, paused: false, mode: "chat", privateSelectors: [".secret-box"] };
const SHA = "a".repeat(64);

// --- A mirror of annotation/schema.py (validate_turn): keep in step with the server -------------------------

const SCHEMA = {
  INTENTS: ["click", "hover", "textInput", "change", "submit", "load", "scroll", "copy", "paste", "tabcreate", "tabremove", "tabswitch"],
  ELEMENT_INTENTS: ["click", "hover", "textInput", "change", "submit", "copy", "paste"],
  BLOB_FIELDS: ["screenshot", "page", "bboxes"],
  BBOX_KEYS: ["x", "y", "width", "height", "top", "right", "bottom", "left"],
  BROWSER_FIELDS: ["client_id", "type", "timestamp", "intent", "arguments", "screenshot", "page", "bboxes"],
  INTENT_ARGUMENTS: {
    textInput: [[["text"], "string"]],
    change: [[["value"], "string"]],
    scroll: [[["scrollX"], "number"], [["scrollY"], "number"]],
    copy: [[["selected"], "string"]],
    paste: [[["pasted"], "string"]],
    load: [[["properties", "url"], "string"], [["properties", "transitionType"], "string"], [["properties", "transitionQualifiers"], "list of strings"], [["properties", "tabId"], "integer"]],
    tabcreate: [[["properties", "tabId"], "integer"]],
    tabremove: [[["properties", "tabId"], "integer"]],
    tabswitch: [[["properties", "tabId"], "integer"], [["properties", "tabIdOrigin"], "integer"]],
  },
  ELEMENT_KEYS: [[["attributes"], "object"], [["bbox"], "object"], [["tagName"], "string"], [["xpath"], "string"], [["textContent"], "string"], [["outerHTML"], "string"]],
  OPTIONAL_ELEMENT_KEYS: [[["innerHTML"], "string"]],
  METADATA_KEYS: [[["url"], "string"], [["tabId"], "integer"]],
  OPTIONAL_METADATA_KEYS: [[["viewportWidth"], "integer"], [["viewportHeight"], "integer"], [["mouseX"], "number"], [["mouseY"], "number"], [["zoomLevel"], "number"]],
};

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const TYPE_CHECKS = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number" && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  object: isObject,
  "list of strings": (v) => Array.isArray(v) && v.every((i) => typeof i === "string"),
};

function checkKeys(obj, specs, where, required = true) {
  const errors = [];
  for (const [keys, expected] of specs) {
    let value = obj;
    let found = true;
    for (const key of keys) {
      if (!isObject(value) || !(key in value)) {
        found = false;
        break;
      }
      value = value[key];
    }
    const field = [where, ...keys].join(".");
    if (!found) {
      if (required) errors.push(`${field}: required`);
    } else if (!TYPE_CHECKS[expected](value)) errors.push(`${field}: expected ${expected}`);
  }
  return errors;
}

function validateBrowserTurn(turn, where = "turn") {
  const errors = [];
  if (typeof turn.client_id !== "string" || turn.client_id.length < 1 || turn.client_id.length > 64) errors.push(`${where}.client_id`);
  if (!TYPE_CHECKS.number(turn.timestamp) || turn.timestamp < 0) errors.push(`${where}.timestamp`);
  if (turn.type !== "browser") errors.push(`${where}.type`);
  for (const key of Object.keys(turn)) if (!SCHEMA.BROWSER_FIELDS.includes(key)) errors.push(`${where}.${key}: unknown field`);
  for (const name of SCHEMA.BLOB_FIELDS) {
    if (turn[name] != null && !/^[0-9a-f]{64}$/.test(turn[name])) errors.push(`${where}.${name}: not a sha256`);
  }
  if (turn.page != null && turn.bboxes == null) errors.push(`${where}.bboxes: required with a page`);
  if (!SCHEMA.INTENTS.includes(turn.intent)) return [...errors, `${where}.intent: unknown`];
  const args = turn.arguments;
  if (!isObject(args)) return [...errors, `${where}.arguments: required`];
  const at = `${where}.arguments`;
  if (!isObject(args.metadata)) errors.push(`${at}.metadata: required`);
  else {
    errors.push(...checkKeys(args.metadata, SCHEMA.METADATA_KEYS, `${at}.metadata`));
    errors.push(...checkKeys(args.metadata, SCHEMA.OPTIONAL_METADATA_KEYS, `${at}.metadata`, false));
  }
  if ("properties" in args && !isObject(args.properties)) errors.push(`${at}.properties: expected object`);
  errors.push(...checkKeys(args, SCHEMA.INTENT_ARGUMENTS[turn.intent] || [], at));
  if (SCHEMA.ELEMENT_INTENTS.includes(turn.intent)) {
    const element = args.element;
    if (!isObject(element)) errors.push(`${at}.element: required`);
    else {
      errors.push(...checkKeys(element, SCHEMA.ELEMENT_KEYS, `${at}.element`));
      errors.push(...checkKeys(element, SCHEMA.OPTIONAL_ELEMENT_KEYS, `${at}.element`, false));
      const uid = isObject(element.attributes) ? element.attributes[UID] : undefined;
      if (typeof uid !== "string" || !uid) errors.push(`${at}.element.attributes.${UID}: required`);
      if (isObject(element.bbox)) errors.push(...checkKeys(element.bbox, SCHEMA.BBOX_KEYS.map((k) => [[k], "number"]), `${at}.element.bbox`));
    }
  }
  return errors;
}

/** What the service worker does before upload: timestamp from eventTime, tabId from the sender, blob refs. */
function completeLikeServiceWorker(message) {
  const { eventTime, ...turn } = message.turn;
  assert.equal(typeof eventTime, "number");
  const metadata = { ...turn.arguments.metadata, tabId: 7 };
  const completed = { ...turn, timestamp: 1.25, arguments: { ...turn.arguments, metadata }, screenshot: SHA };
  if (message.page) Object.assign(completed, { page: SHA, bboxes: SHA });
  return completed;
}

function assertValidForServer(message) {
  const errors = validateBrowserTurn(completeLikeServiceWorker(message));
  assert.deepEqual(errors, [], `${message.turn.intent}: ${errors.join("; ")}`);
  // The raw turn still has eventTime, which the server refuses: the service worker must replace it.
  assert.ok(validateBrowserTurn({ ...message.turn, timestamp: 0 }).some((e) => e.includes("eventTime")));
}

// --- A page with the content script ----------------------------------------------------------------------------

const FORM = `<!doctype html><html><head><title>Form</title></head><body>
  <h1 id="title">Order form</h1>
  <p id="quote">The quick brown fox</p>
  <form id="order">
    <input id="name" name="name"><input id="email" type="email">
    <input id="password" type="password">
    <select id="color"><option value="red">Red</option><option value="blue">Blue</option></select>
    <input id="agree" type="checkbox" value="yes">
    <input id="size-s" type="radio" name="size" value="small"><input id="size-l" type="radio" name="size" value="large">
    <input id="volume" type="range" min="0" max="100" value="50">
    <textarea id="notes"></textarea>
    <button id="submit" type="submit">Send</button>
  </form>
  <a id="link" href="/next">Next</a>
  <div id="private" data-private title="PRIVATE-ATTR-88">PRIVATE-TEXT-77 <input id="private-input"></div>
  <section class="secret-box"><select id="secret-select"><option value="SELECTOR-SECRET-99">SELECTOR-SECRET-99</option><option value="other">other</option></select></section>
  <div id="host"></div>
</body></html>`;

const tick = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Run the manifest's content scripts in `window` with a fake chrome.runtime recording what is sent. */
function install(window, state) {
  const sent = [];
  const listeners = [];
  window.chrome = {
    runtime: {
      sendMessage(message) {
        sent.push(JSON.parse(JSON.stringify(message))); // what crosses the boundary: JSON-clonable data
        if (message.type === C.MSG.HELLO) return Promise.resolve({ state });
        return Promise.resolve({ ok: true, echo: message.type, viaPageBridge: !!message.viaPageBridge });
      },
      onMessage: { addListener: (fn) => listeners.push(fn) },
    },
  };
  window.WebTasks = { captureSettings: { requireTrusted: false } }; // jsdom events are untrusted
  for (const source of SOURCES) window.eval(source);
  return {
    sent,
    captures: (intent) => sent.filter((m) => m.type === C.MSG.CAPTURE && (!intent || m.turn.intent === intent)),
    broadcast: (message) => listeners.forEach((fn) => fn(message, {}, () => {})),
    ask: (message) => {
      const answers = [];
      listeners.forEach((fn) => fn(message, {}, (answer) => answers.push(JSON.parse(JSON.stringify(answer)))));
      return answers;
    },
  };
}

async function load({ html = FORM, state = RECORDING } = {}) {
  const { window } = new JSDOM(html, { url: "https://shop.test/form", runScripts: "outside-only", pretendToBeVisual: true });
  const doc = window.document;
  const shadow = doc.getElementById("host") && doc.getElementById("host").attachShadow({ mode: "open" });
  if (shadow) shadow.innerHTML = '<button id="shadow-button">Shadow button</button><input id="shadow-input"><select id="shadow-select"><option value="a">A</option><option value="b">B</option></select>';
  const page = install(window, state);
  await tick();
  return { window, doc, shadow, ...page };
}

function pointerDown(window, el, init = {}) {
  const event = new window.PointerEvent("pointerdown", {
    bubbles: true, composed: true, cancelable: true, button: 0, buttons: 1, clientX: 15, clientY: 25, pointerType: "mouse", ...init,
  });
  el.dispatchEvent(event);
  return event;
}

function click(window, el, init = {}) {
  const event = new window.MouseEvent("click", { bubbles: true, composed: true, cancelable: true, detail: 1, ...init });
  el.dispatchEvent(event);
  return event;
}

function type(window, el, text) {
  for (const ch of text) {
    el.value += ch;
    el.dispatchEvent(new window.InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: ch }));
  }
}

function blur(window, el) {
  el.dispatchEvent(new window.FocusEvent("focusout", { bubbles: true, composed: true }));
}

function change(window, el) {
  el.dispatchEvent(new window.Event("change", { bubbles: true }));
}

function uidOf(message) {
  return message.turn.arguments.element.attributes[UID];
}

// --- Tests ---------------------------------------------------------------------------------------------------

test("on load the content script asks the service worker for the recording state", async () => {
  const { sent } = await load();
  assert.equal(sent[0].target, C.TARGET.SW);
  assert.equal(sent[0].type, C.MSG.HELLO);
});

test("a click sends one CAPTURE, captured at pointerdown before the page reacts, valid for the server", async () => {
  const { window, doc, captures } = await load();
  const link = doc.getElementById("link");
  link.addEventListener("pointerdown", () => doc.body.insertAdjacentHTML("beforeend", "<p>AFTER THE CLICK</p>"));
  pointerDown(window, link, { clientX: 40, clientY: 60 });
  click(window, link);
  const [message] = captures();
  assert.equal(captures().length, 1, "the click event itself adds nothing");
  // No privateValues: the private fields are empty, and a private select shows the page's default choice.
  assert.deepEqual(Object.keys(message).sort(), ["frame", "mouse", "page", "privateRects", "regions", "target", "turn", "type", "viewport"]);
  assert.equal(message.target, C.TARGET.SW);
  assert.equal(message.type, C.MSG.CAPTURE);
  const { turn } = message;
  assert.deepEqual(Object.keys(turn).sort(), ["arguments", "client_id", "eventTime", "intent", "type"]);
  assert.equal(turn.type, "browser");
  assert.equal(turn.intent, "click");
  assert.ok(Math.abs(turn.eventTime - Date.now()) < 5000);
  assert.match(turn.client_id, /^[0-9a-f-]{36}$/);
  const { metadata, properties, element } = turn.arguments;
  assert.deepEqual(metadata, {
    url: "https://shop.test/form", viewportWidth: window.innerWidth, viewportHeight: window.innerHeight,
    mouseX: 40, mouseY: 60, zoomLevel: 1,
  });
  assert.equal(properties.x, 40);
  assert.equal(properties.clientY, 60);
  assert.equal(properties.button, 0);
  assert.equal(properties.buttons, 1);
  assert.equal(element.tagName, "A");
  assert.equal(element.attributes.href, "/next");
  assert.equal(element.xpath, "/html/body/a");
  const uid = uidOf(message);
  assert.ok(message.page.html.includes(`${UID}="${uid}"`));
  assert.ok(uid in message.page.bboxes);
  assert.ok(!message.page.html.includes("AFTER THE CLICK"), "the page is the state before the click's effect");
  assert.deepEqual(message.mouse, { x: 40, y: 60 });
  assert.equal(message.frame.isTop, true);
  assert.equal(message.frame.crossOrigin, false);
  assertValidForServer(message);
});

test("typing gives one textInput with the final text, sent on blur or before the next action", async () => {
  const { window, doc, captures } = await load();
  const name = doc.getElementById("name");
  const email = doc.getElementById("email");
  pointerDown(window, name);
  type(window, name, "Ada Lovelace");
  assert.equal(captures("textInput").length, 0);
  blur(window, name);
  pointerDown(window, email);
  type(window, email, "ada@example.org");
  pointerDown(window, doc.getElementById("submit")); // another action flushes first
  const intents = captures().map((m) => `${m.turn.intent}#${m.turn.arguments.element.attributes.id}`);
  assert.deepEqual(intents, ["click#name", "textInput#name", "click#email", "textInput#email", "click#submit"]);
  const [first, second] = captures("textInput");
  assert.equal(first.turn.arguments.text, "Ada Lovelace");
  assert.equal(second.turn.arguments.text, "ada@example.org");
  assert.equal(first.turn.arguments.element.attributes.value, "Ada Lovelace");
  assert.ok(first.page.html.includes('value="Ada Lovelace"'));
  for (const message of captures()) assertValidForServer(message);
});

test("change values: select option value, checkbox true/false, radio value, range value", async () => {
  const { window, doc, captures } = await load();
  const byId = (id) => doc.getElementById(id);
  byId("color").value = "blue";
  change(window, byId("color"));
  byId("agree").checked = true;
  change(window, byId("agree"));
  byId("agree").checked = false;
  change(window, byId("agree"));
  byId("size-l").checked = true;
  change(window, byId("size-l"));
  byId("volume").value = "73";
  byId("volume").dispatchEvent(new window.InputEvent("input", { bubbles: true })); // dragging: no textInput
  change(window, byId("volume"));
  byId("name").value = "x";
  change(window, byId("name")); // a text field's change: its textInput carries the text
  const values = captures().map((m) => [m.turn.intent, m.turn.arguments.element.attributes.id, m.turn.arguments.value]);
  assert.deepEqual(values, [
    ["change", "color", "blue"], ["change", "agree", "true"], ["change", "agree", "false"],
    ["change", "size-l", "large"], ["change", "volume", "73"],
  ]);
  for (const message of captures()) assertValidForServer(message);
});

test("Enter in a one-line field sends its text at once, even if the page then removes the field", async () => {
  const { window, doc, captures } = await load();
  const name = doc.getElementById("name");
  name.addEventListener("keydown", () => name.remove()); // a single-page app re-rendering on Enter
  type(window, name, "query");
  name.dispatchEvent(new window.KeyboardEvent("keydown", { key: "Enter", bubbles: true, composed: true }));
  assert.deepEqual(captures().map((m) => [m.turn.intent, m.turn.arguments.text]), [["textInput", "query"]]);
  assert.ok(captures()[0].page.html.includes('value="query"'), "captured before the page reacted");
  assertValidForServer(captures()[0]);
});

test("submit is recorded on the form, after the text typed before it", async () => {
  const { window, doc, captures } = await load();
  const form = doc.getElementById("order");
  form.addEventListener("submit", (e) => e.preventDefault());
  type(window, doc.getElementById("name"), "Ada");
  form.dispatchEvent(new window.Event("submit", { bubbles: true, cancelable: true }));
  assert.deepEqual(captures().map((m) => m.turn.intent), ["textInput", "submit"]);
  const submit = captures("submit")[0];
  assert.equal(submit.turn.arguments.element.tagName, "FORM");
  assert.equal(submit.turn.arguments.element.attributes.id, "order");
  assertValidForServer(submit);
});

test("copy carries the selected text, paste the clipboard text (not repeated as a textInput)", async () => {
  const { window, doc, captures } = await load();
  window.getSelection().selectAllChildren(doc.getElementById("quote"));
  doc.body.dispatchEvent(new window.Event("copy", { bubbles: true, composed: true }));
  const notes = doc.getElementById("notes");
  const paste = new window.Event("paste", { bubbles: true, composed: true, cancelable: true });
  Object.defineProperty(paste, "clipboardData", { value: { getData: (kind) => (kind === "text/plain" ? "The quick brown fox" : "") } });
  notes.dispatchEvent(paste);
  notes.value = "The quick brown fox";
  notes.dispatchEvent(new window.InputEvent("input", { bubbles: true, composed: true, inputType: "insertFromPaste" }));
  blur(window, notes);
  const [copy] = captures("copy");
  assert.equal(copy.turn.arguments.selected, "The quick brown fox");
  assert.equal(copy.turn.arguments.element.attributes.id, "quote");
  const [pasted] = captures("paste");
  assert.equal(pasted.turn.arguments.pasted, "The quick brown fox");
  assert.equal(pasted.turn.arguments.element.attributes.id, "notes");
  assert.equal(captures("textInput").length, 0);
  assertValidForServer(copy);
  assertValidForServer(pasted);
});

test("actions inside an open shadow root name the real element", async () => {
  const { window, shadow, captures } = await load();
  const button = shadow.getElementById("shadow-button");
  pointerDown(window, button);
  const input = shadow.getElementById("shadow-input");
  type(window, input, "in the shadow");
  blur(window, input);
  const select = shadow.getElementById("shadow-select");
  select.value = "b";
  change(window, select); // not composed: heard because the pointerdown hooked the shadow root
  const [clickMessage, typed, changed] = captures();
  assert.equal(clickMessage.turn.arguments.element.attributes.id, "shadow-button");
  assert.equal(clickMessage.turn.arguments.element.xpath, "/html/body/div[2]/#shadow-root/button");
  assert.ok(clickMessage.page.html.includes(`${UID}="${uidOf(clickMessage)}"`));
  assert.equal(typed.turn.intent, "textInput");
  assert.equal(typed.turn.arguments.text, "in the shadow");
  assert.equal(changed.turn.intent, "change");
  assert.equal(changed.turn.arguments.value, "b");
});

test("in a same-origin iframe the whole page is captured and boxes are top-level", async () => {
  const html = '<!doctype html><html><body><h1>Top</h1><iframe id="frame"></iframe></body></html>';
  const { window, doc, ...top } = await load({ html });
  const iframe = doc.getElementById("frame");
  const frameWindow = iframe.contentWindow;
  frameWindow.document.body.innerHTML = '<button id="frame-button">Frame button</button>';
  window.Element.prototype.getBoundingClientRect = function () {
    const r = this === iframe ? { x: 100, y: 50, w: 400, h: 120 } : { x: 0, y: 0, w: 0, h: 0 };
    return { left: r.x, top: r.y, width: r.w, height: r.h, right: r.x + r.w, bottom: r.y + r.h };
  };
  frameWindow.Element.prototype.getBoundingClientRect = function () {
    return { left: 10, top: 20, width: 80, height: 24, right: 90, bottom: 44 };
  };
  const frame = install(frameWindow, RECORDING);
  await tick();
  // Text typed in the top document is flushed before the frame's click (the top's focusout comes later).
  doc.body.insertAdjacentHTML("beforeend", '<input id="top-input">');
  type(window, doc.getElementById("top-input"), "typed on top");
  pointerDown(frameWindow, frameWindow.document.getElementById("frame-button"), { clientX: 12, clientY: 22 });
  assert.deepEqual(top.captures().map((m) => [m.turn.intent, m.turn.arguments.text]), [["textInput", "typed on top"]]);
  const [message] = frame.captures();
  const { metadata, element, properties } = message.turn.arguments;
  assert.equal(metadata.url, "https://shop.test/form", "the tab's page, not about:blank");
  assert.equal(metadata.frameUrl, "about:blank");
  assert.deepEqual([metadata.mouseX, metadata.mouseY, properties.x, properties.y], [112, 72, 112, 72]);
  assert.deepEqual(element.bbox, { x: 110, y: 70, width: 80, height: 24, top: 70, right: 190, bottom: 94, left: 110 });
  assert.equal(element.xpath, "/html/body/iframe/#document/html/body/button");
  assert.ok(message.page.html.startsWith("<!DOCTYPE html><html"));
  assert.ok(message.page.html.includes("<h1 "), "the top document");
  assert.ok(message.page.html.includes(`${UID}="${uidOf(message)}"`), "the frame's element is in the page (srcdoc)");
  assert.deepEqual(message.page.bboxes[uidOf(message)], element.bbox);
  assert.equal(message.frame.isTop, false);
  assert.equal(message.frame.crossOrigin, false);
  assertValidForServer(message);
});

test("task mode: Alt+click is recorded as a fake click and not executed", async () => {
  const { window, doc, captures, broadcast } = await load();
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { ...RECORDING, mode: "task" } });
  const link = doc.getElementById("link");
  const reached = [];
  for (const type of ["pointerdown", "mousedown", "mouseup", "click"]) link.addEventListener(type, () => reached.push(type));
  const down = pointerDown(window, link, { altKey: true });
  for (const type of ["mousedown", "mouseup"]) link.dispatchEvent(new window.MouseEvent(type, { bubbles: true, cancelable: true, altKey: true }));
  const clickEvent = click(window, link, { altKey: true });
  assert.deepEqual(reached, [], "the page never sees the click");
  assert.ok(down.defaultPrevented && clickEvent.defaultPrevented);
  const [message] = captures();
  assert.equal(message.turn.intent, "click");
  assert.equal(message.turn.arguments.properties.fakeClick, true);
  assertValidForServer(message);
  // A plain click afterwards goes through.
  pointerDown(window, link);
  click(window, link);
  assert.deepEqual(reached, ["pointerdown", "click"]);
  assert.equal(captures().length, 2);
  assert.ok(!("fakeClick" in captures()[1].turn.arguments.properties));
});

test("Alt+click in chat mode is an ordinary click", async () => {
  const { window, doc, captures } = await load();
  const event = pointerDown(window, doc.getElementById("link"), { altKey: true });
  assert.equal(event.defaultPrevented, false);
  assert.ok(!("fakeClick" in captures()[0].turn.arguments.properties));
});

test("keyboard activation (Enter on a link) is a click; a pointer click is not counted twice", async () => {
  const { window, doc, captures } = await load();
  const link = doc.getElementById("link");
  link.dispatchEvent(new window.KeyboardEvent("keydown", { key: "Enter", bubbles: true, composed: true }));
  click(window, link, { detail: 0 });
  assert.equal(captures("click").length, 1);
  assert.equal(captures("click")[0].turn.arguments.properties.keyboard, true);
  // Enter in a text field submits through a synthetic click on the submit button: that is the submit turn's.
  const name = doc.getElementById("name");
  name.dispatchEvent(new window.KeyboardEvent("keydown", { key: "Enter", bubbles: true, composed: true }));
  click(window, doc.getElementById("submit"), { detail: 0 });
  assert.equal(captures("click").length, 1);
});

test("nothing is captured before recording, while paused or after stop; unknown messages are warned about", async (t) => {
  const { window, doc, captures, broadcast } = await load({ state: { recording: false } });
  const link = doc.getElementById("link");
  pointerDown(window, link);
  assert.equal(captures().length, 0);
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: RECORDING });
  pointerDown(window, link);
  assert.equal(captures().length, 1);
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { ...RECORDING, paused: true } });
  pointerDown(window, link);
  type(window, doc.getElementById("name"), "ignored");
  assert.equal(captures().length, 1);
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { recording: false } });
  pointerDown(window, link);
  assert.equal(captures().length, 1);
  const warn = t.mock.method(console, "warn", () => {});
  broadcast({ target: C.TARGET.CONTENT, type: "no-such-type" });
  broadcast({ target: C.TARGET.PANEL, type: C.MSG.STATE, state: RECORDING }); // not for us: ignored silently
  assert.equal(warn.mock.callCount(), 1);
  pointerDown(window, link);
  assert.equal(captures().length, 1);
});

test("text typed before a pause is still sent when the recording pauses", async () => {
  const { window, doc, captures, broadcast } = await load();
  type(window, doc.getElementById("name"), "Ada");
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { ...RECORDING, paused: true } });
  assert.deepEqual(captures().map((m) => [m.turn.intent, m.turn.arguments.text]), [["textInput", "Ada"]]);
});

test("scroll: one turn with the window's final position; hover after a dwell", async () => {
  const { window, doc, captures } = await load();
  let y = 0;
  Object.defineProperty(window, "scrollY", { get: () => y, configurable: true });
  for (const position of [300, 700, 1234]) {
    y = position;
    doc.dispatchEvent(new window.Event("scroll", { bubbles: true }));
    await sleep(50);
  }
  assert.equal(captures().length, 0);
  await sleep(C.TIMING.SCROLL_DEBOUNCE_MS + 100);
  const scrolls = captures("scroll");
  assert.equal(scrolls.length, 1);
  assert.equal(scrolls[0].turn.arguments.scrollY, 1234);
  assert.equal(scrolls[0].turn.arguments.scrollX, 0);
  assert.ok(!("element" in scrolls[0].turn.arguments));
  assertValidForServer(scrolls[0]);

  const title = doc.getElementById("title");
  title.dispatchEvent(new window.MouseEvent("mouseover", { bubbles: true, composed: true, clientX: 30, clientY: 12 }));
  await sleep(C.TIMING.HOVER_DWELL_MS / 2);
  assert.equal(captures("hover").length, 0);
  await sleep(C.TIMING.HOVER_DWELL_MS / 2 + 150);
  const hovers = captures("hover");
  assert.equal(hovers.length, 1);
  assert.equal(hovers[0].turn.arguments.element.attributes.id, "title");
  assert.deepEqual([hovers[0].turn.arguments.metadata.mouseX, hovers[0].turn.arguments.metadata.mouseY], [30, 12]);
  assertValidForServer(hovers[0]);
});

test("secrets appear nowhere in what the content script sends", async () => {
  const { window, doc, captures } = await load();
  const secrets = ["Zq7pw-Secret-4242", "PASTED-SECRET-31", "PRIVATE-TEXT-77", "PRIVATE-ATTR-88", "SELECTOR-SECRET-99", "PRIV-INPUT-12"];
  const password = doc.getElementById("password");
  pointerDown(window, password);
  type(window, password, "Zq7pw-Secret-4242");
  blur(window, password);
  const paste = new window.Event("paste", { bubbles: true, composed: true, cancelable: true });
  Object.defineProperty(paste, "clipboardData", { value: { getData: () => "PASTED-SECRET-31" } });
  password.dispatchEvent(paste);
  password.value += "PASTED-SECRET-31";
  const privateInput = doc.getElementById("private-input");
  pointerDown(window, privateInput);
  type(window, privateInput, "PRIV-INPUT-12");
  blur(window, privateInput);
  const secretSelect = doc.getElementById("secret-select");
  secretSelect.value = "SELECTOR-SECRET-99";
  change(window, secretSelect);
  window.getSelection().selectAllChildren(doc.body); // a selection over the private block
  doc.body.dispatchEvent(new window.Event("copy", { bubbles: true, composed: true }));
  pointerDown(window, doc.getElementById("private"));
  pointerDown(window, doc.body);
  const intents = captures().map((m) => m.turn.intent);
  assert.deepEqual(intents, ["click", "textInput", "paste", "click", "textInput", "change", "copy", "click", "click"]);
  // Only beside the turn, for the worker to mask them wherever they show up later (it never stores them).
  const everything = JSON.stringify(captures().map(({ privateValues, ...rest }) => rest));
  for (const secret of secrets) assert.ok(!everything.includes(secret), `${secret} was sent`);
  const held = new Set(captures().flatMap((m) => m.privateValues || []));
  for (const value of ["Zq7pw-Secret-4242", "Zq7pw-Secret-4242PASTED-SECRET-31", "PRIV-INPUT-12"]) {
    assert.ok(held.has(value), `${value} is not among the private values the worker is told`);
  }
  assert.equal(captures("textInput")[0].turn.arguments.text, "********");
  assert.equal(captures("paste")[0].turn.arguments.pasted, "********");
  assert.equal(captures("change")[0].turn.arguments.value, "********");
  assert.equal(captures("copy")[0].turn.arguments.selected, "********");
  for (const message of captures()) assertValidForServer(message);
});

test("page bridge: a page's request goes to the service worker and the reply comes back", async () => {
  const { window, sent } = await load();
  const replies = [];
  window.addEventListener("message", (e) => {
    if (e.data && e.data.type === C.MSG.PAGE_BRIDGE && "reply" in e.data) replies.push(e.data);
  });
  const post = (data) => window.dispatchEvent(new window.MessageEvent("message", { data, source: window }));
  post({ type: C.MSG.PAGE_BRIDGE, id: 7, request: { type: C.MSG.STATUS } });
  post({ type: C.MSG.PAGE_BRIDGE, id: 8, request: { type: C.MSG.CAPTURE, turn: {} } });
  await sleep(20);
  const forwarded = sent.filter((m) => m.type === C.MSG.STATUS);
  assert.deepEqual(forwarded, [{ type: C.MSG.STATUS, target: C.TARGET.SW, viaPageBridge: true }]);
  assert.equal(sent.filter((m) => m.type === C.MSG.CAPTURE).length, 0, "a page cannot forge captures");
  const byId = Object.fromEntries(replies.map((r) => [r.id, r]));
  assert.deepEqual(byId[7].reply, { ok: true, echo: C.MSG.STATUS, viaPageBridge: true });
  assert.ok(byId[8].error);
});

test("frame offsets: a parent answers its child frame, a child accepts only its parent's answer", async () => {
  const html = '<!doctype html><html><body><iframe id="frame"></iframe></body></html>';
  const { window, doc } = await load({ html });
  const iframe = doc.getElementById("frame");
  window.Element.prototype.getBoundingClientRect = function () {
    const r = this === iframe ? { x: 100, y: 50, w: 400, h: 120 } : { x: 0, y: 0, w: 0, h: 0 };
    return { left: r.x, top: r.y, width: r.w, height: r.h, right: r.x + r.w, bottom: r.y + r.h };
  };
  Object.defineProperty(iframe, "clientLeft", { value: 1 });
  Object.defineProperty(iframe, "clientTop", { value: 1 });
  const frameWindow = iframe.contentWindow;
  const posted = [];
  frameWindow.postMessage = (data, origin) => posted.push(JSON.parse(JSON.stringify([data, origin])));
  // The child (on another origin in real life) asks; the parent's content script answers it.
  window.dispatchEvent(new window.MessageEvent("message", { data: { type: C.MSG.FRAME_OFFSET, request: true }, source: frameWindow }));
  assert.deepEqual(posted, [[{ type: C.MSG.FRAME_OFFSET, x: 101, y: 51, viewportWidth: window.innerWidth, viewportHeight: window.innerHeight }, "*"]]);

  const frame = install(frameWindow, RECORDING);
  await tick();
  const capture = frameWindow.WebTasks.capture;
  const answer = (source, x) => frameWindow.dispatchEvent(new frameWindow.MessageEvent("message", {
    data: { type: C.MSG.FRAME_OFFSET, x, y: 51, viewportWidth: 1280, viewportHeight: 800 }, source,
  }));
  answer(window, 101);
  assert.deepEqual({ ...capture.received() }, { x: 101, y: 51, viewportWidth: 1280, viewportHeight: 800 });
  answer(frameWindow, 1); // the frame's own page cannot move it
  assert.equal(capture.received().x, 101);
  assert.equal(frame.sent[0].type, C.MSG.HELLO);
});

test("captures the worker has not confirmed are saved for it when the page goes away", async () => {
  const { window, doc } = await load();
  const saved = {};
  const answers = [];
  window.chrome.storage = { local: { set: (entries) => Promise.resolve(Object.assign(saved, entries)) } };
  const realSend = window.chrome.runtime.sendMessage;
  window.chrome.runtime.sendMessage = (message) =>
    message.type === C.MSG.CAPTURE ? new Promise((resolve) => answers.push(resolve)) : realSend(message);

  pointerDown(window, doc.getElementById("title")); // answered: the worker stored it
  answers.shift()({ ok: true });
  await tick();
  pointerDown(window, doc.getElementById("link")); // never answered: the page navigates away first
  window.dispatchEvent(new window.Event("pagehide"));
  await tick();

  const keys = Object.keys(saved);
  assert.equal(keys.length, 1);
  assert.ok(keys[0].startsWith(C.STORAGE.PENDING_CAPTURE));
  const pending = saved[keys[0]];
  assert.equal(pending.message.turn.intent, "click");
  assert.equal(pending.message.turn.arguments.element.attributes[UID], doc.getElementById("link").getAttribute(UID));
  assert.equal(keys[0], C.STORAGE.PENDING_CAPTURE + pending.message.turn.client_id);
  assert.ok(pending.at > 0);
});

// --- Step mode -------------------------------------------------------------------------------------------

async function loadStep(html) {
  const page = await load(html ? { html } : {});
  page.broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { ...RECORDING, mode: "task", step: true } });
  return page;
}

test("step mode: a click selects its element, none of its events reach the page, nothing else is recorded", async () => {
  const { window, doc, sent, captures } = await loadStep();
  const link = doc.getElementById("link");
  const reached = [];
  for (const type of ["pointerdown", "mousedown", "pointerup", "mouseup", "click"]) link.addEventListener(type, () => reached.push(type));
  const down = pointerDown(window, link);
  for (const type of ["mousedown", "pointerup", "mouseup"]) link.dispatchEvent(new window.MouseEvent(type, { bubbles: true, cancelable: true }));
  const clickEvent = click(window, link);
  assert.deepEqual(reached, [], "the page never sees the click");
  assert.ok(down.defaultPrevented && clickEvent.defaultPrevented);
  assert.equal(captures().length, 0, "no ordinary capture in step mode");
  const selects = sent.filter((m) => m.type === C.MSG.STEP_SELECT);
  assert.equal(selects.length, 1);
  const [selected] = selects;
  assert.equal(selected.turn.intent, "click");
  assert.equal(selected.turn.arguments.element.tagName, "A");
  assert.ok(selected.page.html.includes(selected.turn.arguments.element.attributes[C.UID_ATTRIBUTE]));
  assert.match(selected.label, /<a#link> Next/);
  assert.equal(selected.options, undefined);
  // Typing on the page is not recorded either (only operations chosen in the panel make turns).
  const input = doc.getElementById("name");
  type(window, input, "abc");
  await sleep(50);
  assert.equal(captures().length, 0);
});

test("step mode: a select's options are sent with the selection", async () => {
  const { window, doc, sent } = await loadStep();
  pointerDown(window, doc.getElementById("secret-select"));
  const [selected] = sent.filter((m) => m.type === C.MSG.STEP_SELECT);
  assert.deepEqual(selected.options.map((o) => o.value), ["SELECTOR-SECRET-99", "other"]);
});

test("step mode: the selection carries the element's privacy level; a private one's label shows no value", async () => {
  const { window, doc, sent } = await loadStep();
  const password = doc.getElementById("password");
  password.value = "Zq7pw-Secret-4242"; // filled in before (by the page or the browser)
  doc.getElementById("private-input").value = "PRIV-INPUT-12";
  const card = doc.createElement("input");
  card.id = "card";
  card.setAttribute("autocomplete", "cc-number");
  card.value = "4111222233334444";
  doc.body.append(card);
  const expected = { password: 1, card: 1, "private-input": 2, "secret-select": 2, name: 0, link: 0 };
  for (const id of Object.keys(expected)) pointerDown(window, doc.getElementById(id));
  const selects = sent.filter((m) => m.type === C.MSG.STEP_SELECT);
  const levels = Object.fromEntries(selects.map((m) => [m.turn.arguments.element.attributes.id || "private-input", m.privacy]));
  assert.deepEqual(levels, expected);
  for (const m of selects.slice(0, 4)) assert.match(m.label, /^<(input|select)#[a-z-]+> \(private\)$/, m.label);
  const everything = JSON.stringify(selects.map(({ options, privateValues, ...rest }) => rest));
  for (const secret of ["Zq7pw-Secret-4242", "PRIV-INPUT-12", "4111222233334444", "SELECTOR-SECRET-99"]) {
    assert.ok(!everything.includes(secret), `${secret} was sent with a selection`);
  }
  for (const value of ["Zq7pw-Secret-4242", "PRIV-INPUT-12", "4111222233334444"]) {
    assert.ok(selects[0].privateValues.includes(value), `${value}: the worker is told what private fields hold`);
  }
});

test("step mode off again: clicks act and are recorded", async () => {
  const { window, doc, captures, broadcast } = await loadStep();
  broadcast({ target: C.TARGET.CONTENT, type: C.MSG.STATE, state: { ...RECORDING, mode: "task", step: false } });
  const event = pointerDown(window, doc.getElementById("link"));
  assert.equal(event.defaultPrevented, false);
  assert.equal(captures("click").length, 1);
});

test("step mode: a page cannot forge a selection through the bridge", async () => {
  const { window, sent } = await loadStep();
  const replies = [];
  window.addEventListener("message", (e) => e.data && "reply" in e.data && replies.push(e.data));
  const data = { type: C.MSG.PAGE_BRIDGE, id: "x", request: { type: C.MSG.STEP_SELECT, turn: {} } };
  window.dispatchEvent(new window.MessageEvent("message", { data, source: window }));
  await sleep(20);
  assert.equal(sent.filter((m) => m.type === C.MSG.STEP_SELECT).length, 0);
  assert.match(replies[0].error, /cannot send captures/);
  assert.equal(replies[0].content.step, true, "the reply carries the content script's own state");
});

// --- Private regions (the worker masks screenshots with every frame's; lib/regions.js) ---------------------------

/** jsdom has no layout: boxes from a data-box="x y w h" attribute (zero without one). */
function fakeLayout(window) {
  const boxOf = (el) => {
    const [x, y, width, height] = (el.getAttribute("data-box") || "0 0 0 0").split(" ").map(Number);
    return { x, y, width, height, left: x, top: y, right: x + width, bottom: y + height };
  };
  window.Element.prototype.getBoundingClientRect = function () {
    return boxOf(this);
  };
  for (const prop of ["clientWidth", "clientHeight"]) {
    Object.defineProperty(window.HTMLIFrameElement.prototype, prop, {
      get() {
        return boxOf(this)[prop === "clientWidth" ? "width" : "height"];
      },
    });
  }
}

const REGIONS_PAGE = `<!doctype html><html><body>
  <input id="name" data-box="10 10 100 20"><input id="password" type="password" data-box="10 40 100 20">
  <div data-private data-box="10 70 200 50">PRIVATE-TEXT <input id="inner" data-box="20 80 50 20"></div>
  <section class="secret-box" data-box="300 10 50 50"></section>
  <iframe id="child" data-box="400 100 300 200"></iframe>
</body></html>`;

test("a frame reports its private areas and iframe boxes in its own viewport; children name their boxes", async () => {
  const { window, doc, ask } = await load({ html: REGIONS_PAGE });
  fakeLayout(window);
  const [report] = ask({ target: C.TARGET.CONTENT, type: C.MSG.REGIONS, privateSelectors: [".secret-box"] });
  assert.equal(report.url, "https://shop.test/form");
  assert.deepEqual(report.viewport, { width: window.innerWidth, height: window.innerHeight });
  const rects = report.rects.map((r) => `${r.x} ${r.y} ${r.width} ${r.height}`).sort();
  assert.deepEqual(rects, ["10 40 100 20", "10 70 200 50", "20 80 50 20", "300 10 50 50"]);
  assert.deepEqual(report.frames, [{ frameId: null, x: 400, y: 100, width: 300, height: 200 }]);
  // The child frame's content script tells its frameId (from its HELLO reply) to its parent.
  const child = doc.getElementById("child").contentWindow;
  window.dispatchEvent(new window.MessageEvent("message", { data: { type: C.MSG.FRAME_ID, frameId: 12 }, source: child }));
  const [named] = ask({ target: C.TARGET.CONTENT, type: C.MSG.REGIONS });
  assert.deepEqual(named.frames, [{ frameId: 12, x: 400, y: 100, width: 300, height: 200 }]);
  // A window that is not one of its frames cannot name anything.
  window.dispatchEvent(new window.MessageEvent("message", { data: { type: C.MSG.FRAME_ID, frameId: 13 }, source: window }));
  assert.equal(ask({ target: C.TARGET.CONTENT, type: C.MSG.REGIONS })[0].frames[0].frameId, 12);
});

test("an action's capture carries its frame's regions report, taken with it", async () => {
  const { window, doc, captures } = await load({ html: REGIONS_PAGE });
  fakeLayout(window);
  pointerDown(window, doc.getElementById("name"));
  const [message] = captures("click");
  const rects = message.regions.rects.map((r) => `${r.x} ${r.y} ${r.width} ${r.height}`).sort();
  assert.deepEqual(rects, ["10 40 100 20", "10 70 200 50", "20 80 50 20", "300 10 50 50"]);
  assert.equal(message.regions.frames.length, 1);
  assert.ok(!JSON.stringify(message.regions).includes("PRIVATE-TEXT"));
});

test("a frame without private fields reports none (step mode may keep its MHTML)", async () => {
  const { ask } = await load({ html: `<!doctype html><html><body><input id="q"><p>Hello</p></body></html>` });
  const fields = { target: C.TARGET.CONTENT, type: C.MSG.REGIONS, fields: true };
  assert.equal(ask(fields)[0].privateFields, 0);
  assert.equal("privateFields" in ask({ target: C.TARGET.CONTENT, type: C.MSG.REGIONS })[0], false, "counted when asked");
});

test("private fields are counted anywhere: light DOM, open shadow trees, credential inputs, configured selectors", async () => {
  const fields = { target: C.TARGET.CONTENT, type: C.MSG.REGIONS, fields: true };
  const count = async (body, setup) => {
    const page = await load({ html: `<!doctype html><html><body><input id="q">${body}</body></html>` });
    if (setup) setup(page.doc);
    return page.ask(fields)[0].privateFields;
  };
  assert.equal(await count('<input type="password">'), 1);
  assert.equal(await count('<div data-private>x</div>'), 1);
  assert.equal(await count('<p class="secret-box">x</p>'), 1, "the configured selector");
  assert.equal(await count('<input autocomplete="shipping cc-number">'), 1);
  assert.equal(await count('<input autocomplete="name">'), 0);
  const inShadow = (html) => (doc) => (doc.getElementById("box").attachShadow({ mode: "open" }).innerHTML = html);
  assert.equal(await count('<div id="box"></div>', inShadow("<p data-private>secret</p>")), 1);
  assert.equal(await count('<div id="box"></div>', inShadow('<input autocomplete="current-password">')), 1);
  assert.equal(await count('<div id="box"></div>', inShadow("<p>nothing</p>")), 0);
});
