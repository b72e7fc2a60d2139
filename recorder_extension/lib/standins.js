/*
 * The Recorder's screenshots of held-back turns (a part of its class, mixed in by lib/recorder.js): the tab's
 * last screenshots (the next action's "before" frame, the stand-in of an action without its own), frames and
 * screenshots attached to held turns, and the stand-ins of loads and tab switches whose own screenshot failed.
 * Its methods use the Recorder's state (this.d, tabInfo/updateTab, note, shotStats).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const clock = W.clock || require("./clock.js");
  const { makeBlob } = W.turns || require("./turns.js");

  const BEFORE_FRAME_MAX_AGE_S = 60; // an older screenshot of the tab no longer shows the state before the action
  const SHOT_URLS = 4; // per tab, the last screenshot of each of this many URLs is kept (stand-ins)

  class StandIns {
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
          // A tab switched to and closed (or the recording stopped) before any screenshot of it could be taken
          // (seen: visible 0.5 s on a busy machine): it showed the page it had shown before it was hidden, so
          // the tab's last screenshot of that URL stands in.
          const earlier = (await this.isTabSwitch(clientId)) && (await this.lastShotOf(session, Number(id), w.timestamp, w.url));
          if (earlier && (await this.giveStandIn(clientId, earlier.sha256))) continue;
          const released = await this.d.store.amendHeldTurn(clientId, (r) => (r.turn.screenshot ? null : { ...r, readyAt: 0 }), this.d.now());
          if (released) {
            this.shotStats.missing += 1;
            await this.note(`no screenshot for a ${released.turn.intent} turn`);
          }
        }
      }
      this.d.uploader.kick();
    }

    async isTabSwitch(clientId) {
      const record = await this.d.store.getTurn(clientId);
      return Boolean(record && record.turn && record.turn.intent === "tabswitch");
    }

    /** The page URL that waiting turn `clientId` needs a screenshot of (a committed load's, after any redirect). */
    async waitingUrl(tabId, clientId) {
      const w = ((await this.tabInfo(tabId)).waiting || {})[clientId];
      return (w && w.url) || null;
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
  }

  const api = { StandIns, BEFORE_FRAME_MAX_AGE_S, SHOT_URLS };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.standins = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
