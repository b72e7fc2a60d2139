// lib/events.js actionLabel on jsdom: what review names an action by (a field's accessible name, a select's
// choice, a submit's form or button), on a flight-search page shaped like real ones; never a private value.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { JSDOM } = require("jsdom");

const { actionLabel } = require("../lib/events.js");

const PAGE = `<!doctype html><html><body>
  <header><a id="home" href="/">
      Fly   <b>Cheap</b>
    </a><a id="logo" href="/"><img src="/l.png" alt="Home page"></a></header>
  <form id="search" action="/results" method="get">
    <label for="from">From (city)</label> <input id="from" name="from" value="Paris">
    <label>Destination <input id="to" name="to" autocomplete="off"></label>
    <span id="when-a">Departure</span><span id="when-b">date</span>
    <input id="when" type="date" aria-labelledby="when-a when-b">
    <input id="promo" placeholder="Promo code">
    <input id="departure_date" name="departureDate">
    <label>Country <select id="country" name="country"><option value="">--</option><option value="ca">Canada</option>
      <option value="fr" selected>France</option></select></label>
    <textarea id="notes" name="notes" title="Notes for the agent">typed notes</textarea>
    <button id="go" type="submit">  Search
      flights </button>
  </form>
  <form id="login" aria-label="Sign in">
    <label for="pw">Password <span class="hint">(8+ characters)</span></label>
    <input id="pw" type="password" name="password" value="Hunter2-Secret">
    <input type="submit" value="Log in">
  </form>
  <form id="bare" name="newsletter_signup"><select id="plan"><option>A</option><option>B</option></select></form>
  <form id="owned"><select id="size"><option>S</option></select></form>
  <button id="outside" form="owned">Pick size</button>
  <div id="editor" contenteditable="true">Draft text SECRET-DRAFT</div>
  <div id="editor2" contenteditable="true" aria-label="Message body">more text</div>
  <div data-private id="card"><label for="cc">Card number</label><input id="cc" value="4111"></div>
  <section class="secret-box"><label>Salary <select id="salary"><option value="s" selected>SALARY-99</option></select></label></section>
  <a id="long" href="/x">${"Very long link text ".repeat(10)}</a>
</body></html>`;

const OPTS = { privateSelectors: [".secret-box"] };

function page() {
  const { window } = new JSDOM(PAGE, { url: "https://flights.test/", pretendToBeVisual: true });
  return (id) => window.document.getElementById(id);
}

test("a text field is named by its label for=, its wrapping label, aria-labelledby, placeholder, then its name", () => {
  const byId = page();
  assert.equal(actionLabel(byId("from"), "click", OPTS), "From (city)", "label for=, not the value 'Paris'");
  assert.equal(actionLabel(byId("to"), "click", OPTS), "Destination");
  assert.equal(actionLabel(byId("when"), "click", OPTS), "Departure date");
  assert.equal(actionLabel(byId("promo"), "textInput", OPTS), "Promo code");
  assert.equal(actionLabel(byId("departure_date"), "click", OPTS), "departure date", "the name made readable");
  assert.equal(actionLabel(byId("notes"), "textInput", OPTS), "Notes for the agent", "title; never the text typed");
});

test("a password field's label never holds what was typed", () => {
  const byId = page();
  const pw = byId("pw");
  pw.value = "Typed-Secret-31";
  for (const intent of ["click", "textInput", "change"]) {
    const label = actionLabel(pw, intent, OPTS);
    assert.equal(label, "Password (8+ characters)");
    assert.ok(!label.includes("Secret"));
  }
});

test("a select is named by its label, its change adds the chosen option's text, not every option", () => {
  const byId = page();
  assert.equal(actionLabel(byId("country"), "change", OPTS), "Country: France");
  assert.equal(actionLabel(byId("country"), "click", OPTS), "Country");
  byId("country").value = "ca";
  assert.equal(actionLabel(byId("country"), "change", OPTS), "Country: Canada");
  assert.equal(actionLabel(byId("plan"), "change", OPTS), "plan: A", "no label: the id made readable");
});

test("a submit is named by the form's accessible name or its submit button, not its options' text", () => {
  const byId = page();
  assert.equal(actionLabel(byId("search"), "submit", OPTS), "Search flights");
  assert.equal(actionLabel(byId("login"), "submit", OPTS), "Sign in");
  assert.equal(actionLabel(byId("bare"), "submit", OPTS), "newsletter signup", "no button: the form's name");
  assert.equal(actionLabel(byId("owned"), "submit", OPTS), "Pick size", "a button outside naming the form");
});

test("links and buttons keep their text, trimmed, whitespace collapsed and capped; an image link its alt", () => {
  const byId = page();
  assert.equal(actionLabel(byId("home"), "click", OPTS), "Fly Cheap");
  assert.equal(actionLabel(byId("logo"), "click", OPTS), "Home page");
  assert.equal(actionLabel(byId("go"), "click", OPTS), "Search flights");
  const long = actionLabel(byId("long"), "click", OPTS);
  assert.equal(long.length, 80);
  assert.ok(long.endsWith("…"));
});

test("a contenteditable is named by its attributes, never by its text", () => {
  const byId = page();
  assert.equal(actionLabel(byId("editor"), "textInput", OPTS), "editor");
  assert.equal(actionLabel(byId("editor2"), "textInput", OPTS), "Message body");
});

test("a private subtree's element is '(private)'; a select under a private selector shows no choice", () => {
  const byId = page();
  assert.equal(actionLabel(byId("cc"), "click", OPTS), "(private)");
  assert.equal(actionLabel(byId("salary"), "change", OPTS), "(private)");
  assert.equal(actionLabel(byId("salary"), "change", {}), "Salary: SALARY-99", "only the configured selector hides it");
  assert.equal(actionLabel(null, "scroll", OPTS), "");
});

test("the worker keeps the label on the turn it builds, capped, and masks a private value found in it", () => {
  const turns = require("../lib/turns.js");
  const { createRedactor } = require("../lib/redact.js");
  const sent = { intent: "click", arguments: { metadata: { url: "https://flights.test/" } }, label: "x".repeat(300) };
  const turn = turns.buildActionTurn(sent, { clientId: "c1", timestamp: 1, tabId: 7 });
  assert.equal(turn.label.length, 200);
  assert.equal(turns.buildActionTurn({ ...sent, label: "" }, { clientId: "c2", timestamp: 1, tabId: 7 }).label, undefined);
  const r = createRedactor(["Hunter2-Secret"]);
  assert.equal(r.turn({ ...turn, label: "Hunter2-Secret" }).label, "********");
  assert.equal(r.turn({ ...turn, label: "Search flights" }).label, "Search flights");
});

test("step mode: a Select step's turn is named by the label taken at selection and the chosen option", () => {
  const step = require("../lib/step.js");
  const privacy = require("../lib/privacy.js");
  const turn = { client_id: "u1", type: "browser", intent: "click", label: "Size",
    arguments: { metadata: { url: "https://shop.test/" }, element: { tagName: "SELECT", attributes: {} } } };
  const options = [{ value: "s", text: "Small" }, { value: "l", text: "Large" }];
  const selection = { capture: { turn }, options, privacy: privacy.NONE };
  assert.equal(step.stepCapture(selection, "select", "l").turn.label, "Size: Large");
  assert.equal(step.stepCapture(selection, "click").turn.label, "Size");
  assert.equal(turn.label, "Size", "the selection is not changed");
  const secret = step.stepCapture({ ...selection, privacy: privacy.SUBTREE }, "select", "l");
  assert.equal(secret.turn.label, "Size", "a private select's choice is left out");
});

test("a click on a big element reads only the start of its text", () => {
  const { window } = new JSDOM(`<body><main id="m">${"<p>word word word word</p>".repeat(5000)}</main></body>`);
  const data = Object.getOwnPropertyDescriptor(window.CharacterData.prototype, "data");
  let reads = 0;
  Object.defineProperty(window.CharacterData.prototype, "data", { get() { reads += 1; return data.get.call(this); } });
  const label = actionLabel(window.document.getElementById("m"), "click", {});
  assert.equal(label.length, 80);
  assert.ok(reads < 30, `${reads} text nodes read, not the 5,000 of the page`);
});
