/*
 * Navigations and tabs, the service worker's listeners (webNavigation, tabs): loads, single-page-app URL changes,
 * tab creation, removal and switches made into turns by the Recorder (lib/recorder.js, lib/loads.js), and their
 * screenshots taken once the page is there.
 *
 * Events are handled one at a time, in the order they fired (onCompleted must find the load its onCommitted
 * stored); a handler may return a follow-up (a screenshot) that runs outside that order. Stop waits for the
 * follow-ups in flight (inFlight). Event times are taken when the event fires, never in the queued handler:
 * they order the turns. Loads and tab switches get their screenshot without a user gesture (spaced, quota-limited)
 * and only while the tab still shows that page; otherwise the turn waits for a stand-in (lib/standins.js).
 *
 * Classic script: defines globalThis.WebTasks.navigation (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const { isRecordableUrl, tabActivated } = W.turns || require("./turns.js");
  const { PRIORITY } = W.shots || require("./shots.js");

  const STATE_SHOT_DEADLINE_MS = 8000; // a load's or tab switch's screenshot (the turn waits LOAD_SETTLE_MS)

  /** The active tab of every window, the last focused window's first. */
  async function activeTabs(chrome) {
    const [focused] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    const all = await chrome.tabs.query({ active: true });
    const ordered = focused ? [focused, ...all.filter((tab) => tab.id !== focused.id)] : all;
    return ordered.map((tab) => ({ tabId: tab.id, windowId: tab.windowId }));
  }

  class Navigation {
    /**
     * deps: {ready (a promise of {recorder}), kv (chrome.storage.local), shotLater(tab, deadline, priority) →
     *        {png, at, url} | null (a masked spaced screenshot), painted(tabId) → settles once the tab's page has
     *        rendered a frame (or gave up), chrome (webNavigation, tabs), now() → ms, sleep(ms), log}
     */
    constructor(deps) {
      this.d = {
        chrome: root.chrome, now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        log: console, painted: async () => {}, ...deps,
      };
      this.queue = Promise.resolve(); // the tab and navigation events being handled, in order (whileRecording)
      this.followUps = new Set(); // screenshots of loads and tab switches being taken
    }

    /** Register the listeners (at the worker's top level: an event that wakes the worker must find them). */
    listen() {
      const { webNavigation, tabs } = this.d.chrome;
      webNavigation.onCommitted.addListener((details) => this.committed(details));
      webNavigation.onHistoryStateUpdated.addListener((details) => this.historyStateUpdated(details));
      webNavigation.onCompleted.addListener((details) => this.completed(details));
      tabs.onCreated.addListener((tab) => this.created(tab));
      tabs.onRemoved.addListener((tabId) => this.removed(tabId));
      tabs.onUpdated.addListener((tabId, change) => this.updated(tabId, change));
      tabs.onActivated.addListener((info) => this.activated(info));
    }

    /** Settles once every screenshot of a load or tab switch being taken now is done (stop waits for them). */
    inFlight() {
      return Promise.allSettled([...this.followUps]);
    }

    /** webNavigation.onCommitted: a main-frame navigation is a load turn. */
    committed(details) {
      if (details.frameId !== 0 || details.tabId < 0 || !isRecordableUrl(details.url)) return;
      this.whileRecording(
        (recorder, session) => recorder.recordLoad(session, details),
        (recorder) => recorder.noteDocUrl(details.tabId, details.url),
      );
    }

    /**
     * webNavigation.onHistoryStateUpdated: a single-page app's navigation (history.pushState/replaceState), with
     * no commit and no onCompleted. Its load turn gets its screenshot once the URL has been quiet for
     * HISTORY_COALESCE_MS (a burst of changes is one load).
     */
    historyStateUpdated(details) {
      if (details.frameId !== 0 || details.tabId < 0 || !isRecordableUrl(details.url)) return;
      this.whileRecording(
        async (recorder, session) => {
          const recorded = await recorder.recordHistoryState(session, details);
          if (!recorded || recorded.awaitsCommit) return null;
          return async () => {
            await this.d.sleep(C.TIMING.HISTORY_COALESCE_MS);
            const clientId = recorded.turn.client_id;
            const url = await recorder.historySettled(details.tabId, clientId, details.timeStamp);
            if (url) await this.shootLoad(recorder, session, clientId, details.tabId, url);
          };
        },
        (recorder) => recorder.noteDocUrl(details.tabId, details.url),
      );
    }

    /** webNavigation.onCompleted: the tab's load is there, its screenshot can be taken. */
    completed(details) {
      if (details.frameId !== 0 || details.tabId < 0) return;
      this.whileRecording(async (recorder, session) => {
        const clientId = await recorder.takeLoad(details.tabId);
        if (!clientId) return null;
        // The page a replaceState moved the load to while it was loading, if any (recordHistoryState).
        const url = (await recorder.waitingUrl(details.tabId, clientId)) || details.url;
        return () => this.shootLoad(recorder, session, clientId, details.tabId, url);
      });
    }

    /** Screenshot load turn `clientId` of `url` in tab `tabId` and attach it, or let it wait for a stand-in. */
    async shootLoad(recorder, session, clientId, tabId, url) {
      const tab = await this.d.chrome.tabs.get(tabId).catch(() => null);
      // Only while the tab still shows this load's page (rapid link clicks leave pages before their turn).
      const visible = tab && tab.active ? { tabId: tab.id, windowId: tab.windowId, url } : null;
      // Not before the page has painted: until then the tab may still show the previous page (paint holding).
      if (visible) await this.d.painted(tabId);
      await this.shoot(recorder, session, clientId, tabId, visible);
    }

    /**
     * Attach to turn `clientId` of tab `tabId` a screenshot of `visible` ({tabId, windowId, url}: refused if the
     * tab shows another URL then), or none (null: not visible); without one the turn waits for a stand-in.
     */
    async shoot(recorder, session, clientId, tabId, visible) {
      const shot = visible ? await this.d.shotLater(visible, this.d.now() + STATE_SHOT_DEADLINE_MS, PRIORITY.STATE) : null;
      await recorder.attachScreenshot(session, clientId, {
        tabId, png: shot && shot.png, atMs: shot && shot.at, url: shot && shot.url,
      });
    }

    created(tab) {
      const eventTime = this.d.now();
      this.whileRecording((recorder, session) =>
        recorder.recordTab(session, "tabcreate", { tabId: tab.id, url: tab.pendingUrl || tab.url, eventTime }),
      );
    }

    removed(tabId) {
      const eventTime = this.d.now();
      this.whileRecording(async (recorder, session) => {
        await recorder.recordTab(session, "tabremove", { tabId, eventTime });
        // Its load or tabswitch turns still waiting for a screenshot get their stand-in now, or none.
        await recorder.settleWaiting(session, tabId);
        await recorder.updateTab(tabId, () => null);
      });
    }

    updated(tabId, change) {
      if (change.url) this.d.ready.then(({ recorder }) => recorder.updateTab(tabId, (t) => ({ ...t, url: change.url })));
    }

    /** tabs.onActivated: a tabswitch turn from the window's previously active tab, screenshotted once shown. */
    activated({ tabId, windowId }) {
      const eventTime = this.d.now();
      let tabIdOrigin = -1;
      // Always track the active tabs (also while not recording): they are the origins of the next tabswitches.
      const swapped = this.d.kv.mutate(C.STORAGE.LAST_TAB, (last) => {
        const { origin, next } = tabActivated(last, tabId, windowId);
        tabIdOrigin = origin;
        return next;
      });
      this.whileRecording(async (recorder, session) => {
        await swapped;
        if (tabIdOrigin === tabId) return null;
        const tab = await this.d.chrome.tabs.get(tabId).catch(() => null);
        const turn = await recorder.recordTab(session, "tabswitch", {
          tabId, tabIdOrigin, url: tab && (tab.url || tab.pendingUrl), eventTime, hold: C.TIMING.LOAD_SETTLE_MS,
        });
        return async () => {
          // Only of the page switched to (url): another one is refused, and a stand-in of that page is waited for.
          const url = turn.arguments.metadata.url || undefined;
          await this.shoot(recorder, session, turn.client_id, tabId, { tabId, windowId, url });
        };
      });
    }

    /**
     * Run `fn(recorder, session)` if a demonstration is being recorded (and not paused), else `otherwise(recorder)`
     * if given, after the events before it; `fn` may return a follow-up run outside that order (tracked in
     * followUps).
     */
    whileRecording(fn, otherwise) {
      const step = this.queue.then(async () => {
        const { recorder } = await this.d.ready;
        const session = await recorder.recording();
        if (session) return fn(recorder, session);
        if (otherwise) await otherwise(recorder);
        return null;
      });
      this.queue = step.catch(() => {});
      const done = step
        .then((followUp) => typeof followUp === "function" && followUp())
        .catch((error) => this.d.log.warn("event not recorded", error));
      this.followUps.add(done);
      done.finally(() => this.followUps.delete(done));
    }
  }

  const api = { STATE_SHOT_DEADLINE_MS, activeTabs, Navigation };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.navigation = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
