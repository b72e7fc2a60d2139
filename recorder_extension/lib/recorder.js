/*
 * What the service worker does with each event, minus the browser plumbing: commands (start, stop, pause,
 * resume, status), and turning captures, navigations, tab events and chat into stored turns.
 *
 * Every turn goes to IndexedDB (with its blobs, by sha256) before the uploader sees it. Everything is
 * injected (kv stores, IndexedDB store, uploader, clock, ids, broadcast), so node tests drive it; the
 * screenshots themselves (captureVisibleTab, CDP, masking) live in lib/shots.js and the service worker.
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const clock = W.clock || require("./clock.js");
  const sessions = W.sessions || require("./sessions.js");

  const CONFIG_KEYS = ["serverUrl", "token", "project", "privateSelectors", "automation", "video"];
  const BEFORE_FRAME_MAX_AGE_S = 60; // an older screenshot of the tab no longer shows the state before the action
  const SHOT_URLS = 4; // per tab, the last screenshot of each of this many URLs is kept (stand-ins)

  // --- Blobs ---------------------------------------------------------------------------------------------

  async function sha256Hex(bytes) {
    const digest = await root.crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** A content-addressed blob {sha256, bytes (ArrayBuffer), mediaType} of bytes, a string (UTF-8) or JSON. */
  async function makeBlob(content, mediaType) {
    let bytes = content;
    if (typeof content === "string") bytes = new TextEncoder().encode(content);
    else if (!(content instanceof ArrayBuffer) && !ArrayBuffer.isView(content)) {
      bytes = new TextEncoder().encode(JSON.stringify(content));
    }
    const buffer = bytes instanceof ArrayBuffer ? bytes : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    return { sha256: await sha256Hex(buffer), bytes: buffer, mediaType };
  }

  // --- Turns (server shape: see README "Recording ingest") -------------------------------------------------

  function validClientId(id) {
    return typeof id === "string" && id.length >= 1 && id.length <= 64;
  }

  /** A browser action from the content script, completed by the service worker. */
  function buildActionTurn(sent, { clientId, timestamp, tabId, zoomLevel, refs = {}, frames = [] }) {
    const args = sent.arguments && typeof sent.arguments === "object" ? sent.arguments : {};
    const metadata = { ...(args.metadata || {}), tabId };
    if (typeof metadata.url !== "string") metadata.url = "";
    if (typeof zoomLevel === "number" && Number.isFinite(zoomLevel)) metadata.zoomLevel = zoomLevel;
    const turn = {
      client_id: validClientId(sent.client_id) ? sent.client_id : clientId,
      type: "browser",
      timestamp,
      intent: sent.intent,
      arguments: { ...args, metadata },
    };
    for (const key of ["screenshot", "page", "bboxes"]) if (refs[key]) turn[key] = refs[key];
    if (frames.length) turn.frames = frames;
    return turn;
  }

  function buildLoadTurn(details, { clientId, timestamp }) {
    const properties = {
      url: details.url,
      transitionType: details.transitionType || "link",
      transitionQualifiers: Array.isArray(details.transitionQualifiers) ? details.transitionQualifiers : [],
      tabId: details.tabId,
    };
    return {
      client_id: clientId, type: "browser", timestamp, intent: "load",
      arguments: { metadata: { url: details.url, tabId: details.tabId }, properties },
    };
  }

  /** tabcreate / tabremove / tabswitch (`tabIdOrigin` only for tabswitch). */
  function buildTabTurn(intent, { clientId, timestamp, tabId, url, tabIdOrigin }) {
    const properties = intent === "tabswitch" ? { tabId, tabIdOrigin } : { tabId };
    return {
      client_id: clientId, type: "browser", timestamp, intent,
      arguments: { metadata: { url: url || "", tabId }, properties },
    };
  }

  function buildChatTurn({ clientId, timestamp, speaker, utterance }) {
    return {
      client_id: clientId, type: "chat", timestamp,
      speaker: speaker === "instructor" ? "instructor" : "navigator", utterance: String(utterance),
    };
  }

  /**
   * A tab was activated in a window: the tabswitch origin is the tab that was active in THAT window before
   * (a person switching tabs in one window never came from a tab of another window); in a window not seen
   * yet, the last activated tab anywhere. `last` is C.STORAGE.LAST_TAB: {tabId, windowId, byWindow}.
   * Returns {origin (-1 when unknown), next (the new LAST_TAB)}.
   */
  function tabActivated(last, tabId, windowId) {
    const byWindow = { ...((last && last.byWindow) || {}) };
    const previous = windowId in byWindow ? byWindow[windowId] : last && last.tabId;
    byWindow[windowId] = tabId;
    return { origin: Number.isInteger(previous) ? previous : -1, next: { tabId, windowId, byWindow } };
  }

  /** LAST_TAB from the active tab of every window, the focused window's first. */
  function lastTabsFrom(activeTabs) {
    if (!activeTabs || !activeTabs.length) return null;
    const byWindow = {};
    for (const tab of activeTabs) byWindow[tab.windowId] = tab.tabId;
    return { tabId: activeTabs[0].tabId, windowId: activeTabs[0].windowId, byWindow };
  }

  /** Only http(s) and file pages are part of a demonstration (not the side panel, chrome:// or about:). */
  function isRecordableUrl(url) {
    return /^(https?|file):/i.test(url || "");
  }

  // --- The recorder ----------------------------------------------------------------------------------------

  class Recorder {
    /**
     * deps: {kv (chrome.storage.local), tabsKv (chrome.storage.session), store, uploader, now() → ms,
     *        uuid(), broadcast(state), notify(), activeTabs() → [{tabId, windowId}] (focused window first),
     *        video: {start(session) , stop()}, userAgent, timezoneOffsetMinutes, log}
     */
    constructor(deps) {
      this.d = { log: console, notify() {}, broadcast() {}, activeTabs: async () => [], ...deps };
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

    /** STATUS: {state, counters, session (no token), outbox, upload, video}. */
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
      };
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
          case "stop": return await this.stop();
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
      await this.d.kv.set(C.STORAGE.COUNTERS, { ...sessions.EMPTY_COUNTERS, queued: await this.d.store.countPending() });
      const lastTabs = lastTabsFrom(await this.d.activeTabs());
      if (lastTabs) await this.d.kv.set(C.STORAGE.LAST_TAB, lastTabs);
      await this.changed();
      if (session.video && this.d.video) this.d.video.start(session).catch((e) => this.d.log.warn("video off:", e));
      await withTimeout(this.d.uploader.kick(), 5000);
      const now = await this.session();
      return { ok: true, clientId: session.clientId, demoName: (now && now.demoName) || null };
    }

    async stop() {
      const active = await this.session();
      if (!active) return { ok: false, error: "no demonstration is being recorded" };
      if (this.d.video) await withTimeout(this.d.video.stop().catch(() => null), 5000);
      const stopped = await sessions.stopActive(this.d.kv, this.d.now());
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
     * alone. Resolves with its seq, or null when it was stored before.
     */
    async addTurn(session, turn, { blobs = [], readyAt = 0 } = {}) {
      const seq = await this.d.store.addTurn({ session: session.clientId, turn, blobs, readyAt, now: this.d.now() });
      if (seq === null) return null;
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
     * and is recent (BEFORE_FRAME_MAX_AGE_S): it is the state the action was taken in. Resolves with the
     * stored turn (held back for its "after" frame).
     */
    async recordAction(session, message, { tabId, screenshot, zoomLevel, tabUrl }) {
      const sent = message.turn || {};
      const timestamp = this.timestamp(session, sent.eventTime);
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
      const url = actionTabUrl(message, tabUrl);
      const standIn = refs.screenshot ? null : await this.lastShotOf(session, tabId, timestamp, url);
      const shas = Object.fromEntries(Object.entries(refs).map(([k, b]) => [k, b.sha256]));
      if (standIn) shas.screenshot = standIn.sha256; // its blob is stored (or uploaded) already
      const turn = buildActionTurn(sent, { clientId: this.d.uuid(), timestamp, tabId, zoomLevel, frames, refs: shas });
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
          await this.recordAction(session, message, { tabId, screenshot: null, tabUrl: pending.tabUrl });
          stored += 1;
        }
        await this.d.kv.remove(key);
      }
      return stored;
    }

    /** Attach an extra screenshot (e.g. "after") to a held-back turn. Resolves with true when attached. */
    async attachFrame(session, clientId, { tabId, png, label, atMs, url }) {
      const blob = await makeBlob(png, "image/png");
      const timestamp = clock.toRecordingSeconds(atMs, session.startedAt);
      await this.d.store.putBlobs([blob], this.d.now());
      const frame = { screenshot: blob.sha256, timestamp, label };
      const amended = await this.d.store.amendHeldTurn(clientId, (r) => {
        const frames = [...(r.turn.frames || []), frame].slice(-8);
        return { ...r, turn: { ...r.turn, frames } };
      }, this.d.now());
      await this.setLastShot(session, tabId, blob.sha256, timestamp, url);
      return Boolean(amended);
    }

    /**
     * Give a held-back turn (load, tabswitch) its own screenshot `png` (taken at `atMs` of `url`) and release it
     * for upload. Without one (the quota, or the tab left the page first), or with one of another URL than the
     * turn's page, the turn gets a stand-in (ownShotFailed) or stays held for one. Resolves with true when the
     * turn got its own screenshot.
     */
    async attachScreenshot(session, clientId, { tabId, png, atMs, url }) {
      const blob = png ? await makeBlob(png, "image/png") : null;
      if (blob) await this.d.store.putBlobs([blob], this.d.now());
      const page = ((await this.tabInfo(tabId)).waiting || {})[clientId];
      const samePage = blob && !(page && page.url && url && url !== page.url);
      const amended = samePage && (await this.d.store.amendHeldTurn(clientId, (r) => ({
        ...r, readyAt: 0, turn: { ...r.turn, screenshot: blob.sha256 },
      }), this.d.now()));
      if (amended) await this.stopWaiting(tabId, clientId);
      if (blob) await this.setLastShot(session, tabId, blob.sha256, clock.toRecordingSeconds(atMs, session.startedAt), url);
      if (!amended && page) await this.ownShotFailed(tabId, clientId);
      // Not waiting (a tab switch to a tab of unknown URL): nothing can stand in, so it goes as it is.
      else if (!amended) await this.d.store.amendHeldTurn(clientId, (r) => ({ ...r, readyAt: 0 }), this.d.now());
      this.d.uploader.kick();
      return Boolean(amended);
    }

    // Stand-ins for loads and tab switches. A held-back load or tabswitch turn is "waiting" (tab info
    // `waiting[client_id]` = {url, timestamp, session, failed, standIn}) from when it is stored: every later
    // screenshot of the same tab and URL (an action's gesture screenshot, an after-frame) is offered to it, and
    // the first one (nearest to the load) is kept as its stand-in. When its own screenshot fails, the stand-in
    // is attached and the turn released; without one yet it stays held until one is offered, the tab closes or
    // the recording stops, at most until its readyAt (LOAD_SETTLE_MS, in IndexedDB: a restarted worker keeps it).

    /** Start waiting for a screenshot of `url` for held-back turn `clientId` (taken after `timestamp`). */
    waitForShot(session, tabId, clientId, url, timestamp) {
      if (!url) return Promise.resolve();
      const until = this.d.now() + C.TIMING.LOAD_SETTLE_MS;
      return this.updateTab(tabId, (t) => {
        const now = this.d.now();
        const kept = Object.entries(t.waiting || {}).filter(([, w]) => w.until > now);
        const entry = { url, timestamp, session: session.clientId, until, failed: false, standIn: null };
        return { ...t, waiting: Object.fromEntries([...kept, [clientId, entry]]) };
      });
    }

    /** Take the waiting entry of `clientId` (tab `tabId`) out; resolves with it or null. */
    async stopWaiting(tabId, clientId) {
      let entry = null;
      await this.updateTab(tabId, (t) => {
        if (!t.waiting || !t.waiting[clientId]) return t;
        entry = t.waiting[clientId];
        const { [clientId]: _done, ...rest } = t.waiting;
        return { ...t, waiting: rest };
      });
      return entry;
    }

    /** Screenshot `sha256` of `url` in tab `tabId` at `timestamp` (s): the stand-in of the turns waiting for it. */
    async offerShot(session, tabId, sha256, timestamp, url) {
      if (!url) return;
      const give = [];
      await this.updateTab(tabId, (t) => {
        if (!t.waiting) return t;
        const waiting = { ...t.waiting };
        for (const [clientId, w] of Object.entries(waiting)) {
          if (w.session !== session.clientId || w.url !== url || timestamp < w.timestamp) continue;
          if (w.failed) {
            give.push(clientId);
            delete waiting[clientId];
          } else if (!w.standIn || timestamp < w.standIn.timestamp) {
            waiting[clientId] = { ...w, standIn: { sha256, timestamp } };
          }
        }
        return { ...t, waiting };
      });
      for (const clientId of give) await this.giveStandIn(clientId, sha256);
    }

    /** The own screenshot of waiting turn `clientId` failed: its stand-in now, else it waits for one (failed). */
    async ownShotFailed(tabId, clientId) {
      let standIn = null;
      await this.updateTab(tabId, (t) => {
        const w = (t.waiting || {})[clientId];
        if (!w) return t;
        standIn = w.standIn;
        const waiting = { ...t.waiting };
        if (standIn) delete waiting[clientId];
        else waiting[clientId] = { ...w, failed: true };
        return { ...t, waiting };
      });
      return standIn ? this.giveStandIn(clientId, standIn.sha256) : false;
    }

    /** Attach stand-in `sha256` (its blob is stored already) to held turn `clientId` and release it. */
    async giveStandIn(clientId, sha256) {
      const amended = await this.d.store.amendHeldTurn(clientId, (r) =>
        r.turn.screenshot ? null : { ...r, readyAt: 0, turn: { ...r.turn, screenshot: sha256 } }, this.d.now());
      if (!amended) return false;
      this.shotStats.standIn += 1;
      this.d.uploader.kick();
      return true;
    }

    /**
     * No screenshot can come any more for the turns waiting in tab `tabId` (closed), or in every tab (`tabId`
     * null, the recording stops): each gets its stand-in if it has one, else is released without.
     */
    async settleWaiting(session, tabId = null) {
      const tabs = (await this.d.tabsKv.get(C.STORAGE.TABS)) || {};
      const ids = tabId === null ? Object.keys(tabs) : [String(tabId)];
      for (const id of ids) {
        for (const [clientId, w] of Object.entries((tabs[id] && tabs[id].waiting) || {})) {
          if (w.session !== session.clientId) continue;
          await this.stopWaiting(id, clientId);
          if (w.standIn && (await this.giveStandIn(clientId, w.standIn.sha256))) continue;
          const released = await this.d.store.amendHeldTurn(clientId, (r) => (r.turn.screenshot ? null : { ...r, readyAt: 0 }), this.d.now());
          if (released) {
            this.shotStats.missing += 1;
            await this.note(`no screenshot for a ${released.turn.intent} turn`);
          }
        }
      }
      this.d.uploader.kick();
    }

    /**
     * A main-frame navigation (webNavigation.onCommitted). Held back until its screenshot (onCompleted) or a
     * stand-in. The tab's previous load, if its onCompleted never came (left before it finished loading), can
     * have no screenshot of its own any more.
     */
    async recordLoad(session, details) {
      const turn = buildLoadTurn(details, { clientId: this.d.uuid(), timestamp: this.timestamp(session, details.timeStamp) });
      await this.addTurn(session, turn, { readyAt: this.d.now() + C.TIMING.LOAD_SETTLE_MS });
      let previous = null;
      await this.updateTab(details.tabId, (t) => {
        previous = t.load || null;
        const burst = { clientId: turn.client_id, at: details.timeStamp };
        return { ...t, url: details.url, docUrl: details.url, burst, load: turn.client_id };
      });
      await this.waitForShot(session, details.tabId, turn.client_id, details.url, turn.timestamp);
      if (previous) await this.ownShotFailed(details.tabId, previous);
      return turn;
    }

    /**
     * The tab's document changed its URL with history.pushState/replaceState (webNavigation.onHistoryStateUpdated):
     * a single-page app's navigation, recorded as a load like a committed one. Not when only the fragment differs
     * from the tab's document URL (a replaceState of the same URL is no navigation). A change within
     * HISTORY_COALESCE_MS of the tab's previous one (history or committed) whose load turn still waits for its
     * screenshot gives that turn the new URL instead (its timestamp stays the first one's): a router's redirect
     * while the page loads, or a replaceState per keystroke, is one load of the URL it ended on.
     * Resolves with null (not a load), or {turn, awaitsCommit}: awaitsCommit when the turn is a committed load
     * still waiting for onCompleted, which takes its screenshot; otherwise the caller takes one once the URL is
     * quiet (historySettled).
     */
    async recordHistoryState(session, details) {
      const { tabId, url, timeStamp } = details;
      const info = await this.tabInfo(tabId);
      if (info.docUrl && withoutFragment(info.docUrl) === withoutFragment(url)) {
        await this.updateTab(tabId, (t) => ({ ...t, docUrl: url }));
        return null;
      }
      const burst = info.burst;
      const waiting = burst && (info.waiting || {})[burst.clientId];
      if (waiting && timeStamp - burst.at <= C.TIMING.HISTORY_COALESCE_MS) {
        const amended = await this.d.store.amendHeldTurn(burst.clientId, (r) => ({ ...r, turn: withUrl(r.turn, url) }), this.d.now());
        if (amended) {
          await this.updateTab(tabId, (t) => this.burstMoved(session, t, burst.clientId, url, timeStamp));
          return { turn: amended.turn, awaitsCommit: info.load === burst.clientId };
        }
      }
      const turn = buildLoadTurn(details, { clientId: this.d.uuid(), timestamp: this.timestamp(session, timeStamp) });
      await this.addTurn(session, turn, { readyAt: this.d.now() + C.TIMING.LOAD_SETTLE_MS });
      await this.updateTab(tabId, (t) => ({ ...t, url, docUrl: url, burst: { clientId: turn.client_id, at: timeStamp } }));
      await this.waitForShot(session, tabId, turn.client_id, url, turn.timestamp);
      return { turn, awaitsCommit: false };
    }

    /** Tab info after the URL of burst load `clientId` changed to `url` at `ms`: only screenshots from now on fit it. */
    burstMoved(session, t, clientId, url, ms) {
      const w = (t.waiting || {})[clientId];
      const waiting = w ? { ...t.waiting, [clientId]: { ...w, url, timestamp: this.timestamp(session, ms), standIn: null } } : t.waiting;
      return { ...t, url, docUrl: url, burst: { clientId, at: ms }, waiting };
    }

    /** Outside a recording, keep the tab's document URL: a replaceState of it once recording is no load. */
    noteDocUrl(tabId, url) {
      return this.updateTab(tabId, (t) => ({ ...t, docUrl: url }));
    }

    /**
     * The URL of history load `clientId` when the tab's URL has not changed since `ms` (the change that asked
     * for this screenshot was the burst's last) and the turn still waits for its screenshot; else null.
     */
    async historySettled(tabId, clientId, ms) {
      const info = await this.tabInfo(tabId);
      const w = (info.waiting || {})[clientId];
      return info.burst && info.burst.clientId === clientId && info.burst.at === ms && w ? w.url : null;
    }

    /** The page URL that waiting turn `clientId` needs a screenshot of (a committed load's, after any redirect). */
    async waitingUrl(tabId, clientId) {
      const w = ((await this.tabInfo(tabId)).waiting || {})[clientId];
      return (w && w.url) || null;
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

    /** Take the pending load turn of a tab (once). */
    async takeLoad(tabId) {
      let load = null;
      await this.updateTab(tabId, (t) => {
        load = t.load || null;
        const { load: _taken, ...rest } = t;
        return rest;
      });
      return load;
    }

    async lastShot(session, tabId, timestamp) {
      const shot = (await this.tabInfo(tabId)).lastShot;
      if (!shot || shot.session !== session.clientId) return null;
      return shot.timestamp <= timestamp && timestamp - shot.timestamp <= BEFORE_FRAME_MAX_AGE_S ? shot : null;
    }

    /** The tab's latest screenshot of `url` (the stand-in for an action of that page that has none), or null. */
    async lastShotOf(session, tabId, timestamp, url) {
      if (!url) return null;
      const shot = ((await this.tabInfo(tabId)).shotsByUrl || {})[url];
      if (!shot || shot.session !== session.clientId) return null;
      return shot.timestamp <= timestamp && timestamp - shot.timestamp <= BEFORE_FRAME_MAX_AGE_S ? shot : null;
    }

    /**
     * The tab's latest screenshot (the next action's "before" frame), and the latest one of each of the last
     * SHOT_URLS URLs (`url`: the tab's URL when it was taken; null when unknown).
     */
    setLastShot(session, tabId, sha256, timestamp, url) {
      return this.updateTab(tabId, (t) => {
        const shot = { sha256, timestamp, session: session.clientId, url: url || null };
        const next = { ...t };
        if (!(t.lastShot && t.lastShot.session === session.clientId && t.lastShot.timestamp > timestamp)) next.lastShot = shot;
        if (url) {
          const known = (t.shotsByUrl || {})[url];
          if (!(known && known.session === session.clientId && known.timestamp > timestamp)) {
            const entries = Object.entries(t.shotsByUrl || {}).filter(([key]) => key !== url);
            next.shotsByUrl = Object.fromEntries([...entries.slice(-(SHOT_URLS - 1)), [url, shot]]);
          }
        }
        return next;
      }).then(() => this.offerShot(session, tabId, sha256, timestamp, url));
    }

    note(message) {
      this.d.log.warn && this.d.log.warn(message);
      return sessions.bumpCounters(this.d.kv, { lastError: message, lastErrorAt: this.d.now() });
    }
  }

  /** The tab's URL when an action happened: given by the worker (sender.tab.url), else the captured page's URL
   *  (the top document's, unless the action was in a cross-origin frame). */
  function actionTabUrl(message, tabUrl) {
    if (typeof tabUrl === "string" && tabUrl) return tabUrl;
    const frame = message.frame || {};
    const metadata = (message.turn && message.turn.arguments && message.turn.arguments.metadata) || {};
    return !frame.crossOrigin && typeof metadata.url === "string" ? metadata.url : null;
  }

  /**
   * Whether the tab had already left the page an action was taken on when its message arrived (text flushed
   * at pagehide while the next page commits): a screenshot taken then shows the next page. Fragments ignored.
   */
  function tabLeftPage(message, tabUrl) {
    const page = actionTabUrl(message, null);
    const strip = (url) => String(url).split("#")[0];
    return Boolean(page && tabUrl && strip(page) !== strip(tabUrl));
  }

  function withoutFragment(url) {
    return String(url).split("#")[0];
  }

  /** A load turn moved to `url` (a coalesced history change). */
  function withUrl(turn, url) {
    const args = turn.arguments;
    return { ...turn, arguments: { ...args, metadata: { ...args.metadata, url }, properties: { ...args.properties, url } } };
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
    Recorder, makeBlob, sha256Hex, tabLeftPage, tabActivated, lastTabsFrom, buildActionTurn, buildLoadTurn, buildTabTurn, buildChatTurn, isRecordableUrl,
    withTimeout, CONFIG_KEYS,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.recorder = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
