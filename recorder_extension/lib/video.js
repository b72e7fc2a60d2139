/*
 * Tab video, service-worker side: tabCapture stream id → offscreen document (offscreen/offscreen.html) whose
 * MediaRecorder writes WebM chunks straight into IndexedDB (lib/store.js, same origin) and tells the service
 * worker (VIDEO_CHUNK) so the uploader sends them (PUT blob + POST /api/recordings/{name}/video/).
 *
 * Video is optional: without the tabCapture grant (the user clicked the toolbar button on that tab, or
 * headless Chromium run with --allowlisted-extension-id=<id>) `start` fails, the reason is kept in
 * C.STORAGE.VIDEO and recording goes on without video.
 *
 * Private areas: the offscreen document blacks them out of every frame before MediaRecorder sees it. It gets the
 * recorded tab's regions (`regionsOf(tabId)`: lib/regions.js, every frame of the tab) with VIDEO_START and then every
 * C.TIMING.VIDEO_REGIONS_MS (VIDEO_REGIONS) while recording; stale regions black out whole frames there.
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");
  const OFFSCREEN_URL = "offscreen/offscreen.html";

  class Video {
    constructor({ kv, store, regionsOf = null, log = console }) {
      this.kv = kv;
      this.store = store;
      this.regionsOf = regionsOf;
      this.log = log;
      this.followTimer = null;
    }

    async hasDocument() {
      if (chrome.offscreen.hasDocument) return chrome.offscreen.hasDocument();
      const contexts = await chrome.runtime.getContexts({ contextTypes: ["OFFSCREEN_DOCUMENT"] });
      return contexts.length > 0;
    }

    async ensureDocument() {
      if (await this.hasDocument()) return;
      await chrome.offscreen.createDocument({
        url: OFFSCREEN_URL,
        reasons: ["USER_MEDIA"],
        justification: "Record the demonstration's tab as WebM video",
      });
    }

    /** Start recording `tabId` (default: the active tab) for `session`. Throws when tabCapture is not granted. */
    async start(session, tabId) {
      try {
        const target = tabId || (await activeTabId());
        if (!target) throw new Error("no tab to record");
        const current = await this.kv.get(C.STORAGE.VIDEO);
        if (current && current.recording && current.session === session.clientId) return current;
        const streamId = await chrome.tabCapture.getMediaStreamId({ targetTabId: target });
        await this.ensureDocument();
        const firstIndex = (await (await this.store()).lastChunkIndex(session.clientId)) + 1;
        const regions = await this.regions(target);
        this.follow(target); // regions keep coming while the recorder starts (it waits for the tab's first frame)
        const answer = await chrome.runtime.sendMessage({
          target: C.TARGET.OFFSCREEN, type: C.MSG.VIDEO_START, streamId, session: session.clientId,
          sessionStartedAt: session.startedAt, firstIndex, timesliceMs: C.TIMING.VIDEO_TIMESLICE_MS, regions,
        });
        if (!answer || !answer.ok) throw new Error((answer && answer.error) || "the offscreen recorder did not start");
        return this.merge({ session: session.clientId, recording: true, tabId: target, startedAt: answer.startedAt, error: null });
      } catch (error) {
        this.unfollow();
        const message = String((error && error.message) || error);
        await this.merge({ session: session.clientId, recording: false, error: message });
        throw error;
      }
    }

    /** Stop the recorder; resolves once its last chunk is stored (the offscreen document answers then). */
    async stop() {
      this.unfollow();
      if (await this.hasDocument()) {
        try {
          await chrome.runtime.sendMessage({ target: C.TARGET.OFFSCREEN, type: C.MSG.VIDEO_STOP });
        } finally {
          await chrome.offscreen.closeDocument().catch(() => {});
        }
      }
      await this.merge({ recording: false });
    }

    /** The private areas of tab `tabId` now ({rects, viewport}; viewport null when unknown). */
    async regions(tabId) {
      if (!this.regionsOf) return { rects: [], viewport: null };
      try {
        return await this.regionsOf(tabId);
      } catch (error) {
        return { rects: [], viewport: null };
      }
    }

    /** Send the recorded tab's private areas to the offscreen recorder every VIDEO_REGIONS_MS (one at a time). */
    follow(tabId) {
      this.unfollow();
      let busy = false;
      const timer = setInterval(async () => {
        if (busy) return;
        busy = true;
        try {
          const regions = await this.regions(tabId);
          if (this.followTimer !== timer) return;
          await chrome.runtime.sendMessage({ target: C.TARGET.OFFSCREEN, type: C.MSG.VIDEO_REGIONS, ...regions }).catch(() => {});
        } finally {
          busy = false;
        }
      }, C.TIMING.VIDEO_REGIONS_MS);
      this.followTimer = timer;
    }

    unfollow() {
      clearInterval(this.followTimer);
      this.followTimer = null;
    }

    /** After a worker restart: follow the tab again if its video is still being recorded. */
    async resume() {
      const state = await this.kv.get(C.STORAGE.VIDEO);
      if (state && state.recording && Number.isInteger(state.tabId) && (await this.hasDocument())) this.follow(state.tabId);
    }

    /** Update the stored video state (several messages race: VIDEO_STATUS may arrive before start's answer). */
    merge(fields) {
      return this.kv.mutate(C.STORAGE.VIDEO, (state) => ({ ...(state || {}), ...fields }));
    }

    /** VIDEO_STATUS from the offscreen document (recorder ended or failed on its own). */
    status(message) {
      if (!message.recording) this.unfollow();
      return this.merge({ recording: Boolean(message.recording), error: message.error || null });
    }
  }

  /**
   * The tab to record: the last focused window's active tab if it shows a web page, else another window's active
   * web page. (An extension page — the side panel opened in a tab or window of its own, as automation does — may be
   * the last focused one; recording it would capture the panel instead of the demonstration.)
   */
  async function activeTabId() {
    const isWebPage = (tab) => Boolean(tab) && /^(https?|file):/i.test(tab.url || tab.pendingUrl || "");
    const [focused] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    if (isWebPage(focused)) return focused.id;
    const web = (await chrome.tabs.query({ active: true })).find(isWebPage);
    return (web && web.id) || (focused && focused.id);
  }

  const api = { Video, OFFSCREEN_URL };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.video = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
