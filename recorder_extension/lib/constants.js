/*
 * Every message type and storage key of the extension, in one place (STYLE.md §9).
 *
 * Classic script: content scripts, the service worker (importScripts), extension pages (<script>) and node
 * tests (require) all load this same file. It defines globalThis.WebTasks.C.
 *
 * Contexts and their one job each:
 *   content/capture.js   (every frame)  captures events, stamps data-webtasks-id, serialises DOM + bboxes
 *   service_worker.js                   routes, takes screenshots, stores turns/blobs durably, uploads
 *   sidepanel/                          the UI: server + token, project, start/pause/stop, counters
 *   offscreen/                          MediaRecorder for tab video (WebM chunks)
 */
(function (root) {
  "use strict";

  const C = Object.freeze({
    VERSION: "1.0.0",
    BUNDLE_MEDIA_TYPE: "application/x-webtasks-batch", // blobs + turns in one request (docs/ingest.md)
    UID_ATTRIBUTE: "data-webtasks-id",
    PRIVATE_ATTRIBUTE: "data-private",

    // Messages. Every message is {target, type, ...}; listeners filter by target and switch on type.
    TARGET: Object.freeze({ SW: "service-worker", CONTENT: "content", PANEL: "sidepanel", OFFSCREEN: "offscreen" }),
    MSG: Object.freeze({
      // content → service worker
      CAPTURE: "capture", // {turn, page?: {html, bboxes}, privateRects?: [...], frame?: {...}}: a browser action
      HELLO: "hello", // a content script asks for the recording state → {state}
      // service worker → content (tabs.sendMessage), and → side panel (runtime.sendMessage)
      STATE: "state", // {state}: recording state changed
      // side panel → service worker
      START: "start", // {config}: start a demonstration
      PAUSE: "pause",
      RESUME: "resume",
      STOP: "stop",
      STATUS: "status", // → {state, counters}
      CHAT: "chat", // {speaker, utterance}: a chat turn typed in the side panel
      CHAT_SEEN: "chat-seen", // {turn: {client_id, speaker, timestamp}}: a chat turn the live session shows (counted once)
      // offscreen ↔ service worker
      VIDEO_START: "video-start", // {streamId, startedAt}
      VIDEO_CHUNK: "video-chunk", // {index, bytes (base64), startedAt}
      VIDEO_STOP: "video-stop",
      VIDEO_REGIONS: "video-regions", // service worker → offscreen: {rects, viewport} the tab's private areas now
      VIDEO_STATUS: "video-status", // offscreen → service worker: {recording, error?} (recorder started/stopped/failed)
      // step mode (lib/step.js): content → worker: the annotator clicked an element (blocked) {capture, options?};
      // panel → worker: the operation {op, value?}; worker → content: perform the element's part of it {op, value}
      // (→ {ok, x, y}: the element's centre in the tab's viewport), then STEP_DONE (stop letting input through)
      STEP_SELECT: "step-select",
      STEP_OPERATE: "step-operate",
      STEP_EXEC: "step-exec",
      STEP_DONE: "step-done",
      // side panel → service worker (added by the service-worker helper)
      UPLOAD_NOW: "upload-now", // retry uploading at once, ignoring the backoff
      // page ↔ content script (window.postMessage), for automation and tests
      PAGE_BRIDGE: "webtasks-bridge",
      // content script of a frame ↔ content script of its child frame (window.postMessage): the child, on another
      // origin, asks {type, request: true}; the parent answers {type, x, y, viewportWidth, viewportHeight}
      FRAME_OFFSET: "webtasks-frame-offset",
      // service worker → content script of one frame (tabs.sendMessage with frameId): → its private regions report
      // {url, viewport, rects, frames: [{frameId, x, y, width, height}]} in its own viewport (lib/regions.js)
      REGIONS: "regions",
      // service worker → content script of the top frame: → {painted, url} once the page has rendered a frame (a
      // load's screenshot waits for it: before its first paint the tab may still show the previous page)
      PAINTED: "painted",
      // content script of a child frame → its parent's (window.postMessage): {type, frameId} (the child's
      // chrome frameId, from the HELLO reply), so the parent can name its iframe boxes; {type, request: true} asks
      FRAME_ID: "webtasks-frame-id",
    }),

    // chrome.storage.local keys (durable; survive service-worker death and browser restart).
    STORAGE: Object.freeze({
      CONFIG: "webtasks.config", // {serverUrl, token, project, privateSelectors, ...}
      SESSION: "webtasks.session", // the active recording: {demoName, clientId, startedAt (ms epoch), mode, paused, ...}
      COUNTERS: "webtasks.counters", // {captured, queued, uploaded, lastError}
      COMMAND: "webtasks.command", // automation: write {action: "start"|"stop"|"pause"|"resume", config?, nonce}
      COMMAND_RESULT: "webtasks.commandResult", // {nonce, ok, error?, demoName?}
      OUTBOX: "webtasks.outbox", // stopped recordings not yet finished on the server: [session, ...]
      UPLOAD: "webtasks.upload", // uploader state: {attempt, nextAt, recent: [{clientId, demoName, finishedAt}]}
      LAST_TAB: "webtasks.lastActiveTab", // {tabId, windowId}: origin of the next tabswitch
      VIDEO: "webtasks.video", // {session, recording, startedAt, nextIndex, error?}: the tab video recorder
      // the recording running or last stopped as the side panel shows it: last actions, chat count (lib/activity.js)
      ACTIVITY: "webtasks.activity",
      PANEL: "webtasks.panel", // side panel: {mode (the last mode chosen), dismissed (clientId of a confirmation closed)}
      LIVE_UNACKED: "webtasks.live.unacked", // side panel: live-session messages not yet acknowledged {url, unacked}
      STEP: "webtasks.step", // chrome.storage.session: the step-mode state {phase, selection, op?} (lib/step.js)
      // chrome.storage.session: the values private fields held while recording (lib/redact.js SecretStore), masked
      // wherever they reappear; in the browser's memory only, never on disk, never sent, not readable by content scripts
      SECRETS: "webtasks.secrets",
      TABS: "webtasks.tabs", // chrome.storage.session: {[tabId]: {url, docUrl, burst, lastShot: {sha256, timestamp, session}, load}}
      // Key PREFIX (+ turn.client_id): a CAPTURE the worker may never have received (the page unloaded while the
      // worker was starting). A content script writes {message, tabId (from the HELLO reply), at (ms)} for each
      // capture not yet answered when the page hides; the worker stores it (once) and removes the key.
      PENDING_CAPTURE: "webtasks.pendingCapture.",
    }),

    // IndexedDB: turns and blobs are written here BEFORE any upload.
    DB: Object.freeze({ NAME: "webtasks", VERSION: 1, TURNS: "turns", BLOBS: "blobs", CHUNKS: "videoChunks", META: "meta" }),

    INTENTS: Object.freeze([
      "click", "hover", "textInput", "change", "submit", "load", "scroll",
      "copy", "paste", "tabcreate", "tabremove", "tabswitch",
    ]),
    TIMING: Object.freeze({
      HOVER_DWELL_MS: 800, // a hover is a dwell this long on one element, not every mouseover
      SCROLL_DEBOUNCE_MS: 400, // one scroll turn per pause in scrolling, with the final position
      UPLOAD_BUNDLE_TURNS: 50,
      RETRY_BASE_MS: 1000,
      RETRY_MAX_MS: 60000,
      OUTER_HTML_MAX: 2000, // outerHTML of the acted element is truncated to this many characters
      // service worker (screenshots, frames, uploads)
      CAPTURE_SPACING_MS: 550, // captureVisibleTab without a user gesture: at most 2 per second
      AFTER_FRAME_MS: 300, // the "after" frame of an action is taken this long after it
      FRAME_SETTLE_MS: 2500, // an action turn is held back this long so its "after" frame can be attached
      LOAD_SETTLE_MS: 15000, // a load turn waits at most this long for its screenshot (after onCompleted)
      LOAD_PAINT_MS: 2000, // a load's screenshot waits at most this long for the page's first rendered frame
      // pushState/replaceState URL changes of a tab this close to the previous one (or to a committed navigation)
      // amend that load turn's URL instead of adding one (a search box mirroring ?q= on every keystroke); a
      // history load's screenshot is taken once the tab's URL has been quiet this long
      HISTORY_COALESCE_MS: 1000,
      VIDEO_TIMESLICE_MS: 2000, // MediaRecorder chunk length
      VIDEO_REGIONS_MS: 250, // the tab video's private areas are refreshed this often (lib/video.js)
      VIDEO_REGIONS_MAX_AGE_MS: 10000, // video frames are black while the private areas known are older than this
    }),
  });

  root.WebTasks = root.WebTasks || {};
  root.WebTasks.C = C;
  if (typeof module === "object" && module.exports) module.exports = C;
})(typeof globalThis !== "undefined" ? globalThis : self);
