/*
 * The live session protocol client (README, "Live session"), shared by the side panel and the platform's session
 * pages (served to them as /static/recorder_lib/live.js).
 *
 * Classic script: extension pages and web pages load it with <script>, node tests with require. It defines
 * globalThis.WebTasks.LiveSession.
 *
 * It joins `ws(s)://<server>/ws/sessions/<demo>/` with {type: "join", after_seq, token?}, keeps the last seq it
 * saw, and after a dropped connection reconnects with exponential backoff and resumes from that seq, so every
 * turn is delivered exactly once and in order. Messages get client ids (crypto.randomUUID); a message not yet
 * acknowledged is sent again after a reconnect (the server stores it once). With a `storage` adapter the
 * unacknowledged messages also survive closing the page: they are saved on every change and sent again on the
 * next join (localStorage for web pages, chrome.storage.local for the side panel; see the adapters below).
 * Close codes 4401 / 4403 (refused) end the session client for good; the close reason, when the server gives one (a
 * joined socket whose access ended: "your account was deactivated", ...), is the refused state's `message`.
 *
 * The navigator's side panel passes `clock` (its recording-clock reading in seconds): it goes in the join and in
 * a ping every `pingMs`, so the server can timestamp chat messages on the recorder's clock.
 */
(function (root) {
  "use strict";

  const REFUSED = Object.freeze({ 4401: "unauthenticated", 4403: "forbidden" });
  const STATES = Object.freeze({
    CONNECTING: "connecting",
    LIVE: "live", // joined and caught up
    RECONNECTING: "reconnecting",
    REFUSED: "refused",
    STOPPED: "stopped",
  });

  const PING_MS = 15000;

  /** A storage adapter over a Web Storage object (window.localStorage): values as JSON strings. */
  function webStorage(area) {
    return {
      get: (key) => {
        try {
          return JSON.parse(area.getItem(key));
        } catch {
          return null; // unreadable: as if nothing was stored
        }
      },
      set: (key, value) => area.setItem(key, JSON.stringify(value)),
      remove: (key) => area.removeItem(key),
    };
  }

  /** A storage adapter over a chrome.storage area (chrome.storage.local in the side panel). */
  function chromeStorage(area) {
    return {
      get: async (key) => (await area.get(key))[key] || null,
      set: (key, value) => area.set({ [key]: value }),
      remove: (key) => area.remove(key),
    };
  }

  /** The socket URL of a demonstration's session on a server given as http(s)://host[:port]. */
  function sessionUrl(serverUrl, demoName) {
    const base = String(serverUrl).replace(/\/+$/, "").replace(/^http/, "ws");
    return `${base}/ws/sessions/${encodeURIComponent(demoName)}/`;
  }

  class LiveSession {
    /**
     * options: url (the socket URL), token (optional: the recorder's API token; web pages use their session
     * cookie instead), onMessage(message) for every server message delivered (turns once each, in order),
     * onState(state, detail); storage (an adapter {get, set, remove}, sync or async) and storageKey, to keep
     * unacknowledged messages across page loads; clock() (the recording-clock reading in seconds, sent in join
     * and pings) and pingMs; and for tests: WebSocket, setTimeout, clearTimeout, random, newId,
     * backoff {initialMs, maxMs}.
     */
    constructor(options) {
      this.url = options.url;
      this.token = options.token || null;
      this.onMessage = options.onMessage || (() => {});
      this.onState = options.onState || (() => {});
      this.WebSocket = options.WebSocket || root.WebSocket;
      this.setTimeout = options.setTimeout || root.setTimeout.bind(root);
      this.clearTimeout = options.clearTimeout || root.clearTimeout.bind(root);
      this.random = options.random || Math.random;
      this.newId = options.newId || (() => root.crypto.randomUUID());
      this.backoff = { initialMs: 500, maxMs: 15000, ...(options.backoff || {}) };
      this.storage = options.storage || null;
      this.storageKey = options.storageKey || `webtasks.live.unacked:${this.url}`;
      this.clock = options.clock || null;
      this.pingMs = options.pingMs || PING_MS;
      this.pingTimer = null;
      this.lastSeq = -1;
      this.unacked = new Map(); // client id → utterance, in sending order
      this.settled = new Set(); // client ids stored or refused: dropped from the saved entry too
      this.attempt = 0;
      this.state = null;
      this.socket = null;
      this.timer = null;
      this.welcome = null;
    }

    /** Connect (after loading the messages a closed page left unacknowledged); returns a promise of that. */
    start() {
      this.stopped = false;
      if (!this.storage) {
        this.connect();
        return Promise.resolve();
      }
      return this.restore().then(() => {
        if (!this.stopped && !this.socket && !this.timer) this.connect();
      });
    }

    stop() {
      this.stopped = true;
      if (this.timer) this.clearTimeout(this.timer);
      this.timer = null;
      this.stopPings();
      if (this.socket) this.socket.close(1000);
      this.socket = null;
      this.setState(STATES.STOPPED);
    }

    /** Send a chat message; returns its client id. Kept and re-sent until the server acknowledges it. */
    say(utterance) {
      const clientId = this.newId();
      this.unacked.set(clientId, utterance);
      this.save();
      if (this.state === STATES.LIVE) this.sendChat(clientId, utterance);
      return clientId;
    }

    /** Ask the server to end the demonstration (finish the recording). */
    end() {
      return this.send({ type: "end" });
    }

    // --- Internals ----------------------------------------------------------------------------------------

    /** Take the unacknowledged messages saved for this session, oldest first, before any typed meanwhile. */
    async restore() {
      let saved = null;
      try {
        saved = await this.storage.get(this.storageKey);
      } catch {
        saved = null; // storage unavailable: the messages in memory still work
      }
      if (this.stopped) return; // replaced meanwhile (the panel moved to another recording): leave the entry alone
      const entries = saved && saved.url === this.url && Array.isArray(saved.unacked) ? saved.unacked : [];
      const typed = [...this.unacked];
      this.unacked = new Map();
      for (const entry of [...entries, ...typed]) {
        if (Array.isArray(entry) && typeof entry[0] === "string" && typeof entry[1] === "string") {
          this.unacked.set(entry[0], entry[1]);
        }
      }
      this.save();
    }

    /**
     * Save the unacknowledged messages (nothing left: the entry is removed). Another page of the same session
     * (a second tab) shares the entry: its messages are kept, except those this page saw settled, so closing
     * either page loses nothing (whichever page opens next sends them all; the server stores each once).
     */
    save() {
      if (!this.storage) return;
      const write = async () => {
        let saved = null;
        try {
          saved = await this.storage.get(this.storageKey);
        } catch {
          saved = null;
        }
        const others = (saved && saved.url === this.url && Array.isArray(saved.unacked) ? saved.unacked : []).filter(
          (entry) => Array.isArray(entry) && !this.unacked.has(entry[0]) && !this.settled.has(entry[0]),
        );
        const entries = [...others, ...this.unacked];
        return entries.length
          ? this.storage.set(this.storageKey, { url: this.url, unacked: entries })
          : this.storage.remove(this.storageKey);
      };
      // Writes go one after another, so an older (async) write never lands after a newer one.
      this.saving = Promise.resolve(this.saving)
        .then(write)
        .catch(() => {});
    }

    /** ``clientId`` needs no (re)sending any more: stored (acknowledged, or seen as a turn) or refused. */
    acknowledged(clientId) {
      this.settled.add(clientId);
      if (this.unacked.delete(clientId)) this.save();
    }

    reading() {
      const value = this.clock ? Number(this.clock()) : NaN;
      return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) / 1000 : null;
    }

    schedulePing() {
      this.stopPings();
      if (!this.clock) return;
      this.pingTimer = this.setTimeout(() => {
        this.pingTimer = null;
        const clock = this.reading();
        if (this.send(clock === null ? { type: "ping" } : { type: "ping", clock })) this.schedulePing();
      }, this.pingMs);
    }

    stopPings() {
      if (this.pingTimer) this.clearTimeout(this.pingTimer);
      this.pingTimer = null;
    }

    connect() {
      this.timer = null;
      this.setState(this.attempt ? STATES.RECONNECTING : STATES.CONNECTING);
      const socket = new this.WebSocket(this.url);
      this.socket = socket;
      socket.onopen = () => {
        const join = { type: "join", after_seq: this.lastSeq };
        if (this.token) join.token = this.token;
        const clock = this.reading();
        if (clock !== null) join.clock = clock;
        socket.send(JSON.stringify(join));
      };
      socket.onmessage = (event) => {
        if (socket === this.socket) this.receive(JSON.parse(event.data));
      };
      socket.onclose = (event) => {
        if (socket === this.socket) this.closed(event.code, event.reason);
      };
      socket.onerror = () => {}; // a close event always follows
    }

    receive(message) {
      switch (message.type) {
        case "welcome":
          this.welcome = message;
          break;
        case "turn":
          if (message.seq <= this.lastSeq) return; // already delivered (never twice)
          this.lastSeq = message.seq;
          if (message.turn && message.turn.client_id) this.acknowledged(message.turn.client_id);
          break;
        case "synced":
          this.attempt = 0;
          this.setState(STATES.LIVE);
          for (const [clientId, utterance] of this.unacked) this.sendChat(clientId, utterance);
          this.schedulePing();
          break;
        case "ack":
          this.acknowledged(message.client_id);
          break;
        case "error":
          // The server refused this message for good (invalid, conflicting, recording finished): stop resending.
          if (message.client_id) this.acknowledged(message.client_id);
          break;
        default:
          break;
      }
      this.onMessage(message);
    }

    closed(code, message = "") {
      this.socket = null;
      this.stopPings();
      if (this.stopped) return;
      if (REFUSED[code]) {
        this.stopped = true;
        const detail = { code, reason: REFUSED[code] };
        if (message) detail.message = message;
        this.setState(STATES.REFUSED, detail);
        return;
      }
      const ceiling = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** this.attempt);
      const delay = Math.round(ceiling * (0.5 + this.random() / 2));
      this.attempt += 1;
      this.setState(STATES.RECONNECTING, { code, delayMs: delay });
      this.timer = this.setTimeout(() => this.connect(), delay);
    }

    sendChat(clientId, utterance) {
      this.send({ type: "chat", client_id: clientId, utterance });
    }

    send(message) {
      const socket = this.socket;
      if (!socket || socket.readyState !== 1) return false;
      socket.send(JSON.stringify(message));
      return true;
    }

    setState(state, detail = {}) {
      if (state === this.state && state !== STATES.RECONNECTING) return;
      this.state = state;
      this.onState(state, detail);
    }
  }

  const api = { LiveSession, sessionUrl, webStorage, chromeStorage, STATES, REFUSED };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.LiveSession = api;
  if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
