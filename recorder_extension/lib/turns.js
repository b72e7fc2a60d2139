/*
 * Turns in the server's shape (README "Recording ingest") and the content-addressed blobs they refer to, built
 * from what the browser reports: pure functions, shared by the recorder (lib/recorder.js, lib/loads.js) and
 * the offscreen document (video chunks are blobs too).
 */
(function (root) {
  "use strict";

  // --- Blobs ---------------------------------------------------------------------------------------------

  async function sha256Hex(bytes) {
    const digest = await root.crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** A content-addressed blob {sha256, bytes (ArrayBuffer), mediaType} of bytes, a string (UTF-8) or JSON. */
  async function makeBlob(content, mediaType) {
    let bytes = content;
    if (typeof content === "string") bytes = new TextEncoder().encode(content);
    else if (!(content instanceof ArrayBuffer) && !ArrayBuffer.isView(content)) {
      bytes = new TextEncoder().encode(JSON.stringify(content));
    }
    const buffer = bytes instanceof ArrayBuffer ? bytes : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    return { sha256: await sha256Hex(buffer), bytes: buffer, mediaType };
  }

  // --- Turns (server shape: see README "Recording ingest") -------------------------------------------------

  const LABEL_MAX = 200; // the server's annotation.lib.schema.LABEL_MAX

  function validClientId(id) {
    return typeof id === "string" && id.length >= 1 && id.length <= 64;
  }

  /** A browser action from the content script, completed by the service worker. */
  function buildActionTurn(sent, { clientId, timestamp, tabId, zoomLevel, refs = {}, frames = [] }) {
    const args = sent.arguments && typeof sent.arguments === "object" ? sent.arguments : {};
    const metadata = { ...(args.metadata || {}), tabId };
    if (typeof metadata.url !== "string") metadata.url = "";
    if (typeof zoomLevel === "number" && Number.isFinite(zoomLevel)) metadata.zoomLevel = zoomLevel;
    const turn = {
      client_id: validClientId(sent.client_id) ? sent.client_id : clientId,
      type: "browser",
      timestamp,
      intent: sent.intent,
      arguments: { ...args, metadata },
    };
    if (typeof sent.label === "string" && sent.label) turn.label = sent.label.slice(0, LABEL_MAX);
    for (const key of ["screenshot", "page", "bboxes"]) if (refs[key]) turn[key] = refs[key];
    if (frames.length) turn.frames = frames;
    return turn;
  }

  function buildLoadTurn(details, { clientId, timestamp }) {
    const properties = {
      url: details.url,
      transitionType: details.transitionType || "link",
      transitionQualifiers: Array.isArray(details.transitionQualifiers) ? details.transitionQualifiers : [],
      tabId: details.tabId,
    };
    return {
      client_id: clientId, type: "browser", timestamp, intent: "load",
      arguments: { metadata: { url: details.url, tabId: details.tabId }, properties },
    };
  }

  /** tabcreate / tabremove / tabswitch (`tabIdOrigin` only for tabswitch). */
  function buildTabTurn(intent, { clientId, timestamp, tabId, url, tabIdOrigin }) {
    const properties = intent === "tabswitch" ? { tabId, tabIdOrigin } : { tabId };
    return {
      client_id: clientId, type: "browser", timestamp, intent,
      arguments: { metadata: { url: url || "", tabId }, properties },
    };
  }

  function buildChatTurn({ clientId, timestamp, speaker, utterance }) {
    return {
      client_id: clientId, type: "chat", timestamp,
      speaker: speaker === "instructor" ? "instructor" : "navigator", utterance: String(utterance),
    };
  }

  /**
   * A tab was activated in a window: the tabswitch origin is the tab that was active in THAT window before
   * (a person switching tabs in one window never came from a tab of another window); in a window not seen
   * yet, the last activated tab anywhere. `last` is C.STORAGE.LAST_TAB: {tabId, windowId, byWindow}.
   * Returns {origin (-1 when unknown), next (the new LAST_TAB)}.
   */
  function tabActivated(last, tabId, windowId) {
    const byWindow = { ...((last && last.byWindow) || {}) };
    const previous = windowId in byWindow ? byWindow[windowId] : last && last.tabId;
    byWindow[windowId] = tabId;
    return { origin: Number.isInteger(previous) ? previous : -1, next: { tabId, windowId, byWindow } };
  }

  /** LAST_TAB from the active tab of every window, the focused window's first. */
  function lastTabsFrom(activeTabs) {
    if (!activeTabs || !activeTabs.length) return null;
    const byWindow = {};
    for (const tab of activeTabs) byWindow[tab.windowId] = tab.tabId;
    return { tabId: activeTabs[0].tabId, windowId: activeTabs[0].windowId, byWindow };
  }

  /** Only http(s) and file pages are part of a demonstration (not the side panel, chrome:// or about:). */
  function isRecordableUrl(url) {
    return /^(https?|file):/i.test(url || "");
  }

  /** The tab's URL when an action happened: given by the worker (sender.tab.url), else the captured page's URL
   *  (the top document's, unless the action was in a cross-origin frame). */
  function actionTabUrl(message, tabUrl) {
    if (typeof tabUrl === "string" && tabUrl) return tabUrl;
    const frame = message.frame || {};
    const metadata = (message.turn && message.turn.arguments && message.turn.arguments.metadata) || {};
    return !frame.crossOrigin && typeof metadata.url === "string" ? metadata.url : null;
  }

  /**
   * Whether the tab had already left the page an action was taken on when its message arrived (text flushed
   * at pagehide while the next page commits): a screenshot taken then shows the next page. Fragments ignored.
   */
  function tabLeftPage(message, tabUrl) {
    const page = actionTabUrl(message, null);
    const strip = (url) => String(url).split("#")[0];
    return Boolean(page && tabUrl && strip(page) !== strip(tabUrl));
  }

  function withoutFragment(url) {
    return String(url).split("#")[0];
  }

  /** A load turn moved to `url` (a coalesced history change). */
  function withUrl(turn, url) {
    const args = turn.arguments;
    return { ...turn, arguments: { ...args, metadata: { ...args.metadata, url }, properties: { ...args.properties, url } } };
  }

  const api = { sha256Hex, makeBlob, validClientId, buildActionTurn, buildLoadTurn, buildTabTurn, buildChatTurn, tabActivated, lastTabsFrom, isRecordableUrl, actionTabUrl, tabLeftPage, withoutFragment, withUrl };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.turns = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
