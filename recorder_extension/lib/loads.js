/*
 * The Recorder's load turns (a part of its class, mixed in by lib/recorder.js): committed main-frame
 * navigations, and history.pushState/replaceState URL changes of single-page apps, coalesced per burst
 * (C.TIMING.HISTORY_COALESCE_MS). Each is held back until its screenshot or a stand-in (lib/standins.js).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const { buildLoadTurn, withoutFragment, withUrl } = W.turns || require("./turns.js");

  class Loads {
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
        const redactor = await this.d.redactor(); // the stored turn is redacted (addTurn), so is its new URL
        const amended = await this.d.store.amendHeldTurn(burst.clientId, (r) => ({ ...r, turn: redactor.turn(withUrl(r.turn, url)) }), this.d.now());
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
  }

  const api = { Loads };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.loads = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
