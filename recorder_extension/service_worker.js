/*
 * Service worker: one job — route, screenshot, store, upload (STYLE.md §9).
 *
 * It keeps nothing that matters in memory: the session, counters and commands live in chrome.storage.local,
 * per-tab facts in chrome.storage.session, turns and blobs in IndexedDB (lib/store.js). It is stopped when
 * idle (kept alive while recording) and restarted by the next event; the top level re-opens the store,
 * kicks the uploader, stores captures that never reached it and answers a pending automation command.
 *
 * Interfaces (keys and types in lib/constants.js):
 *   runtime messages {target: C.TARGET.SW, type}:
 *     from content scripts: CAPTURE (→ {ok, client_id} once stored), HELLO (→ {state, tabId, tabUrl, frameId});
 *     from extension pages (side panel, tests): START {config} → {ok, clientId, demoName}, STOP → {ok, demoName},
 *       PAUSE, RESUME, STATUS → {state, counters, session, outbox, upload, video, screenshots},
 *       CHAT {speaker, utterance}, UPLOAD_NOW; the same through the page bridge only with config.automation;
 *     from the offscreen document: VIDEO_CHUNK, VIDEO_STATUS.
 *     step mode (lib/step.js): STEP_SELECT from content scripts; STEP_OPERATE {op, value?} from the side panel.
 *   storage: C.STORAGE.COMMAND {action, config?, nonce} → C.STORAGE.COMMAND_RESULT {nonce, ok, error?, demoName?};
 *     C.STORAGE.PENDING_CAPTURE + client_id: captures a page left behind (stored once, then removed).
 */
importScripts(
  "lib/constants.js",
  "lib/privacy.js",
  "lib/clock.js",
  "lib/sessions.js",
  "lib/store.js",
  "lib/uploader.js",
  "lib/turns.js",
  "lib/standins.js",
  "lib/loads.js",
  "lib/recorder.js",
  "lib/regions.js",
  "lib/shots.js",
  "lib/video.js",
  "lib/step.js",
);

const W = self.WebTasks;
const C = W.C;
const UPLOAD_ALARM = "webtasks-upload";
const AFTER_FRAME_DEADLINE_MS = 1500; // from when the after-frame is asked for (AFTER_FRAME_MS after the action)
const STATE_SHOT_DEADLINE_MS = 8000; // a load's or tab switch's screenshot (the turn waits LOAD_SETTLE_MS)
const STATE = W.shots.PRIORITY.STATE;
// Messages a web page may send through the content script's page bridge only when automation is enabled
// (config.automation): without that, any site could start, stop or redirect a recording.
const AUTOMATION_TYPES = new Set([
  C.MSG.START, C.MSG.STOP, C.MSG.PAUSE, C.MSG.RESUME, C.MSG.STATUS, C.MSG.CHAT, C.MSG.UPLOAD_NOW, C.MSG.STEP_OPERATE,
]);

const kv = new W.sessions.Kv(chrome.storage.local);
const tabsKv = new W.sessions.Kv(chrome.storage.session);
const shots = new W.shots.Shots();
const storeReady = W.store.openStore();
const video = new W.video.Video({ kv, store: () => storeReady, regionsOf: tabRegions });
let wakeTimer = null;
let keepAliveTimer = null;
let tabEvents = Promise.resolve(); // the queue of tab and navigation events (see whileRecording)
const followUps = new Set(); // screenshots of loads and tab switches being taken (stop waits for them)

const ready = storeReady.then((store) => {
  const uploader = new W.uploader.Uploader({
    store, kv, fetch: (...args) => fetch(...args), now: () => Date.now(), schedule: wakeIn, onChange: notifyPanel,
  });
  const recorder = new W.recorder.Recorder({
    kv, tabsKv, store, uploader, video, now: () => Date.now(), uuid: () => crypto.randomUUID(),
    broadcast, notify: notifyPanel, activeTabs, userAgent: navigator.userAgent,
    shotsInFlight: () => Promise.allSettled([...followUps]),
    timezoneOffsetMinutes: new Date().getTimezoneOffset(),
  });
  return { store, uploader, recorder };
});

// --- Messages -------------------------------------------------------------------------------------------

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (!message || message.target !== C.TARGET.SW) return false;
  if (message.type === C.MSG.CAPTURE) {
    if (!sender.tab) return false;
    // Synchronously, before any await: the user gesture (no screenshot quota) only carries this far.
    const first = shots.captureNow(sender.tab.windowId);
    first.catch(() => {}); // a failure is handled by the fallbacks in onCapture
    reply(onCapture(message, sender, first, Date.now()), sendResponse);
    return true;
  }
  if (message.type === C.MSG.STEP_SELECT) {
    if (!sender.tab) return false;
    const first = shots.captureNow(sender.tab.windowId); // the page before the step, under the click's gesture
    first.catch(() => {});
    reply(onStepSelect(message, sender, first), sendResponse);
    return true;
  }
  reply(route(message, sender), sendResponse);
  return true;
});

function reply(promise, sendResponse) {
  promise.then(sendResponse, (error) => {
    console.warn("message failed", error);
    sendResponse({ ok: false, error: String((error && error.message) || error) });
  });
}

async function route(message, sender) {
  const { recorder, uploader } = await ready;
  if (!fromExtensionPage(sender) && AUTOMATION_TYPES.has(message.type) && !(await automationAllowed())) {
    return { ok: false, error: "page automation is off: set config.automation (sidepanel.html?automation=1)" };
  }
  switch (message.type) {
    case C.MSG.HELLO:
      // A page just loaded: the previous one may have left captures the worker never received.
      drainPendingCaptures();
      // tabId / tabUrl / frameId: a content script cannot learn them otherwise; it saves them with pending captures.
      return {
        state: await recorder.state(), tabId: sender.tab ? sender.tab.id : null, tabUrl: sender.tab ? sender.tab.url : null,
        frameId: sender.frameId,
      };
    case C.MSG.START:
      await tabsKv.set(C.STORAGE.STEP, W.step.IDLE);
      return recorder.command("start", message.config || {});
    case C.MSG.STOP:
      await tabsKv.set(C.STORAGE.STEP, W.step.IDLE);
      return recorder.command("stop", { taskDescription: message.taskDescription });
    case C.MSG.STEP_OPERATE:
      return onStepOperate(recorder, message);
    case C.MSG.PAUSE:
      return recorder.command("pause");
    case C.MSG.RESUME:
      return recorder.command("resume");
    case C.MSG.STATUS:
      return {
        ok: true, ...(await recorder.status()), screenshots: { ...shots.stats, ...recorder.shotStats },
        step: publicStep(await tabsKv.get(C.STORAGE.STEP)),
      };
    case C.MSG.CHAT:
      return onChat(recorder, message);
    case C.MSG.UPLOAD_NOW:
      return { ok: true, result: await W.recorder.withTimeout(uploader.kick({ force: true }), 10000) };
    case C.MSG.VIDEO_CHUNK:
      return onVideoChunk(message);
    case C.MSG.VIDEO_STATUS:
      await video.status(message);
      notifyPanel();
      return { ok: true };
    default:
      console.warn("service worker: unknown message type", message.type);
      return { ok: false, error: `unknown message type ${JSON.stringify(message.type)}` };
  }
}

/** The side panel, the offscreen document or another page of this extension (also when opened in a tab). */
function fromExtensionPage(sender) {
  return sender.id === chrome.runtime.id && typeof sender.url === "string" && sender.url.startsWith(chrome.runtime.getURL(""));
}

async function automationAllowed() {
  const config = (await kv.get(C.STORAGE.CONFIG)) || {};
  return config.automation === true;
}

async function onChat(recorder, message) {
  const session = await recorder.recording();
  if (!session) return { ok: false, error: "not recording" };
  const turn = await recorder.recordChat(session, { speaker: message.speaker, utterance: message.utterance });
  return { ok: true, client_id: turn.client_id };
}

// --- Captures (browser actions from the content script) -----------------------------------------------------

async function onCapture(message, sender, first, arrivedAt) {
  const { recorder } = await ready;
  // While this runs, the same capture saved by its page at unload (a link click) waits for it (drainPendingCaptures).
  return recorder.capturing(message.turn && message.turn.client_id, () => captureAction(recorder, message, sender, first, arrivedAt));
}

async function captureAction(recorder, message, sender, first, arrivedAt) {
  const session = await recorder.recording();
  if (!session) return { ok: false, ignored: "not recording" };
  const tab = { tabId: sender.tab.id, windowId: sender.tab.windowId, url: sender.tab.url };
  // A screenshot of another page (text sent at pagehide while the next page commits; a fallback taken after a
  // link navigated) is refused: the tab's last screenshot of the action's page stands in (recordAction).
  const left = W.recorder.tabLeftPage(message, tab.url);
  const png = left ? null : await shots.resolve(first, tab);
  // Never store a screenshot whose private areas could not be blacked out; the action is kept without it. The
  // acting frame's own report was taken with the action; every other frame of the tab is asked now.
  const own = message.regions ? { frameId: sender.frameId, report: message.regions } : null;
  const masked = png && (await maskTab(png, tab.tabId, { own, topUrl: tab.url, legacy: message }));
  const zoomLevel = await chrome.tabs.getZoom(tab.tabId).catch(() => undefined);
  const turn = await recorder.recordAction(session, message, {
    tabId: tab.tabId, screenshot: masked, zoomLevel, tabUrl: left ? null : tab.url, arrivedAt,
  });
  // The "after" frame may show the next page (a link): that is what it is for.
  const visible = { tabId: tab.tabId, windowId: tab.windowId };
  setTimeout(() => takeAfterFrame(session, turn.client_id, visible), C.TIMING.AFTER_FRAME_MS);
  return { ok: true, client_id: turn.client_id };
}

/** The "after" frame of an action, if the quota allows it before the turn is released for upload. */
async function takeAfterFrame(session, clientId, tab) {
  try {
    const { recorder } = await ready;
    // Useful only close to the action, and before the turn is released (FRAME_SETTLE_MS).
    const shot = await maskedShotLater(tab, Date.now() + AFTER_FRAME_DEADLINE_MS);
    if (shot) {
      await recorder.attachFrame(session, clientId, { tabId: tab.tabId, png: shot.png, label: "after", atMs: shot.at, url: shot.url });
    }
  } catch (error) {
    console.debug("no after frame", error);
  }
}

/**
 * A spaced screenshot of a tab (no gesture) with its private areas, found in the page, blacked out:
 * {png, at (ms epoch of the capture), url (the tab's URL then)} or null.
 */
async function maskedShotLater(tab, deadline, priority) {
  // Also asked before the capture (which may wait for the quota): a tab closed or navigating right after its
  // screenshot may no longer answer, and then these regions, of the same page a moment earlier, stand in.
  const before = tabRegions(tab.tabId).catch(() => null);
  const png = await shots.later(tab, deadline, priority);
  if (!png) return null;
  const masked = await maskTab(png, tab.tabId, { topUrl: png.capturedUrl || tab.url, before: await before });
  return masked && { png: masked, at: png.capturedAt || Date.now(), url: png.capturedUrl || null };
}

// --- Step mode (lib/step.js) ---------------------------------------------------------------------------------

// The selected step's screenshot (bytes), by the selection's client_id: the worker is kept alive while
// recording; if it was restarted in between, the turn gets the tab's last screenshot instead (recordAction).
const stepBlobs = new Map();

/** The annotator clicked an element in step mode: keep the page before the step, ask the panel for the operation. */
async function onStepSelect(message, sender, first) {
  const { recorder } = await ready;
  const session = await recorder.recording();
  if (!session || !session.step) return { ok: false, error: "not recording in step mode" };
  const tab = { tabId: sender.tab.id, windowId: sender.tab.windowId, url: sender.tab.url };
  const png = await shots.resolve(first, tab);
  // Masked like every screenshot: the selecting frame's own report, every other frame of the tab asked now.
  const own = message.regions ? { frameId: sender.frameId, report: message.regions } : null;
  const screenshot = png && (await maskTab(png, tab.tabId, { own, topUrl: tab.url, legacy: message }));
  const { type, target, options, label, privacy, ...capture } = message;
  const selection = {
    tabId: tab.tabId, frameId: sender.frameId || 0, tabUrl: tab.url, capture: { ...capture, type: C.MSG.CAPTURE },
    options: Array.isArray(options) ? options : null, label: String(label || ""),
    clientId: capture.turn && capture.turn.client_id,
    privacy: Number.isInteger(privacy) ? privacy : null, // the element's level (lib/privacy.js); null: private
  };
  let error = null;
  await tabsKv.mutate(C.STORAGE.STEP, (current) => {
    const next = W.step.reduce(current, { type: "select", selection });
    if (next.error) {
      error = next.error;
      return current;
    }
    return next;
  });
  if (error) return { ok: false, error };
  stepBlobs.clear();
  stepBlobs.set(selection.clientId, { screenshot });
  notifyPanel();
  return { ok: true };
}

/**
 * The side panel chose the operation: record the turn (the page before it), then perform it with trusted input.
 * `mhtml` (base64): the page's MHTML snapshot, taken by the panel (a service worker cannot read the file-backed
 * Blob chrome.pageCapture gives it: NotFoundError) after hiding the highlight, before the operation.
 */
async function onStepOperate(recorder, { op, value, mhtml }) {
  const session = await recorder.recording();
  if (!session || !session.step) return { ok: false, error: "not recording in step mode" };
  const current = (await tabsKv.get(C.STORAGE.STEP)) || W.step.IDLE;
  const problem = current.phase === "selected" ? W.step.checkOperation(current.selection, op, value) : null;
  const next = W.step.reduce(current, { type: "operate", op });
  if (next.error || problem) return { ok: false, error: next.error || problem };
  const selection = current.selection;
  const frame = { frameId: selection.frameId };
  await tabsKv.set(C.STORAGE.STEP, next);
  notifyPanel();
  try {
    if (op === "ignore") return { ok: true };
    const capture = W.step.stepCapture(selection, op, value); // a private element's value masked
    const blobs = stepBlobs.get(selection.clientId) || {};
    const zoomLevel = await chrome.tabs.getZoom(selection.tabId).catch(() => undefined);
    let snapshot = session.mhtml && typeof mhtml === "string" && mhtml ? base64Bytes(mhtml) : null;
    if (snapshot && (await tabHasPrivateFields(selection.tabId))) {
      snapshot = null; // the MHTML would carry the private fields' values in text
      await recorder.note("MHTML snapshot not kept: the page has private fields");
    }
    const turn = await recorder.recordAction(session, capture, {
      tabId: selection.tabId, screenshot: blobs.screenshot || null, zoomLevel, tabUrl: selection.tabUrl, mhtml: snapshot,
    });
    if (W.step.executes(op)) await performStep(selection, frame, op, value);
    return { ok: true, client_id: turn.client_id };
  } catch (error) {
    await recorder.note(`step not performed: ${(error && error.message) || error}`);
    return { ok: false, error: String((error && error.message) || error) };
  } finally {
    stepBlobs.delete(selection.clientId);
    await tabsKv.set(C.STORAGE.STEP, W.step.reduce(next, { type: "done" }));
    const done = { target: C.TARGET.CONTENT, type: C.MSG.STEP_DONE, clear: true };
    await chrome.tabs.sendMessage(selection.tabId, done, frame).catch(() => {}); // a click may have left the page
    notifyPanel();
  }
}

/** Attach the debugger (the bar it may show moves the page first), let the content script place the element, act. */
async function performStep(selection, frame, op, value) {
  const target = { tabId: selection.tabId };
  await chrome.debugger.attach(target, "1.3");
  try {
    const exec = { target: C.TARGET.CONTENT, type: C.MSG.STEP_EXEC, op, value };
    const placed = await chrome.tabs.sendMessage(selection.tabId, exec, frame);
    if (!placed || !placed.ok) throw new Error((placed && placed.error) || "the page did not answer");
    await W.step.performInput((method, params) => chrome.debugger.sendCommand(target, method, params), op, value, placed);
  } finally {
    await chrome.debugger.detach(target).catch(() => {});
  }
}

function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

/** The step state the side panel shows (no page, boxes or bytes). */
function publicStep(state) {
  const s = state || W.step.IDLE;
  const sel = s.selection;
  return {
    phase: s.phase, op: s.op || null,
    selection: sel && {
      tabId: sel.tabId, frameId: sel.frameId, label: sel.label, options: sel.options,
      tagName: sel.capture.turn.arguments.element && sel.capture.turn.arguments.element.tagName,
      private: W.step.isPrivateSelection(sel),
    },
  };
}

/**
 * `png` of tab `tabId` with the private areas of every frame of the tab blacked out (lib/regions.js), or null
 * when they cannot all be placed (the top frame did not answer, or shows another page than `topUrl`; `before`, the
 * regions of the same page asked just before the capture, then stand in). `legacy`:
 * a capture from a content script without a regions report (an older one still loaded): its own rects count.
 */
async function maskTab(png, tabId, { own = null, topUrl = null, legacy = null, before = null } = {}) {
  try {
    let found = await tabRegions(tabId, { own, topUrl });
    const samePage = (regions) => regions && regions.viewport && (!topUrl || regions.url === topUrl);
    if (!found.viewport && samePage(before)) found = before;
    if (!found.viewport) throw new Error("the private areas of the tab could not be placed");
    const extra = legacy && !legacy.regions && Array.isArray(legacy.privateRects) ? legacy.privateRects : [];
    return await shots.mask(png, [...found.rects, ...extra], found.viewport);
  } catch (error) {
    shots.failed("skipped", error);
    return null;
  }
}

/** Whether any frame of tab `tabId` has (or may have: no answer) a private field (lib/regions.js). */
async function tabHasPrivateFields(tabId) {
  const config = (await kv.get(C.STORAGE.CONFIG)) || {};
  return W.regions.hasPrivateFields(tabId, config.privateSelectors);
}

/** The private areas of every frame of tab `tabId` ({rects, viewport} in tab-viewport CSS px; lib/regions.js). */
async function tabRegions(tabId, options) {
  const config = (await kv.get(C.STORAGE.CONFIG)) || {};
  return W.regions.collect(tabId, config.privateSelectors, options);
}

// --- Navigations and tabs -------------------------------------------------------------------------------------

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0 || details.tabId < 0 || !W.recorder.isRecordableUrl(details.url)) return;
  whileRecording(
    (recorder, session) => recorder.recordLoad(session, details),
    (recorder) => recorder.noteDocUrl(details.tabId, details.url),
  );
});

// A single-page app's navigation (history.pushState/replaceState): no commit, no onCompleted. Its load turn
// gets its screenshot once the URL has been quiet for HISTORY_COALESCE_MS (a burst of changes is one load).
chrome.webNavigation.onHistoryStateUpdated.addListener((details) => {
  if (details.frameId !== 0 || details.tabId < 0 || !W.recorder.isRecordableUrl(details.url)) return;
  whileRecording(
    async (recorder, session) => {
      const recorded = await recorder.recordHistoryState(session, details);
      if (!recorded || recorded.awaitsCommit) return null;
      return async () => {
        await new Promise((resolve) => setTimeout(resolve, C.TIMING.HISTORY_COALESCE_MS));
        const clientId = recorded.turn.client_id;
        const url = await recorder.historySettled(details.tabId, clientId, details.timeStamp);
        if (url) await shootLoad(recorder, session, clientId, details.tabId, url);
      };
    },
    (recorder) => recorder.noteDocUrl(details.tabId, details.url),
  );
});

chrome.webNavigation.onCompleted.addListener((details) => {
  if (details.frameId !== 0 || details.tabId < 0) return;
  whileRecording(async (recorder, session) => {
    const clientId = await recorder.takeLoad(details.tabId);
    if (!clientId) return null;
    // The page a replaceState moved the load to while it was loading, if any (recordHistoryState).
    const url = (await recorder.waitingUrl(details.tabId, clientId)) || details.url;
    return () => shootLoad(recorder, session, clientId, details.tabId, url);
  });
});

/** Screenshot load turn `clientId` of `url` in tab `tabId` and attach it, or let it wait for a stand-in. */
async function shootLoad(recorder, session, clientId, tabId, url) {
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  // Only while the tab still shows this load's page (rapid link clicks leave pages before their turn).
  const visible = tab && tab.active ? { tabId: tab.id, windowId: tab.windowId, url } : null;
  const shot = visible ? await maskedShotLater(visible, Date.now() + STATE_SHOT_DEADLINE_MS, STATE) : null;
  await recorder.attachScreenshot(session, clientId, {
    tabId, png: shot && shot.png, atMs: shot && shot.at, url: shot && shot.url,
  });
}

// Event times are taken when the event fires, never in the (queued) handler: they order the turns.
chrome.tabs.onCreated.addListener((tab) => {
  const eventTime = Date.now();
  whileRecording((recorder, session) =>
    recorder.recordTab(session, "tabcreate", { tabId: tab.id, url: tab.pendingUrl || tab.url, eventTime }),
  );
});

chrome.tabs.onRemoved.addListener((tabId) => {
  const eventTime = Date.now();
  whileRecording(async (recorder, session) => {
    await recorder.recordTab(session, "tabremove", { tabId, eventTime });
    // Its load or tabswitch turns still waiting for a screenshot get their stand-in now, or none.
    await recorder.settleWaiting(session, tabId);
    await recorder.updateTab(tabId, () => null);
  });
});

chrome.tabs.onUpdated.addListener((tabId, change) => {
  if (change.url) ready.then(({ recorder }) => recorder.updateTab(tabId, (t) => ({ ...t, url: change.url })));
});

chrome.tabs.onActivated.addListener(({ tabId, windowId }) => {
  const eventTime = Date.now();
  let tabIdOrigin = -1;
  // Always track the active tabs (also while not recording): they are the origins of the next tabswitches.
  const swapped = kv.mutate(C.STORAGE.LAST_TAB, (last) => {
    const { origin, next } = W.recorder.tabActivated(last, tabId, windowId);
    tabIdOrigin = origin;
    return next;
  });
  whileRecording(async (recorder, session) => {
    await swapped;
    if (tabIdOrigin === tabId) return null;
    const tab = await chrome.tabs.get(tabId).catch(() => null);
    const turn = await recorder.recordTab(session, "tabswitch", {
      tabId, tabIdOrigin, url: tab && (tab.url || tab.pendingUrl), eventTime, hold: C.TIMING.LOAD_SETTLE_MS,
    });
    return async () => {
      // Only of the page switched to (url): another one is refused, and a stand-in of that page is waited for.
      const url = turn.arguments.metadata.url || undefined;
      const shot = await maskedShotLater({ tabId, windowId, url }, Date.now() + STATE_SHOT_DEADLINE_MS, STATE);
      await recorder.attachScreenshot(session, turn.client_id, {
        tabId, png: shot && shot.png, atMs: shot && shot.at, url: shot && shot.url,
      });
    };
  });
});

/**
 * Run `fn(recorder, session)` if a demonstration is being recorded (and not paused), else `otherwise(recorder)`
 * if given. Tab and navigation events are handled one at a time, in the order they fired (onCompleted must find
 * the load that its onCommitted stored); `fn` may return a follow-up (a screenshot) that runs outside that order.
 */
function whileRecording(fn, otherwise) {
  const step = tabEvents.then(async () => {
    const { recorder } = await ready;
    const session = await recorder.recording();
    if (session) return fn(recorder, session);
    if (otherwise) await otherwise(recorder);
    return null;
  });
  tabEvents = step.catch(() => {});
  const done = step
    .then((followUp) => typeof followUp === "function" && followUp())
    .catch((error) => console.warn("event not recorded", error));
  followUps.add(done);
  done.finally(() => followUps.delete(done));
}

/** The active tab of every window, the last focused window's first. */
async function activeTabs() {
  const [focused] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  const all = await chrome.tabs.query({ active: true });
  const ordered = focused ? [focused, ...all.filter((tab) => tab.id !== focused.id)] : all;
  return ordered.map((tab) => ({ tabId: tab.id, windowId: tab.windowId }));
}

// --- Video ------------------------------------------------------------------------------------------------

async function onVideoChunk(message) {
  const { store, uploader } = await ready;
  if (message.bytes) {
    // The offscreen document normally stores chunks itself; base64 bytes are accepted too.
    const blob = await W.recorder.makeBlob(W.shots.base64ToBytes(message.bytes), "video/webm");
    await store.addChunk({ session: message.session, index: message.index, blob, startedAt: message.startedAt });
  }
  uploader.kick();
  notifyPanel();
  return { ok: true };
}

// The toolbar button opens the side panel; its click is also the user gesture that grants tabCapture on
// this tab, so a recording that asked for video starts it now.
chrome.action.onClicked.addListener((tab) => {
  chrome.sidePanel.open({ windowId: tab.windowId }).catch((error) => console.warn("side panel", error));
  ready.then(async ({ recorder }) => {
    const session = await recorder.session();
    const config = (await kv.get(C.STORAGE.CONFIG)) || {};
    if (session && (session.video || config.video)) await video.start(session, tab.id).catch(() => {});
  });
});

// --- Automation through chrome.storage, and wake-ups ------------------------------------------------------------

chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== "local") return;
  if (changes[C.STORAGE.SESSION]) keepAliveWhileRecording(Boolean(changes[C.STORAGE.SESSION].newValue));
  if (changes[C.STORAGE.COMMAND] && changes[C.STORAGE.COMMAND].newValue) {
    ready.then(({ recorder }) => recorder.runStoredCommand(changes[C.STORAGE.COMMAND].newValue));
  }
  if (changes[C.STORAGE.CONFIG]) {
    // New sign-in: retry refused uploads at once; new private selectors: tell the content scripts.
    ready.then(async ({ uploader, recorder }) => {
      uploader.kick({ force: true });
      await broadcast(await recorder.state());
    });
  }
});

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === UPLOAD_ALARM) ready.then(({ uploader }) => uploader.kick());
});

chrome.runtime.onStartup.addListener(() => ready.then(({ uploader }) => uploader.kick()));
chrome.runtime.onInstalled.addListener(() => {
  ready.then(({ uploader }) => uploader.kick());
  injectContentScripts().catch((error) => console.warn("content scripts not injected", error));
});

/**
 * Tabs open before the extension was installed or updated have no (or an orphaned) content script: give them
 * the manifest's, so recording works without reloading every tab (capture.js ignores a second load).
 */
async function injectContentScripts() {
  const files = chrome.runtime.getManifest().content_scripts[0].js;
  const tabs = await chrome.tabs.query({});
  await Promise.all(
    tabs
      .filter((tab) => W.recorder.isRecordableUrl(tab.url))
      .map((tab) => chrome.scripting.executeScript({ target: { tabId: tab.id, allFrames: true }, files }).catch(() => {})),
  );
}

/**
 * While a demonstration is recorded, keep this worker from being stopped when idle (~30 s): a stopped worker
 * makes the next action wait for a cold start, and a link click can unload its page before the capture gets
 * through. An extension API call every 20 s resets the idle timer (Chrome 110+).
 */
function keepAliveWhileRecording(recording) {
  if (recording && !keepAliveTimer) {
    keepAliveTimer = setInterval(() => chrome.runtime.getPlatformInfo().catch(() => {}), 20000);
  } else if (!recording && keepAliveTimer) {
    clearInterval(keepAliveTimer);
    keepAliveTimer = null;
  }
}

/** Wake the uploader in `delayMs`: a timer while this worker lives, an alarm in case it is killed first. */
function wakeIn(delayMs) {
  clearTimeout(wakeTimer);
  wakeTimer = setTimeout(() => ready.then(({ uploader }) => uploader.kick()), Math.max(0, delayMs));
  chrome.alarms.create(UPLOAD_ALARM, { when: Date.now() + Math.max(delayMs, 1000) });
}

// --- Notifications ------------------------------------------------------------------------------------------

/** Tell every content script (all tabs, all frames) the recording state. */
async function broadcast(state) {
  const tabs = await chrome.tabs.query({});
  await Promise.all(
    tabs.map((tab) =>
      chrome.tabs.sendMessage(tab.id, { target: C.TARGET.CONTENT, type: C.MSG.STATE, state }).catch(() => {}),
    ),
  );
}

/** Nudge the side panel (it reads counters from storage; this only makes it refresh at once). */
function notifyPanel() {
  chrome.runtime.sendMessage({ target: C.TARGET.PANEL, type: C.MSG.STATE }).catch(() => {});
}

function drainPendingCaptures() {
  ready
    .then(({ recorder }) => recorder.drainPendingCaptures())
    .catch((error) => console.warn("pending captures not stored", error));
}

// Top level: every (re)start of the worker resumes uploads, stores captures that never reached it, and runs
// any automation command left unanswered.
ready
  .then(async ({ recorder, uploader }) => {
    uploader.kick();
    drainPendingCaptures();
    keepAliveWhileRecording(Boolean(await recorder.session()));
    await video.resume();
    await recorder.runStoredCommand(await kv.get(C.STORAGE.COMMAND));
  })
  .catch((error) => console.error("service worker start failed", error));
