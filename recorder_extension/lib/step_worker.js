/*
 * Step mode, the service worker's part (Mind2Web's tool; the state machine and operation → turn are lib/step.js,
 * the page's part lib/step_page.js, the panel's sidepanel/step_panel.js).
 *
 * STEP_SELECT (a content script; the screenshot was started under the click's gesture): the selection and the
 * masked screenshot of the page before the step are kept, the selection in chrome.storage.session
 * (C.STORAGE.STEP, with the state machine's phase), the screenshot's bytes in this worker's memory (it is kept
 * alive while recording; after a restart in between the turn gets the tab's last screenshot, recordAction).
 * STEP_OPERATE (the side panel): the turn is stored first (the page before the operation), then the operation is
 * performed with trusted input: the debugger is attached to the tab, the content script places the element
 * (STEP_EXEC) and CDP input acts at its centre (step.performInput); STEP_DONE makes clicks select again.
 *
 * Classic script: defines globalThis.WebTasks.stepWorker (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const step = W.step || require("./step.js");
  const { base64ToBytes } = W.shots || require("./shots.js");

  class StepWorker {
    /**
     * deps: {ready (a promise of {recorder}), tabsKv (chrome.storage.session), shots (lib/shots.js),
     *        maskTab(png, tabId, {own, topUrl, legacy}) → masked png | null, hasPrivateFields(tabId), notify(),
     *        chrome (tabs.getZoom, tabs.sendMessage, debugger), secrets (lib/redact.js SecretStore)}
     */
    constructor(deps) {
      this.d = { notify() {}, chrome: root.chrome, ...deps };
      // The selected step's screenshot (bytes), by the selection's client_id.
      this.blobs = new Map();
    }

    /** A recording starts or stops: no step is selected or performed. */
    reset() {
      return this.d.tabsKv.set(C.STORAGE.STEP, step.IDLE);
    }

    /** STATUS.step: what the side panel shows. */
    async status() {
      return step.publicState(await this.d.tabsKv.get(C.STORAGE.STEP));
    }

    /**
     * The annotator clicked an element in step mode: keep the page before the step, ask the panel for the
     * operation. `first`: the screenshot started in the message listener (the click's gesture).
     */
    async select(message, sender, first) {
      const { recorder } = await this.d.ready;
      const session = await recorder.recording();
      if (!session || !session.step) return { ok: false, error: "not recording in step mode" };
      const tab = { tabId: sender.tab.id, windowId: sender.tab.windowId, url: sender.tab.url };
      const png = await this.d.shots.resolve(first, tab);
      // Masked like every screenshot: the selecting frame's own report, every other frame of the tab asked now.
      const own = message.regions ? { frameId: sender.frameId, report: message.regions } : null;
      const screenshot = png && (await this.d.maskTab(png, tab.tabId, { own, topUrl: tab.url, legacy: message }));
      const selection = step.selectionFrom(message, tab, sender.frameId);
      let error = null;
      await this.d.tabsKv.mutate(C.STORAGE.STEP, (current) => {
        const next = step.reduce(current, { type: "select", selection });
        if (next.error) {
          error = next.error;
          return current;
        }
        return next;
      });
      if (error) return { ok: false, error };
      this.blobs.clear();
      this.blobs.set(selection.clientId, { screenshot });
      this.d.notify();
      return { ok: true };
    }

    /**
     * The side panel chose the operation: record the turn (the page before it), then perform it with trusted input.
     * `mhtml` (base64): the page's MHTML snapshot, taken by the panel (a service worker cannot read the file-backed
     * Blob chrome.pageCapture gives it: NotFoundError) after hiding the highlight, before the operation.
     */
    async operate(recorder, { op, value, mhtml }) {
      const { tabsKv, chrome } = this.d;
      const session = await recorder.recording();
      if (!session || !session.step) return { ok: false, error: "not recording in step mode" };
      const current = (await tabsKv.get(C.STORAGE.STEP)) || step.IDLE;
      const problem = current.phase === "selected" ? step.checkOperation(current.selection, op, value) : null;
      const next = step.reduce(current, { type: "operate", op });
      if (next.error || problem) return { ok: false, error: next.error || problem };
      const selection = current.selection;
      const frame = { frameId: selection.frameId };
      await tabsKv.set(C.STORAGE.STEP, next);
      this.d.notify();
      try {
        if (op === "ignore") return { ok: true };
        // A private element's value: masked in its turn (stepCapture) and wherever it shows up later (lib/redact.js).
        if (this.d.secrets) this.d.secrets.add(step.privateValuesOf(selection, op, value));
        const capture = step.stepCapture(selection, op, value);
        const blobs = this.blobs.get(selection.clientId) || {};
        const zoomLevel = await chrome.tabs.getZoom(selection.tabId).catch(() => undefined);
        let snapshot = session.mhtml && typeof mhtml === "string" && mhtml ? base64ToBytes(mhtml) : null;
        if (snapshot && (await this.d.hasPrivateFields(selection.tabId))) {
          snapshot = null; // the MHTML would carry the private fields' values in text
          await recorder.note("MHTML snapshot not kept: the page has private fields");
        }
        const turn = await recorder.recordAction(session, capture, {
          tabId: selection.tabId, screenshot: blobs.screenshot || null, zoomLevel, tabUrl: selection.tabUrl, mhtml: snapshot,
        });
        if (step.executes(op)) await this.perform(selection, frame, op, value);
        return { ok: true, client_id: turn.client_id };
      } catch (error) {
        await recorder.note(`step not performed: ${(error && error.message) || error}`);
        return { ok: false, error: String((error && error.message) || error) };
      } finally {
        this.blobs.delete(selection.clientId);
        await tabsKv.set(C.STORAGE.STEP, step.reduce(next, { type: "done" }));
        const done = { target: C.TARGET.CONTENT, type: C.MSG.STEP_DONE, clear: true };
        await chrome.tabs.sendMessage(selection.tabId, done, frame).catch(() => {}); // a click may have left the page
        this.d.notify();
      }
    }

    /** Attach the debugger (the bar it may show moves the page first), let the content script place the element, act. */
    async perform(selection, frame, op, value) {
      const { chrome } = this.d;
      const target = { tabId: selection.tabId };
      await chrome.debugger.attach(target, "1.3");
      try {
        const exec = { target: C.TARGET.CONTENT, type: C.MSG.STEP_EXEC, op, value };
        const placed = await chrome.tabs.sendMessage(selection.tabId, exec, frame);
        if (!placed || !placed.ok) throw new Error((placed && placed.error) || "the page did not answer");
        await step.performInput((method, params) => chrome.debugger.sendCommand(target, method, params), op, value, placed);
      } finally {
        await chrome.debugger.detach(target).catch(() => {});
      }
    }
  }

  const api = { StepWorker };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.stepWorker = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
