/*
 * Step mode (Mind2Web's tool), the pure part: the state machine of one step and the turn an operation makes.
 *
 * A step: the annotator clicks an element (the click is blocked by the content script, the page is unchanged)
 * → "selected" (the capture of the page BEFORE the step, taken at that click, waits here) → the side panel picks
 * the operation → "executing" (the worker records the turn, then performs the operation with trusted CDP input)
 * → "idle". Clicking another element while "selected" replaces the selection; nothing is selected while a step
 * is executing. Ignore drops the selection without a turn.
 *
 * Operation → turn (the contract of docs/mind2web.md "Step-mode turns"): click → click; type → textInput with
 * `text`; hover → hover; enter → submit on the element; select → change with the option's `value`; fake → click
 * with properties.fakeClick; ignore → no turn. Every turn keeps properties.stepOp, the annotator's operation.
 *
 * Privacy: the selection carries the element's privacy level as the content script measured it (lib/privacy.js:
 * NONE, VALUE or SUBTREE). The value a step gives a private element (Type's text, Select's value and option text)
 * is masked in its turn with privacy.maskValue ("********", or "" for nothing); only the trusted input that
 * performs the step gets the real value. A selection whose level is unknown counts as private, and so does an
 * element whose serialized attributes say type=password, whatever the level says.
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");
  const privacy = (root.WebTasks && root.WebTasks.privacy) || require("./privacy.js");

  const OPS = Object.freeze(["click", "type", "hover", "enter", "select", "fake", "ignore"]);
  const INTENT = Object.freeze({ click: "click", type: "textInput", hover: "hover", enter: "submit", select: "change", fake: "click" });
  const ORIGINAL_OP = Object.freeze({ click: "CLICK", type: "TYPE", hover: "HOVER", enter: "ENTER", select: "SELECT", fake: "CLICK" });
  const MAX_TEXT = 10000;

  const IDLE = Object.freeze({ phase: "idle", selection: null });

  /**
   * The next step state, or {error} when the event is not allowed now. States: {phase: "idle" | "selected" |
   * "executing", selection}. Events: {type: "select", selection} | {type: "operate", op} | {type: "done"} |
   * {type: "reset"} (recording stopped, page gone).
   */
  function reduce(state, event) {
    const current = state && state.phase ? state : IDLE;
    switch (event && event.type) {
      case "select":
        if (current.phase === "executing") return { error: "a step is being performed; wait for it" };
        if (!event.selection) return { error: "nothing selected" };
        return { phase: "selected", selection: event.selection };
      case "operate":
        if (current.phase !== "selected") return { error: "select an element on the page first" };
        if (event.op === "ignore") return IDLE;
        return { phase: "executing", selection: current.selection, op: event.op };
      case "done":
      case "reset":
        return IDLE;
      default:
        return { error: `unknown step event ${JSON.stringify(event && event.type)}` };
    }
  }

  /**
   * The selection the worker keeps from a STEP_SELECT message of frame `frameId` in `tab` ({tabId, url}): the
   * capture of the page before the step (a CAPTURE message again), the select's options, the panel's label, the
   * element's privacy level (lib/privacy.js; null, counted as private, when the message has none).
   */
  function selectionFrom(message, tab, frameId) {
    const { type, target, options, label, privacy: level, ...capture } = message;
    return {
      tabId: tab.tabId, frameId: frameId || 0, tabUrl: tab.url, capture: { ...capture, type: C.MSG.CAPTURE },
      options: Array.isArray(options) ? options : null, label: String(label || ""),
      clientId: capture.turn && capture.turn.client_id,
      privacy: Number.isInteger(level) ? level : null,
    };
  }

  /** The step state the side panel shows (STATUS.step): no page, boxes or bytes. */
  function publicState(state) {
    const s = state || IDLE;
    const sel = s.selection;
    return {
      phase: s.phase, op: s.op || null,
      selection: sel && {
        tabId: sel.tabId, frameId: sel.frameId, label: sel.label, options: sel.options,
        tagName: sel.capture.turn.arguments.element && sel.capture.turn.arguments.element.tagName,
        private: isPrivateSelection(sel),
      },
    };
  }

  /** Why `op` with `value` cannot be applied to `selection` ({element: {tagName}, options?}), or null. */
  function checkOperation(selection, op, value) {
    if (!OPS.includes(op)) return `op: expected one of ${OPS.join(", ")}`;
    if (!selection) return "select an element on the page first";
    if (op === "type") {
      if (typeof value !== "string" || !value.length) return "value: the text to type is required";
      if (value.length > MAX_TEXT) return `value: at most ${MAX_TEXT} characters`;
    }
    if (op === "select") {
      const options = Array.isArray(selection.options) ? selection.options : null;
      if (!options) return "select: the element is not a <select>";
      if (!options.some((o) => o.value === value)) return "value: not one of the select's options";
    }
    return null;
  }

  /** Whether the value a step gives the selected element must be masked in its turn (see Privacy above). */
  function isPrivateSelection(selection) {
    const level = selection ? selection.privacy : undefined;
    if (level !== privacy.NONE) return true; // VALUE, SUBTREE, or not measured
    const turn = selection.capture && selection.capture.turn;
    const element = turn && turn.arguments && turn.arguments.element;
    const type = element && element.attributes ? element.attributes.type : null;
    return typeof type === "string" && type.trim().toLowerCase() === "password";
  }

  /**
   * The CAPTURE message of the step's turn: the selection's capture (page, boxes, element, metadata of the page
   * before the step) with the operation's intent and arguments, the value masked for a private element. null for
   * ignore. `selection`: {capture, options?, privacy} as the worker keeps it.
   */
  function stepCapture(selection, op, value) {
    if (!INTENT[op]) return null;
    const copy = JSON.parse(JSON.stringify(selection.capture));
    const secret = isPrivateSelection(selection);
    const recorded = (text) => (secret ? privacy.maskValue(text) : text);
    const turn = copy.turn;
    const args = turn.arguments || {};
    const properties = { ...(args.properties || {}), stepOp: ORIGINAL_OP[op] };
    if (op === "fake") properties.fakeClick = true;
    else delete properties.fakeClick;
    const next = { metadata: args.metadata, element: args.element, properties };
    if (op === "type") next.text = recorded(value);
    if (op === "select") {
      next.value = recorded(value);
      const options = Array.isArray(selection.options) ? selection.options : [];
      const option = options.find((o) => o.value === value);
      if (option) properties.optionText = recorded(option.text);
      // The label was taken at selection ("Country"); review names a select's change by its choice too.
      if (option && !secret && turn.label) turn.label = `${turn.label}: ${option.text}`.slice(0, 200);
    }
    turn.intent = INTENT[op];
    turn.arguments = next;
    return copy;
  }

  /**
   * The values a step gives a private element (Type's text, Select's value and option text): the worker remembers
   * them to mask wherever they show up later (lib/redact.js); [] for any other element or operation.
   */
  function privateValuesOf(selection, op, value) {
    if ((op !== "type" && op !== "select") || typeof value !== "string" || !isPrivateSelection(selection)) return [];
    const options = Array.isArray(selection.options) ? selection.options : [];
    const option = op === "select" ? options.find((o) => o.value === value) : null;
    return option && option.text ? [value, option.text] : [value];
  }

  /** Does `op` need the page to act (CDP input), or is it recorded only. */
  function executes(op) {
    return op !== "fake" && op !== "ignore";
  }

  /**
   * The trusted input of an operation at `point` ({x, y}: the element's centre in the tab's viewport, CSS px),
   * sent with `send(method, params)` (chrome.debugger.sendCommand bound to the tab): a click is a move, press
   * and release; hover a move; type inserts the text into the focused field (the content script focused it and
   * selected its old text); Press Enter a key press on the focused element. Select's option is set by the
   * content script (a native <select> popup takes no synthetic pointer input); fake and ignore send nothing.
   */
  async function performInput(send, op, value, point) {
    const mouse = (type, extra = {}) => send("Input.dispatchMouseEvent", { type, x: point.x, y: point.y, ...extra });
    if (op === "click") {
      await mouse("mouseMoved");
      await mouse("mousePressed", { button: "left", buttons: 1, clickCount: 1 });
      await mouse("mouseReleased", { button: "left", buttons: 0, clickCount: 1 });
    } else if (op === "hover") {
      await mouse("mouseMoved");
    } else if (op === "type") {
      await send("Input.insertText", { text: value });
    } else if (op === "enter") {
      const key = { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
      await send("Input.dispatchKeyEvent", { type: "keyDown", text: "\r", unmodifiedText: "\r", ...key });
      await send("Input.dispatchKeyEvent", { type: "keyUp", ...key });
    }
  }

  const api = {
    performInput, OPS, INTENT, ORIGINAL_OP, IDLE, reduce, selectionFrom, publicState, checkOperation, isPrivateSelection,
    stepCapture, privateValuesOf, executes,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.step = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
