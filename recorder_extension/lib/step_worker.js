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
 * Raw dump (deps.network, docs/recorder.md#raw-dump): from the recording's start (START, the active web tab) or the
 * first selection on, the debugger stays attached to the step's tab with the Network domain on (lib/har.js
 * NetworkLog); each step's turn gets the traffic since the step before (HAR 1.2) and the DOM snapshot before the action, not kept (nor any body) on a page with private fields.
 *
 * Classic script: defines globalThis.WebTasks.stepWorker (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const step = W.step || require("./step.js");
  const { base64ToBytes } = W.shots || require("./shots.js");
  const har = W.har || require("./har.js");

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
      this.net = null; // {tabId, log}: the tab whose traffic is recorded (deps.network)
      const events = this.d.network && this.d.chrome && this.d.chrome.debugger && this.d.chrome.debugger.onEvent;
      if (events) {
        events.addListener((source, method, params) => {
          if (this.net && source.tabId === this.net.tabId && method.startsWith("Network.")) this.net.log.event(method, params);
        });
        this.d.chrome.debugger.onDetach.addListener((source) => {
          if (this.net && source.tabId === this.net.tabId) this.net = null;
        });
      }
    }

    /** A recording starts or stops: no step is selected or performed, no traffic recorded. */
    async reset() {
      await this.stopNetwork();
      return this.d.tabsKv.set(C.STORAGE.STEP, step.IDLE);
    }

    /** Keep the debugger attached to `tabId` with the Network domain on (deps.network); the traffic from now on. One
     *  at a time: the start, the server's answer and a capture may all ask at once. */
    startNetwork(tabId) {
      const run = (this.starting || Promise.resolve()).then(() => this.attachNetwork(tabId));
      this.starting = run.catch(() => {});
      return run;
    }

    async attachNetwork(tabId) {
      if (!this.d.network || (this.net && this.net.tabId === tabId)) return;
      await this.stopNetwork();
      const { chrome } = this.d;
      const target = { tabId };
      try {
        await chrome.debugger.attach(target, "1.3");
      } catch {
        // Attached by this worker before a restart (its log lost): attach again.
        await chrome.debugger.detach(target).catch(() => {});
        await chrome.debugger.attach(target, "1.3");
      }
      const fetchBody = (requestId) => chrome.debugger.sendCommand(target, "Network.getResponseBody", { requestId });
      this.net = { tabId, log: new har.NetworkLog({ fetchBody }) };
      await chrome.debugger.sendCommand(target, "Network.enable", { maxPostDataSize: har.LIMITS.POST_DATA_BYTES });
      const tree = await chrome.debugger.sendCommand(target, "Page.getFrameTree", {}).catch(() => null);
      if (this.net && tree && tree.frameTree) this.net.log.mainFrame = tree.frameTree.frame.id;
    }

    async stopNetwork() {
      if (!this.net) return;
      const { tabId } = this.net;
      this.net = null;
      await this.d.chrome.debugger.detach({ tabId }).catch(() => {});
    }

    /**
     * The raw dump of the page before the step: {har, domSnapshot} (JSON text, or null). A page with private fields
     * keeps no DOM snapshot and no bodies, and requests it sends until the next step keep none either. `left`: the
     * tab is on another page already (its fields can no longer be asked): no bodies but the page in place's.
     */
    async rawDump(recorder, selection, isPrivate, { dom = true, left = false } = {}) {
      if (!this.net || this.net.tabId !== selection.tabId) return {};
      const redactor = this.d.secrets ? await this.d.secrets.redactor() : null;
      const send = (method, params) => this.d.chrome.debugger.sendCommand({ tabId: selection.tabId }, method, params);
      let domSnapshot = null;
      if (isPrivate) await recorder.note("DOM snapshot and bodies not kept: the page has private fields");
      else if (dom) {
        try {
          domSnapshot = JSON.stringify(await har.captureDom(send, selection.tabUrl, redactor));
        } catch (error) {
          await recorder.note(`no DOM snapshot: ${(error && error.message) || error}`);
        }
      }
      const page = this.net.log.page;
      // A navigation's own request (a form's POST) is the page left's, whatever loader it names.
      const keepBodies = left ? (r) => Boolean(page) && r.loader === page && r.type !== "Document" : !isPrivate;
      const log = await har.buildHar(this.net.log.take(), { redactor, keepBodies });
      if (!left) this.net.log.setPrivate(isPrivate); // the page in place is not the one judged

      return { har: JSON.stringify(log), domSnapshot };
    }

    /**
     * A WebLINX recording in a project that keeps traffic (session.traffic, docs/recorder.md#raw-dump): the debugger
     * follows the tab of the last action; each action turn gets the traffic since the one before, as a step's.
     */
    async actionTraffic(recorder, session, tab, left, isPrivateOf) {
      if (!session.traffic || session.step || !tab.tabId) return null;
      await this.startNetwork(tab.tabId).catch((e) => recorder.note(`traffic not recorded: ${(e && e.message) || e}`));
      if (!this.net || this.net.tabId !== tab.tabId) return null;
      const isPrivate = left || (await isPrivateOf(tab.tabId)); // a page left: its fields can no longer be asked
      const raw = await this.rawDump(recorder, { tabId: tab.tabId, tabUrl: tab.url }, isPrivate, { dom: false, left });
      return raw.har || null;
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
      await this.startNetwork(tab.tabId).catch((e) => recorder.note(`traffic not recorded: ${(e && e.message) || e}`));
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
        const traced = this.net && this.net.tabId === selection.tabId;
        const isPrivate = snapshot || traced ? await this.d.hasPrivateFields(selection.tabId) : false;
        if (snapshot && isPrivate) {
          snapshot = null; // the MHTML would carry the private fields' values in text
          await recorder.note("MHTML snapshot not kept: the page has private fields");
        }
        const raw = traced ? await this.rawDump(recorder, selection, isPrivate) : {};
        const turn = await recorder.recordAction(session, capture, {
          tabId: selection.tabId, screenshot: blobs.screenshot || null, zoomLevel, tabUrl: selection.tabUrl, mhtml: snapshot,
          har: raw.har || null, domSnapshot: raw.domSnapshot || null,
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
      const kept = this.net && this.net.tabId === selection.tabId; // attached for the traffic: stays so
      if (!kept) await chrome.debugger.attach(target, "1.3");
      try {
        const exec = { target: C.TARGET.CONTENT, type: C.MSG.STEP_EXEC, op, value };
        const placed = await chrome.tabs.sendMessage(selection.tabId, exec, frame);
        if (!placed || !placed.ok) throw new Error((placed && placed.error) || "the page did not answer");
        await step.performInput((method, params) => chrome.debugger.sendCommand(target, method, params), op, value, placed);
      } finally {
        if (!kept) await chrome.debugger.detach(target).catch(() => {});
      }
    }
  }

  const api = { StepWorker };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.stepWorker = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
