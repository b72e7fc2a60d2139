// content/capture.js's step mode and private-regions reports, in jsdom with a fake chrome.runtime (capture_page.js).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { C, RECORDING, sleep, load, pointerDown, click, type } = require("./capture_page.js");

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
