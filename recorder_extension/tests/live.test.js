// lib/live.js (the live session protocol client) with a fake WebSocket and fake timers.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { LiveSession, sessionUrl, STATES } = require("../lib/live.js");

/** A WebSocket the test drives: it records what the client sends and lets the test open, answer and close it. */
function fakeWebSocketClass(sockets) {
  return class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.sent = [];
      this.readyState = 0;
      this.closedWith = null;
      sockets.push(this);
    }

    send(data) {
      assert.equal(this.readyState, 1, "sent on a socket that is not open");
      this.sent.push(JSON.parse(data));
    }

    close(code) {
      this.closedWith = code;
      this.readyState = 3;
    }

    // Test side.
    open() {
      this.readyState = 1;
      this.onopen();
    }

    serve(message) {
      this.onmessage({ data: JSON.stringify(message) });
    }

    drop(code = 1006, reason = "") {
      this.readyState = 3;
      this.onclose({ code, reason });
    }

    /** The server's answer to a join: welcome, the given turns, synced. */
    joinWith(turns = []) {
      this.open();
      this.serve({ type: "welcome", role: "navigator" });
      for (const turn of turns) this.serve(turn);
      this.serve({ type: "synced", last_seq: turns.length ? turns[turns.length - 1].seq : -1 });
    }
  };
}

function chatTurn(seq, clientId = `c${seq}`, utterance = `message ${seq}`) {
  return { type: "turn", seq, turn: { seq, type: "chat", client_id: clientId, speaker: "instructor", utterance } };
}

function harness(options = {}) {
  const sockets = [];
  const timers = [];
  const delivered = [];
  const states = [];
  let ids = 0;
  const session = new LiveSession({
    url: "ws://platform.test/ws/sessions/abcdefg/",
    WebSocket: fakeWebSocketClass(sockets),
    setTimeout: (fn, ms) => timers.push({ fn, ms }) - 1,
    clearTimeout: (id) => {
      if (timers[id]) timers[id].fn = () => {};
    },
    random: () => 1, // the longest delay of each backoff step
    newId: () => `id-${++ids}`,
    onMessage: (message) => delivered.push(message),
    onState: (state, detail) => states.push([state, detail]),
    ...options,
  });
  const runTimers = () => {
    const due = timers.splice(0);
    for (const timer of due) timer.fn();
    return due.map((timer) => timer.ms);
  };
  return { session, sockets, timers, delivered, states, runTimers };
}

test("sessionUrl turns the server URL into the session's socket URL", () => {
  assert.equal(sessionUrl("http://127.0.0.1:8000/", "abcdefg"), "ws://127.0.0.1:8000/ws/sessions/abcdefg/");
  assert.equal(sessionUrl("https://demos.example.org", "xyz"), "wss://demos.example.org/ws/sessions/xyz/");
});

test("joins with the token in the first message, never in the URL", () => {
  const { session, sockets } = harness({ token: "secret-token" });
  session.start();
  sockets[0].open();
  assert.equal(sockets[0].url.includes("secret"), false);
  assert.deepEqual(sockets[0].sent, [{ type: "join", after_seq: -1, token: "secret-token" }]);
});

test("a web page joins without a token (its session cookie authenticates it)", () => {
  const { session, sockets } = harness();
  session.start();
  sockets[0].open();
  assert.deepEqual(sockets[0].sent, [{ type: "join", after_seq: -1 }]);
});

test("turns are delivered once each and in order, even when one is repeated", () => {
  const { session, sockets, delivered } = harness();
  session.start();
  sockets[0].joinWith([chatTurn(0), chatTurn(1)]);
  sockets[0].serve(chatTurn(1));
  sockets[0].serve(chatTurn(2));
  const seqs = delivered.filter((m) => m.type === "turn").map((m) => m.seq);
  assert.deepEqual(seqs, [0, 1, 2]);
  assert.equal(session.state, STATES.LIVE);
});

test("after a dropped connection it reconnects with backoff and resumes after the last seq it saw", () => {
  const { session, sockets, runTimers, delivered } = harness({ backoff: { initialMs: 100, maxMs: 1000 } });
  session.start();
  sockets[0].joinWith([chatTurn(0), chatTurn(1)]);
  sockets[0].drop();
  assert.equal(session.state, STATES.RECONNECTING);
  assert.deepEqual(runTimers(), [100]);
  sockets[1].drop(); // the server is still away: the delay doubles
  assert.deepEqual(runTimers(), [200]);
  sockets[2].open();
  assert.deepEqual(sockets[2].sent, [{ type: "join", after_seq: 1 }]);
  sockets[2].serve({ type: "welcome" });
  sockets[2].serve(chatTurn(2));
  sockets[2].serve({ type: "synced", last_seq: 2 });
  assert.deepEqual(
    delivered.filter((m) => m.type === "turn").map((m) => m.seq),
    [0, 1, 2],
  );
  sockets[2].drop();
  assert.deepEqual(runTimers(), [100], "a successful join resets the backoff");
});

test("a message is sent with a client id, and re-sent after a reconnect until it is acknowledged", () => {
  const { session, sockets, runTimers } = harness();
  session.start();
  sockets[0].joinWith();
  const first = session.say("open the site");
  const second = session.say("then search");
  assert.deepEqual(sockets[0].sent.slice(1), [
    { type: "chat", client_id: first, utterance: "open the site" },
    { type: "chat", client_id: second, utterance: "then search" },
  ]);
  sockets[0].serve({ type: "ack", client_id: first, seq: 0, duplicate: false });
  sockets[0].drop();
  runTimers();
  sockets[1].joinWith();
  assert.deepEqual(sockets[1].sent, [
    { type: "join", after_seq: -1 },
    { type: "chat", client_id: second, utterance: "then search" },
  ]);
  // Its turn arriving counts as acknowledged too: nothing is re-sent after the next reconnect.
  sockets[1].serve(chatTurn(0, second, "then search"));
  sockets[1].drop();
  runTimers();
  sockets[2].joinWith();
  assert.deepEqual(sockets[2].sent, [{ type: "join", after_seq: 0 }]);
});

test("a message written while disconnected is sent once the session is live", () => {
  const { session, sockets } = harness();
  session.start();
  const id = session.say("are you there?");
  sockets[0].open();
  assert.deepEqual(sockets[0].sent, [{ type: "join", after_seq: -1 }]);
  sockets[0].serve({ type: "welcome" });
  sockets[0].serve({ type: "synced", last_seq: -1 });
  assert.deepEqual(sockets[0].sent[1], { type: "chat", client_id: id, utterance: "are you there?" });
});

test("a message the server refuses is not re-sent", () => {
  const { session, sockets, runTimers } = harness();
  session.start();
  sockets[0].joinWith();
  const id = session.say("too late");
  sockets[0].serve({ type: "error", code: "conflict", detail: "recording is recorded", client_id: id });
  sockets[0].drop();
  runTimers();
  sockets[1].joinWith();
  assert.deepEqual(sockets[1].sent, [{ type: "join", after_seq: -1 }]);
});

for (const [code, reason] of [
  [4401, "unauthenticated"],
  [4403, "forbidden"],
]) {
  test(`close code ${code} means refused: no reconnect`, () => {
    const { session, sockets, timers, states } = harness();
    session.start();
    sockets[0].open();
    sockets[0].drop(code);
    assert.equal(session.state, STATES.REFUSED);
    assert.deepEqual(states.at(-1), [STATES.REFUSED, { code, reason }]);
    assert.equal(timers.length, 0);
    assert.equal(sockets.length, 1);
  });
}

test("a joined socket closed for lost access keeps the server's reason", () => {
  const { session, sockets, timers, states } = harness();
  session.start();
  sockets[0].joinWith();
  sockets[0].drop(4403, "you no longer have access to this session");
  assert.deepEqual(states.at(-1), [
    STATES.REFUSED,
    { code: 4403, reason: "forbidden", message: "you no longer have access to this session" },
  ]);
  assert.equal(timers.length, 0);
});

test("stop closes the socket and never reconnects", () => {
  const { session, sockets, timers } = harness();
  session.start();
  sockets[0].joinWith();
  session.stop();
  assert.equal(sockets[0].closedWith, 1000);
  assert.equal(session.state, STATES.STOPPED);
  assert.equal(timers.length, 0);
  assert.equal(session.end(), false);
});

test("end asks the server to end the demonstration", () => {
  const { session, sockets } = harness();
  session.start();
  sockets[0].joinWith();
  assert.equal(session.end(), true);
  assert.deepEqual(sockets[0].sent.at(-1), { type: "end" });
});

// --- Unacknowledged messages survive closing the page; the recording clock -------------------------------------

/** A storage adapter like chrome.storage.local's: async, values copied (never shared objects). */
function fakeStorage() {
  const data = new Map();
  return {
    data,
    get: async (key) => (data.has(key) ? JSON.parse(data.get(key)) : null),
    set: async (key, value) => void data.set(key, JSON.stringify(value)),
    remove: async (key) => void data.delete(key),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test("an unacknowledged message is saved, and the next page's session sends it again until acknowledged", async () => {
  const storage = fakeStorage();
  const first = harness({ storage, storageKey: "k" });
  await first.session.start();
  first.sockets[0].joinWith();
  const id = first.session.say("open the site");
  await settle();
  assert.deepEqual([...storage.data.keys()], ["k"]);
  // The page is closed without an ack; a new page (new client, same storage) opens the session.
  const next = harness({ storage, storageKey: "k", newId: () => "fresh" });
  await next.session.start();
  next.sockets[0].joinWith();
  assert.deepEqual(next.sockets[0].sent, [
    { type: "join", after_seq: -1 },
    { type: "chat", client_id: id, utterance: "open the site" },
  ]);
  next.sockets[0].serve({ type: "ack", client_id: id, seq: 0, duplicate: false });
  await settle();
  assert.equal(storage.data.size, 0); // nothing left to resend
});

test("two pages of the same session keep each other's saved messages; closing either loses nothing", async () => {
  const storage = fakeStorage();
  const a = harness({ storage, storageKey: "k", newId: () => "from-a" });
  const b = harness({ storage, storageKey: "k", newId: () => "from-b" });
  await a.session.start();
  await b.session.start();
  a.sockets[0].joinWith();
  b.sockets[0].joinWith();
  a.session.say("first tab");
  await settle();
  b.session.say("second tab");
  await settle();
  assert.deepEqual((await storage.get("k")).unacked, [["from-a", "first tab"], ["from-b", "second tab"]]);
  // The first tab's message is stored (the second tab sees it as a turn); its own stays saved until acknowledged.
  a.sockets[0].serve({ type: "ack", client_id: "from-a", seq: 0, duplicate: false });
  await settle();
  assert.deepEqual((await storage.get("k")).unacked, [["from-b", "second tab"]]);
  // The second tab is closed unacknowledged: the next page of the session sends its message again.
  const next = harness({ storage, storageKey: "k", newId: () => "fresh" });
  await next.session.start();
  next.sockets[0].joinWith();
  assert.deepEqual(next.sockets[0].sent.slice(1), [{ type: "chat", client_id: "from-b", utterance: "second tab" }]);
  next.sockets[0].serve({ type: "ack", client_id: "from-b", seq: 1, duplicate: false });
  await settle();
  assert.equal(storage.data.size, 0);
});

test("saved messages go before messages typed while they were loading; a refused one is dropped", async () => {
  const storage = fakeStorage();
  await storage.set("k", { url: "ws://platform.test/ws/sessions/abcdefg/", unacked: [["old", "from before"]] });
  const { session, sockets } = harness({ storage, storageKey: "k" });
  const started = session.start();
  const typed = session.say("typed now");
  await started;
  sockets[0].joinWith();
  assert.deepEqual(sockets[0].sent.slice(1), [
    { type: "chat", client_id: "old", utterance: "from before" },
    { type: "chat", client_id: typed, utterance: "typed now" },
  ]);
  sockets[0].serve({ type: "error", code: "conflict", detail: "recording is recorded", client_id: "old" });
  await settle();
  assert.deepEqual((await storage.get("k")).unacked, [[typed, "typed now"]]);
});

test("messages saved for another session are not sent to this one", async () => {
  const storage = fakeStorage();
  await storage.set("k", { url: "ws://platform.test/ws/sessions/other/", unacked: [["x", "elsewhere"]] });
  const { session, sockets } = harness({ storage, storageKey: "k" });
  await session.start();
  sockets[0].joinWith();
  assert.deepEqual(sockets[0].sent, [{ type: "join", after_seq: -1 }]);
  await settle();
  assert.equal(storage.data.size, 0);
});

test("webStorage keeps JSON in a Web Storage object and survives garbage in it", () => {
  const { webStorage } = require("../lib/live.js");
  const items = new Map();
  const area = {
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => items.set(key, String(value)),
    removeItem: (key) => items.delete(key),
  };
  const storage = webStorage(area);
  storage.set("k", { url: "u", unacked: [["a", "b"]] });
  assert.deepEqual(storage.get("k"), { url: "u", unacked: [["a", "b"]] });
  items.set("k", "{not json");
  assert.equal(storage.get("k"), null);
  storage.remove("k");
  assert.equal(items.has("k"), false);
});

test("with a clock, the join and a ping every pingMs carry the recording-clock reading", () => {
  let now = 12.3456;
  const { session, sockets, timers, runTimers } = harness({ clock: () => now, pingMs: 5000 });
  session.start();
  sockets[0].joinWith();
  assert.deepEqual(sockets[0].sent, [{ type: "join", after_seq: -1, clock: 12.346 }]);
  assert.deepEqual(
    timers.map((t) => t.ms),
    [5000],
  );
  now = 17.5;
  runTimers();
  assert.deepEqual(sockets[0].sent.at(-1), { type: "ping", clock: 17.5 });
  assert.deepEqual(
    timers.map((t) => t.ms),
    [5000],
  ); // the next ping
  sockets[0].drop();
  const ran = runTimers(); // the cancelled ping does nothing; the reconnect runs
  assert.equal(sockets[0].sent.at(-1).clock, 17.5);
  assert.equal(ran.length, 2);
  assert.equal(sockets.length, 2);
});

test("without a clock nothing is pinged (web pages)", () => {
  const { session, sockets, timers } = harness();
  session.start();
  sockets[0].joinWith();
  assert.equal(timers.length, 0);
});

test("a session stopped before its saved messages were loaded neither connects nor rewrites them", async () => {
  const storage = fakeStorage();
  const saved = { url: "ws://platform.test/ws/sessions/abcdefg/", unacked: [["old", "from before"]] };
  await storage.set("k", saved);
  const { session, sockets } = harness({ storage, storageKey: "k" });
  const started = session.start();
  session.stop();
  await started;
  await settle();
  assert.equal(sockets.length, 0);
  assert.deepEqual(await storage.get("k"), saved);
});

test("chromeStorage reads and writes one key of a chrome.storage area", async () => {
  const { chromeStorage } = require("../lib/live.js");
  const items = {};
  const area = {
    get: async (key) => (key in items ? { [key]: items[key] } : {}),
    set: async (values) => void Object.assign(items, values),
    remove: async (key) => void delete items[key],
  };
  const storage = chromeStorage(area);
  assert.equal(await storage.get("k"), null);
  await storage.set("k", { url: "u", unacked: [["a", "b"]] });
  assert.deepEqual(await storage.get("k"), { url: "u", unacked: [["a", "b"]] });
  await storage.remove("k");
  assert.deepEqual(items, {});
});
