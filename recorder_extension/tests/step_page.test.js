// lib/step_page.js on jsdom: step mode's part in the page (the selection's label, the element's part of a step,
// the highlight). The whole content script in step mode is in capture.test.js.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { JSDOM } = require("jsdom");

const C = require("../lib/constants.js");
const dom = require("../lib/dom.js");
const { createStepPage, stepLabel, HIGHLIGHT_ATTRIBUTE } = require("../lib/step_page.js");

const PAGE = `<!doctype html><html><body>
  <button id="buy" aria-label="Buy now">🛒</button>
  <input id="q" value="old text" placeholder="Search"><input id="empty" placeholder="Your name">
  <select id="size"><option value="m">Medium</option><option value="l">Large</option></select>
  <p id="long">${"word ".repeat(40)}</p><span>no id</span>
</body></html>`;

function setup({ enabled = true } = {}) {
  const { window } = new JSDOM(PAGE, { url: "https://shop.test/", pretendToBeVisual: true });
  const doc = window.document;
  const sent = [];
  const scrolled = [];
  window.Element.prototype.scrollIntoView = function (options) {
    scrolled.push([this.id, options]); // jsdom has no layout
  };
  let answer = { ok: true };
  const steps = createStepPage({
    window, dom, enabled: () => enabled, trusted: () => true, toTop: (x, y) => ({ x: x + 100, y: y + 10 }),
    capture: (intent, el, args) => ({ type: C.MSG.CAPTURE, turn: { intent, arguments: args }, uid: dom.ensureUid(el) }),
    options: () => ({ privateSelectors: [] }),
    send: (message, onReply) => {
      sent.push(message);
      onReply(answer);
    },
  });
  const down = (el) => {
    const event = new window.PointerEvent("pointerdown", { bubbles: true, composed: true, cancelable: true, button: 0, clientX: 5, clientY: 6 });
    window.addEventListener("pointerdown", steps.onPointer, { capture: true, once: true });
    el.dispatchEvent(event);
    return event;
  };
  return { window, doc, steps, sent, scrolled, down, byId: (id) => doc.getElementById(id), answer: (a) => (answer = a) };
}

const highlights = (doc) => doc.querySelectorAll(`[${HIGHLIGHT_ATTRIBUTE}]`).length;

test("stepLabel: tag, id and the element's name or text, whitespace folded, at most 80 characters of it", () => {
  const { byId, doc } = setup();
  assert.equal(stepLabel(byId("buy"), dom.NONE), "<button#buy> Buy now");
  assert.equal(stepLabel(byId("q"), dom.NONE), "<input#q> old text");
  assert.equal(stepLabel(byId("empty"), dom.NONE), "<input#empty> Your name");
  assert.equal(stepLabel(byId("long"), dom.NONE), `<p#long> ${"word ".repeat(16).trim()}`);
  assert.equal(stepLabel(doc.querySelector("span"), dom.NONE), "<span> no id");
  assert.equal(stepLabel(byId("q"), dom.VALUE), "<input#q> (private)");
  assert.equal(stepLabel(byId("q"), dom.SUBTREE), "<input#q> (private)");
});

test("a selecting click is stopped and sends STEP_SELECT; the element is outlined once the worker holds it", () => {
  const { doc, down, sent, byId, steps } = setup();
  const event = down(byId("size"));
  assert.ok(event.defaultPrevented);
  assert.equal(sent.length, 1);
  const [selected] = sent;
  assert.equal(selected.type, C.MSG.STEP_SELECT);
  assert.equal(selected.turn.intent, "click");
  assert.deepEqual(selected.turn.arguments.properties, { x: 105, y: 16, clientX: 105, clientY: 16, button: 0, buttons: 1, pointerType: "mouse" });
  assert.equal(selected.privacy, dom.NONE);
  assert.deepEqual(selected.options, [{ value: "m", text: "Medium", selected: true }, { value: "l", text: "Large", selected: false }]);
  assert.equal(selected.label, "<select#size> m");
  assert.equal(highlights(doc), 1);
  down(byId("buy")); // another selection replaces it
  assert.equal(highlights(doc), 1);
  steps.unhighlight();
  assert.equal(highlights(doc), 0);
});

test("no outline when the worker refuses the selection; nothing happens when not selecting", () => {
  const refused = setup();
  refused.answer({ ok: false, error: "a step is being performed" });
  refused.down(refused.byId("buy"));
  assert.equal(highlights(refused.doc), 0);
  const off = setup({ enabled: false });
  const event = off.down(off.byId("buy"));
  assert.equal(event.defaultPrevented, false);
  assert.equal(off.sent.length, 0);
});

test("STEP_EXEC: the element's part (focus and its old text selected for Type; the option for Select), its centre", () => {
  const { window, doc, down, byId, steps, scrolled } = setup();
  byId("q").getBoundingClientRect = () => ({ left: 10, top: 20, width: 100, height: 30 });
  down(byId("q"));
  assert.deepEqual(steps.exec({ op: "type", value: "new" }), { ok: true, x: 160, y: 45 });
  assert.deepEqual(scrolled, [["q", { block: "nearest", inline: "nearest" }]]);
  assert.equal(doc.activeElement, byId("q"));
  assert.equal([byId("q").selectionStart, byId("q").selectionEnd].join(), "0,8", "typing replaces the old text");
  assert.equal(highlights(doc), 0, "the outline is gone before the operation");

  const fired = [];
  const size = byId("size");
  for (const type of ["input", "change"]) size.addEventListener(type, (e) => fired.push([type, e.bubbles, size.value]));
  steps.done({ clear: true });
  down(size);
  assert.equal(steps.exec({ op: "select", value: "l" }).ok, true);
  assert.deepEqual(fired, [["input", true, "l"], ["change", true, "l"]]);
  // While the step is performed its input reaches the page.
  const click = new window.MouseEvent("pointerdown", { bubbles: true, cancelable: true, button: 0 });
  window.addEventListener("pointerdown", steps.onPointer, { capture: true, once: true });
  size.dispatchEvent(click);
  assert.equal(click.defaultPrevented, false);
});

test("STEP_EXEC for an element the page removed fails; STEP_DONE makes clicks select again", () => {
  const { down, byId, steps, sent } = setup();
  down(byId("buy"));
  byId("buy").remove();
  assert.deepEqual(steps.exec({ op: "click" }), { ok: false, error: "the selected element is no longer on the page" });
  assert.deepEqual(steps.done({}), { ok: true });
  const event = down(byId("q"));
  assert.ok(event.defaultPrevented);
  assert.equal(sent.length, 2);
});

test("STEP_DONE after an Ignore (no STEP_EXEC) takes the outline away when told to", () => {
  const { doc, down, byId, steps } = setup();
  down(byId("buy"));
  steps.done({});
  assert.equal(highlights(doc), 1);
  steps.done({ clear: true });
  assert.equal(highlights(doc), 0);
});
