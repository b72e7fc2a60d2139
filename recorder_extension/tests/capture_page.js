// The content script's test page (capture.test.js, capture_step.test.js): the manifest's content scripts run in
// jsdom with a fake chrome.runtime recording what is sent, events to dispatch, and a mirror of the server's turn
// validation (annotation/schema.py) to check each message against.
"use strict";

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
  BROWSER_FIELDS: ["client_id", "type", "timestamp", "intent", "arguments", "label", "screenshot", "page", "bboxes"],
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

module.exports = {
  C, UID, RECORDING, SHA, FORM, validateBrowserTurn, assertValidForServer, tick, sleep, install, load, pointerDown, click, type, blur, change, uidOf,
};
