/*
 * Service worker: one job — route, screenshot, store, upload (STYLE.md §9).
 *
 * It keeps nothing that matters in memory: the session, counters and commands live in chrome.storage.local,
 * per-tab facts and the private values to mask in chrome.storage.session, turns and blobs in IndexedDB
 * (lib/store.js). It is stopped when idle (kept alive while recording) and restarted by the next event; the top
 * level re-opens the store, kicks the uploader, stores captures that never reached it and answers a pending
 * automation command.
 *
 * Interfaces (keys and types in lib/constants.js):
 *   runtime messages {target: C.TARGET.SW, type}:
 *     from content scripts: CAPTURE (→ {ok, client_id} once stored), HELLO (→ {state, tabId, tabUrl, frameId});
 *     from extension pages (side panel, tests): START {config} → {ok, clientId, demoName}, STOP → {ok, demoName},
 *       PAUSE, RESUME, STATUS → {state, counters, session, outbox, upload, video, screenshots},
 *       CHAT {speaker, utterance}, CHAT_SEEN {turn}, UPLOAD_NOW; the same through the page bridge only with config.automation;
 *     from the offscreen document: VIDEO_CHUNK, VIDEO_STATUS.
 *     step mode (lib/step_worker.js): STEP_SELECT from content scripts; STEP_OPERATE {op, value?} from the side panel.
 *   webNavigation and tabs events: lib/navigation.js (loads, single-page-app URL changes, tab turns).
 *   storage: C.STORAGE.COMMAND {action, config?, nonce} → C.STORAGE.COMMAND_RESULT {nonce, ok, error?, demoName?};
 *     C.STORAGE.PENDING_CAPTURE + client_id: captures a page left behind (stored once, then removed).
 */
importScripts(
  "lib/constants.js",
  "lib/privacy.js",
  "lib/redact.js",
  "lib/clock.js",
  "lib/sessions.js",
  "lib/store.js",
  "lib/upload_wire.js",
  "lib/uploader.js",
  "lib/turns.js",
  "lib/standins.js",
  "lib/loads.js",
  "lib/activity.js",
  "lib/recorder.js",
  "lib/regions.js",
  "lib/shots.js",
  "lib/video.js",
  "lib/step.js",
  "lib/har.js",
  "lib/step_worker.js",
  "lib/navigation.js",
);

const W = self.WebTasks;
const C = W.C;
const UPLOAD_ALARM = "webtasks-upload";
const AFTER_FRAME_DEADLINE_MS = 1500; // from when the after-frame is asked for (AFTER_FRAME_MS after the action)
// Messages a web page may send through the content script's page bridge only when automation is enabled
// (config.automation): without that, any site could start, stop or redirect a recording.
const AUTOMATION_TYPES = new Set([
  C.MSG.START, C.MSG.STOP, C.MSG.PAUSE, C.MSG.RESUME, C.MSG.STATUS, C.MSG.CHAT, C.MSG.UPLOAD_NOW, C.MSG.STEP_OPERATE,
]);

const kv = new W.sessions.Kv(chrome.storage.local);
const tabsKv = new W.sessions.Kv(chrome.storage.session);
const shots = new W.shots.Shots();
// What private fields held (CAPTURE and STEP_SELECT privateValues, step-mode Type values): masked in every turn, page
// and snapshot stored from then on (lib/redact.js). In memory and chrome.storage.session only.
const secrets = new W.redact.SecretStore(chrome.storage.session);
const storeReady = W.store.openStore();
const video = new W.video.Video({ kv, store: () => storeReady, regionsOf: tabRegions });
let wakeTimer = null;
let keepAliveTimer = null;

const ready = storeReady.then((store) => {
  const uploader = new W.uploader.Uploader({
    store, kv, fetch: (...args) => fetch(...args), now: () => Date.now(), schedule: wakeIn, onChange: notifyPanel,
    onCreated: (session) => session.traffic && !session.step && trafficFromNow(session),
  });
  const recorder = new W.recorder.Recorder({
    kv, tabsKv, store, uploader, video, now: () => Date.now(), uuid: () => crypto.randomUUID(),
    broadcast, notify: notifyPanel, activeTabs: () => W.navigation.activeTabs(chrome), userAgent: navigator.userAgent,
    redactor: () => secrets.redactor(),
    shotsInFlight: () => navigation.inFlight(),
    timezoneOffsetMinutes: new Date().getTimezoneOffset(),
  });
  return { store, uploader, recorder };
});
const steps = new W.stepWorker.StepWorker({
  ready, tabsKv, shots, maskTab, hasPrivateFields: tabHasPrivateFields, notify: notifyPanel, secrets,
  network: true, // step mode records the tab's traffic and DOM snapshots (docs/recorder.md#raw-dump)
});
const navigation = new W.navigation.Navigation({ ready, kv, shotLater: maskedShotLater, painted: tabPainted });
navigation.listen();

// --- Messages -------------------------------------------------------------------------------------------

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (!message || message.target !== C.TARGET.SW) return false;
  // At once, before any await: a GET form's next page is committed after its submit's CAPTURE arrived, and its load
  // turn must find the password it carries already known. The values never go further than this worker's memory.
  if (message.type === C.MSG.CAPTURE || message.type === C.MSG.STEP_SELECT) secrets.take(message);
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
    reply(steps.select(message, sender, first), sendResponse);
    return true;
  }
  reply(route(message, sender), sendResponse);
  return true;
});

/**
 * Traffic from now on (step mode from its start; a project keeping WebLINX traffic, once the server said so) in the
 * active web page's tab, so the first step's HAR has the page's load; then the tab of each step or action.
 */
async function trafficFromNow(session) {
  const { recorder } = await ready;
  const now = await recorder.recording();
  if (!now || now.clientId !== session.clientId) return;
  const tabs = await chrome.tabs.query({ active: true });
  const web = tabs.sort((a, b) => Number(b.lastAccessed || 0) - Number(a.lastAccessed || 0)).find((t) => /^https?:/.test(t.url || ""));
  if (web) await steps.startNetwork(web.id).catch((e) => recorder.note(`traffic not recorded: ${e}`));
}

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
    case C.MSG.START: {
      await steps.reset();
      const started = await recorder.command("start", message.config || {});
      const session = await recorder.recording();
      if (session && (session.traffic || session.step)) await trafficFromNow(session);
      return started;
    }
    case C.MSG.STOP:
      await steps.reset();
      return recorder.command("stop", { taskDescription: message.taskDescription });
    case C.MSG.STEP_OPERATE:
      return steps.operate(recorder, message);
    case C.MSG.PAUSE:
      return recorder.command("pause");
    case C.MSG.RESUME:
      return recorder.command("resume");
    case C.MSG.STATUS:
      return {
        ok: true, ...(await recorder.status()), screenshots: { ...shots.stats, ...recorder.shotStats },
        step: await steps.status(),
      };
    case C.MSG.CHAT:
      return onChat(recorder, message);
    case C.MSG.CHAT_SEEN:
      return fromExtensionPage(sender) ? recorder.chatSeen(message.turn) : { ok: false, error: "extension pages only" };
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
  // Traffic (a project keeping it), not for a copy stored already (its HAR would be lost): of a page already left,
  // no body is kept but the page in place's (its fields can no longer be asked).
  const { store } = await ready;
  const copy = session.traffic && message.turn && (await store.getTurn(message.turn.client_id));
  const har = copy ? null : await steps.actionTraffic(recorder, session, tab, left, tabHasPrivateFields);
  const turn = await recorder.recordAction(session, message, {
    tabId: tab.tabId, screenshot: masked, zoomLevel, tabUrl: left ? null : tab.url, arrivedAt, har,
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
/** Settles once the top frame of tab `tabId` has rendered a frame, or after C.TIMING.LOAD_PAINT_MS (no answer). */
function tabPainted(tabId) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(resolve, C.TIMING.LOAD_PAINT_MS); });
  const ask = chrome.tabs
    .sendMessage(tabId, { target: C.TARGET.CONTENT, type: C.MSG.PAINTED }, { frameId: 0 })
    .catch(() => null);
  return Promise.race([ask, timeout]).finally(() => clearTimeout(timer));
}

async function tabRegions(tabId, options) {
  const config = (await kv.get(C.STORAGE.CONFIG)) || {};
  return W.regions.collect(tabId, config.privateSelectors, options);
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
