/*
 * Screenshots for the service worker (BROWSER-NOTES.md "Capture facts").
 *
 * - With a user gesture, captureVisibleTab has no quota, but only when called synchronously inside the
 *   onMessage listener: `captureNow` is that call (the service worker calls it before any await).
 * - Without a gesture (scroll, hover, loads, after-frames, retries) it allows 2 calls per second:
 *   `captureSpaced` queues calls ≥ C.TIMING.CAPTURE_SPACING_MS apart.
 * - Last resort, `captureCdp`: chrome.debugger + Page.captureScreenshot (no quota; the browser shows a
 *   "debugging" bar while attached, so it is attached only for the one call).
 * - `mask` blacks out private areas (viewport CSS px, of every frame: lib/regions.js) before anything is stored.
 * The pure helpers (rect scaling, base64) are exported for node tests.
 */
(function (root) {
  "use strict";

  const C = (root.WebTasks && root.WebTasks.C) || require("./constants.js");
  const { scaleRects } = (root.WebTasks && root.WebTasks.regions) || require("./regions.js");
  const SPACED_FALLBACK_MS = 2000; // an action's screenshot waits this long for the quota, then CDP
  // Who gets the next quota slot: an action without a screenshot, then a page state (load, tab switch), then frames.
  const PRIORITY = Object.freeze({ ACTION: 2, STATE: 1, FRAME: 0 });

  function base64ToBytes(base64) {
    const binary = atob(base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function dataUrlToBytes(dataUrl) {
    return base64ToBytes(String(dataUrl).slice(String(dataUrl).indexOf(",") + 1));
  }

  class Shots {
    constructor({ now = () => Date.now(), sleep = defaultSleep, log = console } = {}) {
      this.now = now;
      this.sleep = sleep;
      this.log = log;
      this.lastAt = 0;
      this.waiting = []; // spaced capture requests: {tab, deadline, priority, resolve, reject, order, retried}
      this.order = 0;
      this.draining = false;
      // Diagnostics for STATUS (this worker's life only): how screenshots were obtained or missed.
      this.stats = { gesture: 0, spaced: 0, cdp: 0, failed: 0, skipped: 0, lastFailure: null };
    }

    failed(kind, error) {
      this.stats[kind] += 1;
      this.stats.lastFailure = String((error && error.message) || error);
      this.noteFailure(kind, error);
    }

    /** Keep the last few failures (of any attempt, also one a fallback made up for) for STATUS. */
    noteFailure(kind, error) {
      const text = `${kind}: ${String((error && error.message) || error)}`;
      this.stats.recentFailures = [text, ...(this.stats.recentFailures || [])].slice(0, 12);
      this.log.debug && this.log.debug(`screenshot ${text}`);
    }

    /** captureVisibleTab NOW (call synchronously in the listener). Resolves with PNG bytes. */
    captureNow(windowId) {
      const at = (this.lastAt = this.now());
      return chrome.tabs.captureVisibleTab(windowId, { format: "png" }).then((dataUrl) => {
        const bytes = dataUrlToBytes(dataUrl);
        bytes.capturedAt = at;
        return bytes;
      });
    }

    /**
     * captureVisibleTab of `tab`'s window, spaced ≥ CAPTURE_SPACING_MS from the previous capture. Waiting
     * requests go by `priority` (higher first), then in order; one still waiting at `deadline` is dropped
     * (a screenshot taken long after its moment shows something else). Fails when `tab` is not visible, or
     * when `tab.url` is given and the tab shows another URL (without using the quota).
     */
    captureSpaced(tab, deadline = Infinity, priority = PRIORITY.FRAME) {
      return new Promise((resolve, reject) => {
        this.waiting.push({ tab, deadline, priority, resolve, reject, order: this.order++, retried: false });
        this.drain();
      });
    }

    async drain() {
      if (this.draining) return;
      this.draining = true;
      try {
        while (this.waiting.length) {
          // Re-check after sleeping: a gesture capture may have been taken meanwhile (it counts for the quota).
          for (let wait; (wait = this.lastAt + C.TIMING.CAPTURE_SPACING_MS - this.now()) > 0; ) await this.sleep(wait);
          const next = this.takeNext();
          if (next) await this.captureQueued(next);
        }
      } finally {
        this.draining = false;
      }
    }

    /** The waiting request to serve now; expired ones are rejected. */
    takeNext() {
      const now = this.now();
      for (const late of this.waiting.filter((r) => r.deadline < now)) {
        late.reject(new Error("too late for this screenshot (quota backlog)"));
      }
      this.waiting = this.waiting.filter((r) => r.deadline >= now);
      this.waiting.sort((a, b) => b.priority - a.priority || a.order - b.order);
      return this.waiting.shift() || null;
    }

    async captureQueued(request) {
      try {
        const current = await chrome.tabs.get(request.tab.tabId);
        if (!current.active) throw new Error(`tab ${request.tab.tabId} is not the visible tab of its window`);
        // A screenshot for a page (a load, an action) that the tab has left meanwhile would show another page.
        if (request.tab.url && current.url !== request.tab.url) throw new Error(`tab ${request.tab.tabId} left ${request.tab.url}`);
        const png = await this.captureNow(current.windowId);
        png.capturedUrl = current.url; // what the tab showed (a link clicked meanwhile may have changed it)
        request.resolve(png);
      } catch (error) {
        if (/MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND/.test(String(error && error.message)) && !request.retried) {
          // The quota is per rolling second (gesture captures count): wait a full second, try once more.
          request.retried = true;
          this.lastAt = this.now() + 1000 - C.TIMING.CAPTURE_SPACING_MS;
          this.waiting.push(request);
        } else {
          request.reject(error);
        }
      }
    }

    /**
     * Page.captureScreenshot over chrome.debugger: no quota, works on any tab that renders. One at a time: two
     * actions falling back together would share one attachment, and the first to finish would detach the
     * debugger under the other's command ("Debugger is not attached"), losing its screenshot.
     */
    captureCdp(tabId) {
      const run = (this.cdpQueue || Promise.resolve()).then(() => this.captureCdpNow(tabId));
      this.cdpQueue = run.catch(() => {});
      return run;
    }

    async captureCdpNow(tabId) {
      const current = await chrome.tabs.get(tabId);
      const target = { tabId };
      let attached = false;
      try {
        await chrome.debugger.attach(target, "1.3");
        attached = true;
      } catch (error) {
        if (!/already attached/i.test(String(error && error.message))) throw error;
      }
      try {
        const { data } = await chrome.debugger.sendCommand(target, "Page.captureScreenshot", { format: "png" });
        const png = base64ToBytes(data);
        png.capturedUrl = current.url;
        return png;
      } finally {
        if (attached) await chrome.debugger.detach(target).catch(() => {});
      }
    }

    /**
     * The screenshot of an action: the gesture capture `first` (taken when the action's message arrived), else
     * a spaced retry, else CDP; null when all fail. A retry is refused when the tab no longer shows `tab.url`
     * (a clicked link navigated meanwhile): it would show the next page, not the state of the action.
     */
    async resolve(first, tab) {
      const samePage = (png) => {
        if (tab.url && png && png.capturedUrl && png.capturedUrl !== tab.url) {
          throw new Error(`the tab left the action's page (${png.capturedUrl})`);
        }
        return png;
      };
      const attempts = [
        ["gesture", () => first],
        ["spaced", () => this.captureSpaced(tab, this.now() + SPACED_FALLBACK_MS, PRIORITY.ACTION).then(samePage)],
        ["cdp", () => this.captureCdp(tab.tabId).then(samePage)],
      ];
      let lastError;
      for (const [kind, attempt] of attempts) {
        try {
          const png = await attempt();
          this.stats[kind] += 1;
          return png;
        } catch (error) {
          lastError = error;
          this.noteFailure(`${kind} attempt`, error);
        }
      }
      this.failed("failed", lastError);
      return null;
    }

    /**
     * A screenshot that is nice to have (after-frame, load, tab switch): spaced captureVisibleTab only, null
     * when it fails. Never CDP: its "debugging" bar would resize the page the user is working in.
     */
    async later(tab, deadline, priority = PRIORITY.FRAME) {
      try {
        const png = await this.captureSpaced(tab, deadline, priority);
        this.stats.spaced += 1;
        return png;
      } catch (error) {
        this.failed("skipped", error);
        return null;
      }
    }

    /** PNG bytes with the private rects painted black (OffscreenCanvas); the input when there is nothing to hide. */
    async mask(png, rects, viewport) {
      if (!png || !rects || !rects.length) return png;
      const bitmap = await createImageBitmap(new Blob([png], { type: "image/png" }));
      const boxes = scaleRects(rects, viewport, bitmap.width, bitmap.height);
      if (!boxes.length) return png;
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      const context = canvas.getContext("2d");
      context.drawImage(bitmap, 0, 0);
      context.fillStyle = "#000";
      for (const box of boxes) context.fillRect(box.x, box.y, box.width, box.height);
      bitmap.close();
      const blob = await canvas.convertToBlob({ type: "image/png" });
      return new Uint8Array(await blob.arrayBuffer());
    }
  }

  function defaultSleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  const api = { Shots, PRIORITY, scaleRects, base64ToBytes, dataUrlToBytes };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.shots = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
