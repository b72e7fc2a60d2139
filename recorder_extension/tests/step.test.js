// lib/step.js: the step-mode state machine, operation → turn mapping, the CDP input of each operation;
// and the session/uploader side of demonstration tasks (start through the task, the confirmed description).
const test = require("node:test");
const assert = require("node:assert/strict");
const C = require("../lib/constants.js");
const step = require("../lib/step.js");
const privacy = require("../lib/privacy.js");
const sessions = require("../lib/sessions.js");

const SELECTION = {
  label: "<select#size>", options: [{ value: "m", text: "Medium" }, { value: "l", text: "Large" }], privacy: 0,
  capture: {
    type: "capture",
    turn: {
      client_id: "u1", type: "browser", intent: "click", eventTime: 1000,
      arguments: {
        metadata: { url: "https://shop.test/" },
        element: { tagName: "SELECT", attributes: { "data-webtasks-id": "u1" } },
        properties: { x: 10, y: 20, button: 0 },
      },
    },
    page: { html: "<html></html>", bboxes: {} },
  },
};

test("state machine: select, operate, done; reselecting replaces; nothing while executing", () => {
  let s = step.IDLE;
  assert.match(step.reduce(s, { type: "operate", op: "click" }).error, /select an element/);
  s = step.reduce(s, { type: "select", selection: SELECTION });
  assert.equal(s.phase, "selected");
  const other = { ...SELECTION, label: "other" };
  s = step.reduce(s, { type: "select", selection: other });
  assert.equal(s.selection.label, "other");
  s = step.reduce(s, { type: "operate", op: "click" });
  assert.equal(s.phase, "executing");
  assert.equal(s.op, "click");
  assert.match(step.reduce(s, { type: "select", selection: SELECTION }).error, /being performed/);
  assert.match(step.reduce(s, { type: "operate", op: "click" }).error, /select an element/);
  assert.deepEqual(step.reduce(s, { type: "done" }), step.IDLE);
  const selected = step.reduce(step.IDLE, { type: "select", selection: SELECTION });
  assert.deepEqual(step.reduce(selected, { type: "operate", op: "ignore" }), step.IDLE, "ignore drops the selection");
  assert.match(step.reduce(selected, { type: "bogus" }).error, /unknown/);
});

test("a STEP_SELECT message becomes the kept selection: its capture (a CAPTURE again), options, label, privacy", () => {
  const message = {
    target: C.TARGET.SW, type: C.MSG.STEP_SELECT, turn: SELECTION.capture.turn, page: SELECTION.capture.page,
    regions: { rects: [] }, options: SELECTION.options, label: "<select#size> m", privacy: privacy.VALUE,
  };
  const selection = step.selectionFrom(message, { tabId: 3, url: "https://shop.test/" }, 5);
  assert.deepEqual(selection, {
    tabId: 3, frameId: 5, tabUrl: "https://shop.test/", options: SELECTION.options, label: "<select#size> m", clientId: "u1",
    privacy: privacy.VALUE,
    capture: { turn: SELECTION.capture.turn, page: SELECTION.capture.page, regions: { rects: [] }, type: C.MSG.CAPTURE },
  });
  const bare = step.selectionFrom({ turn: SELECTION.capture.turn, options: "m", privacy: "0" }, { tabId: 3, url: "u" }, undefined);
  assert.equal(bare.frameId, 0, "the top frame");
  assert.equal(bare.options, null);
  assert.equal(bare.label, "");
  assert.equal(bare.privacy, null, "not a level: counted as private");
  assert.equal(step.isPrivateSelection(bare), true);
});

test("the panel's view of the step state: phase, operation and the selection without page, boxes or bytes", () => {
  assert.deepEqual(step.publicState(null), { phase: "idle", op: null, selection: null });
  const executing = step.reduce(step.reduce(step.IDLE, { type: "select", selection: { ...SELECTION, tabId: 3, frameId: 0 } }), { type: "operate", op: "type" });
  assert.deepEqual(step.publicState(executing), {
    phase: "executing", op: "type",
    selection: { tabId: 3, frameId: 0, label: "<select#size>", options: SELECTION.options, tagName: "SELECT", private: false },
  });
  const secret = { ...SELECTION, privacy: privacy.SUBTREE };
  assert.equal(step.publicState({ phase: "selected", selection: secret }).selection.private, true);
});

test("operations are checked: type needs text, select one of the options", () => {
  assert.equal(step.checkOperation(SELECTION, "click"), null);
  assert.match(step.checkOperation(SELECTION, "jump"), /^op:/);
  assert.match(step.checkOperation(SELECTION, "type", ""), /^value:/);
  assert.match(step.checkOperation(SELECTION, "type", "x".repeat(10001)), /at most/);
  assert.equal(step.checkOperation(SELECTION, "type", "hello"), null);
  assert.equal(step.checkOperation(SELECTION, "select", "l"), null);
  assert.match(step.checkOperation(SELECTION, "select", "xl"), /not one of/);
  assert.match(step.checkOperation({ ...SELECTION, options: null }, "select", "l"), /not a <select>/);
  assert.match(step.checkOperation(null, "click"), /select an element/);
});

test("operation → turn: the contract's intents, values and the original operation", () => {
  const turnOf = (op, value) => step.stepCapture(SELECTION, op, value).turn;
  const expected = {
    click: ["click", "CLICK"], hover: ["hover", "HOVER"], enter: ["submit", "ENTER"],
    type: ["textInput", "TYPE"], select: ["change", "SELECT"], fake: ["click", "CLICK"],
  };
  for (const [op, [intent, original]] of Object.entries(expected)) {
    const turn = turnOf(op, op === "type" ? "blue shoes" : "l");
    assert.equal(turn.intent, intent, op);
    assert.equal(turn.arguments.properties.stepOp, original, op);
    assert.equal(turn.arguments.element.tagName, "SELECT", "the selected element is the turn's");
    assert.equal(turn.arguments.metadata.url, "https://shop.test/");
    assert.equal(turn.client_id, "u1");
    assert.equal(Boolean(turn.arguments.properties.fakeClick), op === "fake", op);
  }
  assert.equal(turnOf("type", "blue shoes").arguments.text, "blue shoes");
  assert.equal(turnOf("select", "l").arguments.value, "l");
  assert.equal(turnOf("select", "l").arguments.properties.optionText, "Large");
  assert.equal(step.stepCapture(SELECTION, "ignore"), null);
  assert.equal(SELECTION.capture.turn.intent, "click", "the selection is not changed");
  assert.deepEqual(SELECTION.capture.page, step.stepCapture(SELECTION, "click").page, "the page before the step");
  assert.equal(step.executes("fake"), false);
  assert.equal(step.executes("click"), true);
});

/** A selection of `element` ({tagName, attributes}) at privacy level `privacy` (lib/privacy.js), with options. */
function selectionOf(element, privacy, options = SELECTION.options) {
  const capture = JSON.parse(JSON.stringify(SELECTION.capture));
  capture.turn.arguments.element = { ...element, attributes: { "data-webtasks-id": "u1", ...element.attributes } };
  return { ...SELECTION, options, privacy, capture };
}

test("a private element's value is masked in the step's turn: Type's text, Select's value and option text", () => {
  const secret = "Pw0rd-Zebra-7731";
  const options = [{ value: "m", text: "Medium" }, { value: secret, text: `Card ${secret}` }];
  const cases = [
    ["a password (private value)", selectionOf({ tagName: "INPUT", attributes: { type: "password" } }, privacy.VALUE)],
    ["a data-private subtree", selectionOf({ tagName: "INPUT", attributes: { type: "text" } }, privacy.SUBTREE)],
    ["a private select", selectionOf({ tagName: "SELECT", attributes: {} }, privacy.SUBTREE, options)],
    ["an unmeasured level", selectionOf({ tagName: "INPUT", attributes: { type: "text" } }, undefined)],
    ["a password by its attributes", selectionOf({ tagName: "INPUT", attributes: { type: " PassWord" } }, privacy.NONE)],
  ];
  for (const [what, selection] of cases) {
    assert.equal(step.isPrivateSelection(selection), true, what);
    const typed = step.stepCapture(selection, "type", secret);
    assert.equal(typed.turn.arguments.text, privacy.MASK, what);
    const chosen = step.stepCapture(selection, "select", secret);
    assert.equal(chosen.turn.arguments.value, privacy.MASK, what);
    for (const capture of [typed, chosen]) assert.ok(!JSON.stringify(capture).includes(secret), `${what}: ${JSON.stringify(capture)}`);
    if (selection.options === options) assert.equal(chosen.turn.arguments.properties.optionText, privacy.MASK);
    assert.equal(step.stepCapture(selection, "select", "").turn.arguments.value, "", `${what}: nothing chosen stays ""`);
  }
  const plain = selectionOf({ tagName: "INPUT", attributes: { type: "text" } }, privacy.NONE);
  assert.equal(step.isPrivateSelection(plain), false);
  assert.equal(step.stepCapture(plain, "type", "blue shoes").turn.arguments.text, "blue shoes", "other fields keep their text");
});

test("CDP input of each operation", async () => {
  const calls = [];
  const send = async (method, params) => calls.push([method, params.type || params.text]);
  const at = { x: 5, y: 6 };
  for (const [op, value] of [["click"], ["hover"], ["type", "hi"], ["enter"], ["select", "l"], ["fake"]]) {
    calls.length = 0;
    await step.performInput(send, op, value, at);
    const expected = {
      click: [["Input.dispatchMouseEvent", "mouseMoved"], ["Input.dispatchMouseEvent", "mousePressed"], ["Input.dispatchMouseEvent", "mouseReleased"]],
      hover: [["Input.dispatchMouseEvent", "mouseMoved"]],
      type: [["Input.insertText", "hi"]],
      enter: [["Input.dispatchKeyEvent", "keyDown"], ["Input.dispatchKeyEvent", "keyUp"]],
      select: [], fake: [],
    }[op];
    assert.deepEqual(calls, expected, op);
  }
});

test("a demonstration task's session starts through the task and finishes with the confirmed description", () => {
  const session = sessions.newSession(
    { serverUrl: "http://s/", token: "t", project: "p", mode: "task", step: true, mhtml: true, demonstration_task: "42", task_description: "Find shoes" },
    { clientId: "c1", now: Date.parse("2026-11-23T14:00:00Z"), userAgent: "UA", timezoneOffsetMinutes: -60 },
  );
  assert.equal(session.demonstrationTask, 42);
  assert.equal(session.step, true);
  assert.equal(session.mhtml, true);
  assert.equal(sessions.publicState(session, {}).step, true);
  assert.deepEqual(Object.keys(sessions.demonstrationStartBody(session)).sort(),
    ["client_id", "recorder_version", "recording_start", "timezone_offset_minutes", "user_agent"]);
  assert.deepEqual(sessions.finishBody(session, Date.parse("2026-11-23T15:00:00Z")), { recording_end: "2026-11-23T15:00:00.000Z" });
  assert.equal(sessions.finishBody({ ...session, confirmedTask: "Find red shoes" }, 0).task_description, "Find red shoes");
  const plain = sessions.newSession({ serverUrl: "http://s", token: "t", project: "p", mhtml: true }, { clientId: "c2", now: 0 });
  assert.equal(plain.mhtml, false, "MHTML snapshots only in step mode");
  assert.equal(plain.demonstrationTask, null);
});
