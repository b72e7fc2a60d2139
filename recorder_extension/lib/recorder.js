/*
 * What the service worker does with each event, minus the browser plumbing: commands (start, stop, pause,
 * resume, status), and turning captures, navigations, tab events and chat into stored turns.
 *
 * Every turn goes to IndexedDB (with its blobs, by sha256) before the uploader sees it. Everything is
 * injected (kv stores, IndexedDB store, uploader, clock, ids, broadcast), so node tests drive it; the
 * screenshots themselves (captureVisibleTab, CDP, masking) live in lib/shots.js and the service worker.
 *
 * The class is in parts: turn and blob builders in lib/turns.js, the screenshots of held-back turns and their
 * stand-ins in lib/standins.js, load turns (committed and history-state) in lib/loads.js; those methods are
 * mixed into Recorder here. Classic scripts: load constants, clock, sessions, turns, standins, loads, then this.
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const clock = W.clock || require("./clock.js");
  const sessions = W.sessions || require("./sessions.js");
  const turns = W.turns || require("./turns.js");
  const { StandIns } = W.standins || require("./standins.js");
  const { Loads } = W.loads || require("./loads.js");
  const redact = W.redact || require("./redact.js");
  const activity = W.activity || require("./activity.js");
  const { makeBlob, validClientId, buildActionTurn, buildTabTurn, buildChatTurn, lastTabsFrom, actionTabUrl } = turns;

  const CONFIG_KEYS = ["serverUrl", "token", "project", "privateSelectors", "automation", "video"];
  const STOP_SHOTS_WAIT_MS = 10000; // stop waits this long at most for screenshots being taken (shotsInFlight)
  const FINAL_STATE_INTENTS = new Set(["textInput", "scroll"]); // sent once their state is final (see recordAction)

  // --- The recorder ----------------------------------------------------------------------------------------

  class Recorder {
    /**
     * deps: {kv (chrome.storage.local), tabsKv (chrome.storage.session), store, uploader, now() → ms,
     *        uuid(), broadcast(state), notify(), activeTabs() → [{tabId, windowId}] (focused window first),
     *        video: {start(session) , stop()}, userAgent, timezoneOffsetMinutes, log,
     *        redactor() → a lib/redact.js Redactor with the private values seen (default: none known, only
     *        secret URL parameters)}
     */
    constructor(deps) {
      const noValues = redact.createRedactor([]);
      this.d = { log: console, notify() {}, broadcast() {}, activeTabs: async () => [], redactor: async () => noValues, ...deps };
      this.nonces = new Set(); // commands taken in this worker's life (storage.onChanged and start-up may both see one)
      this.inflight = new Map(); // client_id → the promise of a capture being screenshotted and stored right now
      // Action turns whose own screenshot failed (this worker's life): the tab's last one stood in, or none.
      this.shotStats = { standIn: 0, missing: 0 };
    }

    session() {
      return this.d.kv.get(C.STORAGE.SESSION);
    }

    async state() {
      return sessions.publicState(await this.session(), await this.d.kv.get(C.STORAGE.CONFIG));
    }

    /** STATUS: {state, counters, session (no token), outbox, upload, video, activity}. */
    async status() {
      const kv = this.d.kv;
      const outbox = ((await kv.get(C.STORAGE.OUTBOX)) || []).map((s) => ({
        clientId: s.clientId, demoName: s.demoName, finishing: s.finishing, error: s.error || null,
      }));
      return {
        state: await this.state(),
        counters: { ...sessions.EMPTY_COUNTERS, ...((await kv.get(C.STORAGE.COUNTERS)) || {}) },
        session: sessions.redacted(await this.session()),
        outbox,
        upload: (await kv.get(C.STORAGE.UPLOAD)) || {},
        video: (await kv.get(C.STORAGE.VIDEO)) || null,
        activity: await this.activity(),
      };
    }

    /** The running or last stopped recording as the panel shows it (lib/activity.js), with its demo name, turns
     *  still to upload (`pending`) and whether the server has it all (`finished`). */
    async activity() {
      const found = await this.d.kv.get(C.STORAGE.ACTIVITY);
      if (!found) return null;
      const recent = ((await this.d.kv.get(C.STORAGE.UPLOAD)) || {}).recent || [];
      const finished = recent.some((s) => s.clientId === found.clientId);
      const { pending } = await this.d.store.pendingSummary(found.clientId, this.d.now());
      const demoName = await this.demoNameOf({ clientId: found.clientId, demoName: null });
      const active = await this.session();
      const named = demoName || (active && active.clientId === found.clientId ? active.demoName : null);
      return { ...found, demoName: named, pending, finished };
    }

    /** Save sign-in and other settings (only the known keys) and resolve with the whole config. */
    saveConfig(config = {}) {
      return this.d.kv.mutate(C.STORAGE.CONFIG, (saved) => {
        const next = { ...(saved || {}) };
        for (const key of CONFIG_KEYS) if (config[key] !== undefined) next[key] = config[key];
        if (next.serverUrl) next.serverUrl = String(next.serverUrl).replace(/\/+$/, "");
        return next;
      });
    }

    /** {action, config?} → {ok, demoName?, clientId?, error?}; never throws. */
    async command(action, config) {
      try {
        switch (action) {
          case "start": return await this.start(config || {});
          case "stop": return await this.stop(config || {});
          case "pause": return await this.setPaused(true);
          case "resume": return await this.setPaused(false);
          case "status": return { ok: true, ...(await this.status()) };
          default: return { ok: false, error: `unknown action ${JSON.stringify(action)}` };
        }
      } catch (error) {
        this.d.log.warn && this.d.log.warn(`command ${action} failed`, error);
        return { ok: false, error: String((error && error.message) || error) };
      }
    }

    /** Automation through chrome.storage (C.STORAGE.COMMAND): run it once per nonce, write the result. */
    async runStoredCommand(command) {
      if (!command || !command.nonce || this.nonces.has(command.nonce)) return null;
      this.nonces.add(command.nonce);
      const last = await this.d.kv.get(C.STORAGE.COMMAND_RESULT);
      if (last && last.nonce === command.nonce) return null;
      const result = { nonce: command.nonce, ...(await this.command(command.action, command.config)) };
      await this.d.kv.set(C.STORAGE.COMMAND_RESULT, result);
      return result;
    }

    async start(config) {
      if (await this.session()) throw new Error("a demonstration is already being recorded; stop it first");
      const saved = await this.saveConfig(config);
      const session = sessions.newSession({ ...saved, ...config }, {
        clientId: this.d.uuid(), now: this.d.now(), userAgent: this.d.userAgent,
        timezoneOffsetMinutes: this.d.timezoneOffsetMinutes,
      });
      await this.d.kv.set(C.STORAGE.SESSION, session);
      await this.d.kv.set(C.STORAGE.ACTIVITY, activity.started(session));
      await this.d.kv.set(C.STORAGE.COUNTERS, { ...sessions.EMPTY_COUNTERS, queued: await this.d.store.countPending() });
      const lastTabs = lastTabsFrom(await this.d.activeTabs());
      if (lastTabs) await this.d.kv.set(C.STORAGE.LAST_TAB, lastTabs);
      await this.changed();
      if (session.video && this.d.video) this.d.video.start(session).catch((e) => this.d.log.warn("video off:", e));
      await withTimeout(this.d.uploader.kick(), 5000);
      const now = await this.session();
      return { ok: true, clientId: session.clientId, demoName: (now && now.demoName) || null };
    }

    /** `taskDescription`: the task as the annotator confirmed or edited it (step mode), sent at finish. */
    async stop({ taskDescription } = {}) {
      const active = await this.session();
      if (!active) return { ok: false, error: "no demonstration is being recorded" };
      if (typeof taskDescription === "string" && taskDescription.trim()) {
        await sessions.updateSession(this.d.kv, active.clientId, (s) => ({ ...s, confirmedTask: taskDescription.trim() }));
      }
      if (this.d.video) await withTimeout(this.d.video.stop().catch(() => null), 5000);
      const stopped = await sessions.stopActive(this.d.kv, this.d.now());
      await this.d.kv.mutate(C.STORAGE.ACTIVITY, (a) =>
        a && a.clientId === stopped.clientId
          ? { ...a, stoppedAt: stopped.stoppedAt, taskDescription: stopped.confirmedTask || stopped.taskDescription }
          : a,
      );
      // Screenshots still being taken for loads and tab switches of this recording (a busy machine, the quota)
      // are awaited, for a while: released now, those turns would go without one.
      if (this.d.shotsInFlight) await withTimeout(this.d.shotsInFlight(), STOP_SHOTS_WAIT_MS);
      await this.settleWaiting(stopped);
      await this.d.store.releaseTurns(stopped.clientId);
      await this.changed();
      await withTimeout(this.d.uploader.kick({ force: true }), 5000);
      return { ok: true, clientId: stopped.clientId, demoName: await this.demoNameOf(stopped) };
    }

    /** The server's name of a session: still in the outbox, or already finished (upload.recent). */
    async demoNameOf(session) {
      const outbox = (await this.d.kv.get(C.STORAGE.OUTBOX)) || [];
      const recent = ((await this.d.kv.get(C.STORAGE.UPLOAD)) || {}).recent || [];
      const found = [...outbox, ...recent].find((s) => s.clientId === session.clientId && s.demoName);
      return (found && found.demoName) || session.demoName || null;
    }

    async setPaused(paused) {
      const active = await this.session();
      if (!active) return { ok: false, error: "no demonstration is being recorded" };
      await sessions.updateSession(this.d.kv, active.clientId, (s) => ({ ...s, paused }));
      await this.changed();
      return { ok: true, clientId: active.clientId, demoName: active.demoName };
    }

    async changed() {
      const state = await this.state();
      await this.d.broadcast(state);
      this.d.notify();
    }

    /** The active, unpaused session, or null: events outside a recording are not turns. */
    async recording() {
      const session = await this.session();
      return session && !session.paused ? session : null;
    }

    timestamp(session, eventTimeMs) {
      return clock.toRecordingSeconds(clock.eventTimeOf({ eventTime: eventTimeMs }, this.d.now()), session.startedAt);
    }

    /**
     * Store a turn and its blobs, count it, wake the uploader. A turn stored before (same client_id) is left
     * alone. Resolves with its seq, or null when it was stored before. What is stored is the turn redacted
     * (lib/redact.js: private values and secret URL parameters masked); `turn` itself is left as it is.
     */
    async addTurn(session, turn, { blobs = [], readyAt = 0 } = {}) {
      const stored = (await this.d.redactor()).turn(turn);
      const seq = await this.d.store.addTurn({ session: session.clientId, turn: stored, blobs, readyAt, now: this.d.now() });
      if (seq === null) return null;
      await this.d.kv.mutate(C.STORAGE.ACTIVITY, (a) => activity.added(a, session.clientId, stored));
      await sessions.bumpCounters(this.d.kv, { captured: 1, queued: await this.d.store.countPending() });
      this.d.notify();
      this.d.uploader.kick();
      return seq;
    }

    /**
     * Run `capture()` (screenshot and store the CAPTURE of turn `clientId`) and remember it while it runs: a
     * copy of the same capture that its page saved while going away (drainPendingCaptures) waits for it
     * instead of storing the turn first without its screenshot. Resolves with what `capture()` resolves.
     */
    capturing(clientId, capture) {
      const running = Promise.resolve().then(capture);
      if (!validClientId(clientId)) return running;
      this.inflight.set(clientId, running);
      const forget = () => this.inflight.get(clientId) === running && this.inflight.delete(clientId);
      running.then(forget, forget);
      return running;
    }

    /**
     * A CAPTURE from the content script, with the screenshot already taken (PNG bytes, private areas
     * blacked out) or null. `tabUrl`: the tab's URL when the action happened. Without a screenshot (the page
     * went away before one could be taken), the tab's last screenshot stands in when it shows the same URL
     * and is recent (BEFORE_FRAME_MAX_AGE_S, lib/standins.js): it is the state the action was taken in. Resolves with the
     * stored turn (held back for its "after" frame).
     */
    async recordAction(session, captured, { tabId, screenshot, zoomLevel, tabUrl, mhtml: rawMhtml, arrivedAt, har, domSnapshot }) {
      // Private values and secret URL parameters masked in the turn, its page and its snapshot before any blob is
      // made of them (blobs are addressed by their content's hash).
      const redactor = await this.d.redactor();
      const message = redactor.capture(captured);
      const mhtml = rawMhtml ? redactor.mhtml(rawMhtml) : rawMhtml;
      const sent = message.turn || {};
      const timestamp = this.timestamp(session, sent.eventTime);
      // A textInput or scroll shows its final state, and is sent after it (a pause, a focusout — from a
      // cross-origin frame only after the next action elsewhere): a screenshot of its page taken before its
      // message arrived (`arrivedAt`, ms) shows that state too, and may stand in; for other actions only one
      // taken at or before the action does (after it, the action's effect may show).
      const standInUntil = FINAL_STATE_INTENTS.has(sent.intent) && Number.isFinite(arrivedAt)
        ? Math.max(timestamp, this.timestamp(session, arrivedAt)) : timestamp;
      const blobs = [];
      const refs = {};
      if (screenshot) blobs.push((refs.screenshot = await makeBlob(screenshot, "image/png")));
      if (message.page && typeof message.page.html === "string" && message.page.bboxes) {
        blobs.push((refs.page = await makeBlob(message.page.html, "text/html")));
        blobs.push((refs.bboxes = await makeBlob(message.page.bboxes, "application/json")));
      }
      const frames = [];
      const before = await this.lastShot(session, tabId, timestamp);
      if (before) frames.push({ screenshot: before.sha256, timestamp: before.timestamp, label: "before" });
      const url = actionTabUrl(captured, tabUrl); // the tab's real URL: stand-ins are matched by it, in memory only
      const standIn = refs.screenshot ? null : await this.lastShotOf(session, tabId, standInUntil, url);
      const shas = Object.fromEntries(Object.entries(refs).map(([k, b]) => [k, b.sha256]));
      if (standIn) shas.screenshot = standIn.sha256; // its blob is stored (or uploaded) already
      const turn = buildActionTurn(sent, { clientId: this.d.uuid(), timestamp, tabId, zoomLevel, frames, refs: shas });
      if (mhtml) {
        // Step mode's raw snapshot of the page before the action (chrome.pageCapture), referenced by sha256.
        const raw = await makeBlob(mhtml, "multipart/related");
        blobs.push(raw);
        turn.arguments.properties = { ...(turn.arguments.properties || {}), mhtml: raw.sha256 };
      }
      // Step mode's traffic and DOM snapshot (lib/har.js: redacted there), referenced by sha256 (docs/recorder.md#raw-dump).
      if (har) blobs.push(await makeBlob(har, "application/har+json"));
      if (har) turn.har = blobs[blobs.length - 1].sha256;
      if (domSnapshot) blobs.push(await makeBlob(domSnapshot, "application/vnd.webtasks.dom-snapshot+json"));
      if (domSnapshot) turn.dom_snapshot = blobs[blobs.length - 1].sha256;
      if (standIn) this.shotStats.standIn += 1;
      else if (!refs.screenshot) {
        this.shotStats.missing += 1;
        await this.note(`no screenshot for a ${sent.intent} turn`);
      }
      const seq = await this.addTurn(session, turn, { blobs, readyAt: this.d.now() + C.TIMING.FRAME_SETTLE_MS });
      if (seq === null && turn.screenshot) await this.giveScreenshot(turn.client_id, turn.screenshot, blobs);
      if (refs.screenshot) await this.setLastShot(session, tabId, refs.screenshot.sha256, timestamp, url);
      return turn;
    }

    /** A turn stored before without a screenshot (a copy of its capture came first) gets this one while held. */
    async giveScreenshot(clientId, sha256, blobs) {
      if (blobs.length) await this.d.store.putBlobs(blobs, this.d.now());
      return this.d.store.amendHeldTurn(clientId, (r) => (r.turn.screenshot ? null : { ...r, turn: { ...r.turn, screenshot: sha256 } }), this.d.now());
    }

    /**
     * Captures a content script saved in chrome.storage.local (C.STORAGE.PENDING_CAPTURE + client_id) because
     * its page went away before the worker answered: store each once, in the session that was recording at
     * the time, and remove the keys. Resolves with how many were new. A capture the worker is still storing
     * (it did arrive, with its screenshot) is waited for, not stored again; one that never arrived has no
     * screenshot of its own (the page is gone): the tab's last screenshot of that URL stands in (recordAction).
     */
    drainPendingCaptures() {
      // One drain at a time: several frames say HELLO at once after a navigation.
      const run = (this.draining || Promise.resolve()).then(() => this.drainOnce());
      this.draining = run.catch(() => {});
      return run;
    }

    async drainOnce() {
      const all = await this.d.kv.area.get(null);
      const keys = Object.keys(all).filter((key) => key.startsWith(C.STORAGE.PENDING_CAPTURE));
      if (!keys.length) return 0;
      const candidates = await sessions.allSessions(this.d.kv);
      let stored = 0;
      const entries = keys.map((key) => [key, all[key]]).sort((a, b) => eventTime(a[1]) - eventTime(b[1]));
      for (const [key, pending] of entries) {
        const session = sessionAt(candidates, eventTime(pending));
        const message = pending && pending.message;
        const running = message && message.turn && this.inflight.get(message.turn.client_id);
        if (running) await running.catch(() => null);
        if (session && message && message.turn && !(await this.d.store.getTurn(message.turn.client_id))) {
          const tabId = Number.isInteger(pending.tabId) ? pending.tabId : -1;
          await this.recordAction(session, message, { tabId, screenshot: null, tabUrl: pending.tabUrl, arrivedAt: pending.at });
          stored += 1;
        }
        await this.d.kv.remove(key);
      }
      return stored;
    }

    /** tabcreate / tabremove / tabswitch. `hold` (ms): keep it back that long for a screenshot (tabswitch). */
    async recordTab(session, intent, { tabId, url, tabIdOrigin, eventTime, hold = 0 }) {
      const known = (await this.tabInfo(tabId)).url;
      const turn = buildTabTurn(intent, {
        clientId: this.d.uuid(), timestamp: this.timestamp(session, eventTime), tabId, url: url || known, tabIdOrigin,
      });
      await this.addTurn(session, turn, { readyAt: hold ? this.d.now() + hold : 0 });
      if (hold) await this.waitForShot(session, tabId, turn.client_id, turn.arguments.metadata.url, turn.timestamp);
      return turn;
    }

    /** A chat turn the live session stored (`turn`: {client_id, speaker, timestamp}): counted for the panel (lib/activity.js). */
    async chatSeen(turn) {
      const session = await this.session();
      if (!session || !turn || !validClientId(turn.client_id)) return { ok: false, error: "not recording" };
      const seen = { type: "chat", client_id: turn.client_id, speaker: turn.speaker, timestamp: turn.timestamp };
      await this.d.kv.mutate(C.STORAGE.ACTIVITY, (a) => activity.added(a, session.clientId, seen, { stored: false }));
      return { ok: true };
    }

    async recordChat(session, { speaker, utterance, eventTime }) {
      if (typeof utterance !== "string" || !utterance.trim()) throw new Error("an utterance is required");
      const turn = buildChatTurn({
        clientId: this.d.uuid(), timestamp: this.timestamp(session, eventTime), speaker, utterance,
      });
      await this.addTurn(session, turn);
      return turn;
    }

    // Per-tab facts in chrome.storage.session: last URL, last screenshot (the next "before" frame), pending load.

    async tabInfo(tabId) {
      const tabs = (await this.d.tabsKv.get(C.STORAGE.TABS)) || {};
      return tabs[tabId] || {};
    }

    updateTab(tabId, change) {
      return this.d.tabsKv.mutate(C.STORAGE.TABS, (tabs) => {
        const next = { ...(tabs || {}) };
        const value = change(next[tabId] || {});
        if (value) next[tabId] = value;
        else delete next[tabId];
        return next;
      });
    }

    note(message) {
      this.d.log.warn && this.d.log.warn(message);
      return sessions.bumpCounters(this.d.kv, { lastError: message, lastErrorAt: this.d.now() });
    }
  }

  /** Give Recorder the methods of its parts (non-enumerable, like its own). */
  for (const part of [StandIns, Loads]) {
    for (const name of Object.getOwnPropertyNames(part.prototype)) {
      if (name !== "constructor") Object.defineProperty(Recorder.prototype, name, Object.getOwnPropertyDescriptor(part.prototype, name));
    }
  }

  function eventTime(pending) {
    const turn = pending && pending.message && pending.message.turn;
    return Number((turn && turn.eventTime) || (pending && pending.at)) || 0;
  }

  /** The session that was recording at `ms` (the active one, or a stopped one still in the outbox). */
  function sessionAt(candidates, ms) {
    const found = candidates.filter((s) => s.startedAt <= ms && (!s.stoppedAt || ms <= s.stoppedAt));
    return found.length ? found[found.length - 1] : null;
  }

  /** Wait for `promise` at most `ms` (resolves undefined after that; the work goes on). */
  function withTimeout(promise, ms) {
    let timer;
    return Promise.race([
      Promise.resolve(promise).finally(() => clearTimeout(timer)),
      new Promise((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
  }

  const api = {
    Recorder, withTimeout, CONFIG_KEYS,
    // The builders keep their old names here (the service worker and tests use W.recorder.*).
    makeBlob, sha256Hex: turns.sha256Hex, tabLeftPage: turns.tabLeftPage, tabActivated: turns.tabActivated, lastTabsFrom,
    buildActionTurn, buildLoadTurn: turns.buildLoadTurn, buildTabTurn, buildChatTurn, isRecordableUrl: turns.isRecordableUrl,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.recorder = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
