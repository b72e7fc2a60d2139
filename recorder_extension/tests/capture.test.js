// content/capture.js in jsdom with a fake chrome.runtime (capture_page.js): the messages each action sends, checked
// against a mirror of the server's turn validation (annotation/schema.py) and for secrets.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const {
  C, UID, RECORDING, FORM, assertValidForServer, tick, sleep, install, load, pointerDown, click, type, blur, change, uidOf,
} = require("./capture_page.js");

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
  assert.deepEqual(Object.keys(turn).sort(), ["arguments", "client_id", "eventTime", "intent", "label", "type"]);
  assert.equal(turn.label, "Next", "what review names the action by");
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
