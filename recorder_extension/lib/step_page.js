/*
 * Step mode, the content script's part (Mind2Web's tool; the state machine is lib/step.js, the worker's part
 * lib/step_worker.js). Wired by content/capture.js.
 *
 * A left click selects its element instead of acting: all of the click's pointer, mouse and click events are
 * stopped in the capture phase (before the page's listeners, and before the recording's: those are registered
 * after these), so the page never sees them. The selection is sent as {type: STEP_SELECT, turn, page, …,
 * options?, label, privacy}: the capture of the page before the step, the element's privacy level (the worker
 * masks the value a step gives a private element), a <select>'s options and a label for the side panel (no
 * value or text of a private element). Once the worker holds it, the element is outlined (an overlay div).
 * The worker then performs the step: STEP_EXEC asks for the element's part (into view, focus, a select's
 * option) and lets the step's own input through until STEP_DONE.
 *
 * Classic script: defines globalThis.WebTasks.stepPage (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const privacy = W.privacy || require("./privacy.js");
  const events = W.events || require("./events.js");

  // The events of a click, all blocked while selecting.
  const BLOCKED = ["pointerdown", "mousedown", "pointerup", "mouseup", "click", "auxclick", "dblclick", "contextmenu"];
  const HIGHLIGHT_ATTRIBUTE = "data-webtasks-highlight";

  /** What the panel names the selection by: tag, id and a text; no value or text of a private element. */
  function stepLabel(el, level) {
    const text = level === privacy.NONE
      ? (el.getAttribute("aria-label") || el.value || el.textContent || el.getAttribute("placeholder") || "").trim()
      : "(private)";
    const id = el.id ? `#${el.id}` : "";
    return `<${el.localName}${id}> ${text.replace(/\s+/g, " ").slice(0, 80)}`.trim();
  }

  /**
   * deps: {window, dom (lib/dom.js), enabled() → recording in step mode, trusted(event), toTop(x, y) → the tab
   * viewport's point, capture(intent, el, args) → a CAPTURE message of the page now, options() → dom options,
   * send(message, onReply)}.
   */
  function createStepPage({ window, dom, enabled, trusted, toTop, capture, options, send }) {
    let selected = null; // the element the annotator selected
    let passing = false; // a step is being performed; its input reaches the page
    let highlight = null;

    /** The annotator's clicks select elements instead of acting (except while a step is performed). */
    function selecting() {
      return enabled() && !passing;
    }

    /** A click in step mode selects its element; none of its events reach the page. */
    function onPointer(event) {
      if (!selecting() || !trusted(event)) return;
      events.stopEvent(event);
      if (event.type !== "pointerdown" || event.button !== 0) return;
      const el = events.targetOf(event);
      if (!el || el.nodeType !== 1) return;
      unhighlight();
      const p = toTop(event.clientX, event.clientY);
      const message = capture("click", el, {
        properties: { x: p.x, y: p.y, clientX: p.x, clientY: p.y, button: 0, buttons: 1, pointerType: event.pointerType || "mouse" },
      });
      message.type = C.MSG.STEP_SELECT;
      // The element's privacy level: the worker masks the value a step gives a private element in its turn.
      message.privacy = dom.privacyLevel(el, options());
      if (el.localName === "select") {
        // For the panel to offer (never recorded as such: a private select's chosen value and text are masked).
        message.options = Array.from(el.options, (o) => ({ value: o.value, text: o.text.trim(), selected: o.selected }));
      }
      message.label = stepLabel(el, message.privacy);
      selected = el;
      send(message, (reply) => {
        if (reply && reply.ok && selected === el) showHighlight(el);
      });
    }

    function showHighlight(el) {
      unhighlight();
      const doc = window.document;
      const box = el.getBoundingClientRect();
      highlight = doc.createElement("div");
      highlight.setAttribute(HIGHLIGHT_ATTRIBUTE, "");
      highlight.style.cssText = `position:fixed;left:${box.left - 2}px;top:${box.top - 2}px;width:${box.width + 4}px;`
        + `height:${box.height + 4}px;outline:3px solid #e5484d;pointer-events:none;z-index:2147483647;`;
      (doc.body || doc.documentElement).appendChild(highlight);
    }

    function unhighlight() {
      if (highlight) highlight.remove();
      highlight = null;
    }

    /**
     * STEP_EXEC: the worker performs a step. Let its input through, bring the element into view and do the
     * element's part (focus for Type and Press Enter, the option for Select); answer with its centre in the tab's
     * viewport.
     */
    function exec(message) {
      const el = selected;
      unhighlight();
      if (!el || !el.isConnected) return { ok: false, error: "the selected element is no longer on the page" };
      passing = true;
      el.scrollIntoView({ block: "nearest", inline: "nearest" });
      if (message.op === "type" || message.op === "enter") {
        el.focus();
        if (message.op === "type" && typeof el.select === "function" && events.isTextField(el)) el.select(); // typing replaces
      }
      if (message.op === "select") {
        el.value = message.value;
        el.dispatchEvent(new window.Event("input", { bubbles: true }));
        el.dispatchEvent(new window.Event("change", { bubbles: true }));
      }
      const box = el.getBoundingClientRect();
      const p = toTop(box.left + box.width / 2, box.top + box.height / 2);
      return { ok: true, x: p.x, y: p.y };
    }

    /** STEP_DONE: the step was performed; clicks select again. */
    function done(message) {
      passing = false;
      if (message.clear) unhighlight();
      return { ok: true };
    }

    return { onPointer, exec, done, unhighlight };
  }

  const api = { BLOCKED, HIGHLIGHT_ATTRIBUTE, stepLabel, createStepPage };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.stepPage = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
