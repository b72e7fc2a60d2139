/*
 * What the side panel shows of a recording (docs/recorder.md "Install and record"): the last actions captured, the
 * chat turns counted, and, after Stop, the recording's upload state. Pure functions.
 *
 * The service worker keeps one record in chrome.storage.local (C.STORAGE.ACTIVITY), for the recording running or
 * last stopped, updated as each turn is stored (lib/recorder.js addTurn, from the stored, redacted turn):
 *   {clientId, taskDescription, mode, step, startedAt, stoppedAt, turns (the recording's, chat included), chats, chatIds,
 *    items: [{type, label, page, at}] (newest first by `at`, the turn's timestamp: a click's turn is stored after the
 *    load it caused, its screenshot taken first; at most RING_SIZE)}
 * Chat turns are counted once by client_id, whichever way they went: the recorder's own path, or the live session's
 * socket (the side panel reports each chat turn the session shows, C.MSG.CHAT_SEEN).
 * An item names the action's type, its target's label (accessible name, text, placeholder, name; LABEL_MAX
 * characters) and its page (host and path). Never a typed text or a field's value: only what names the target.
 *
 * Classic script: the service worker (importScripts), the side panel (<script>) and node tests load it.
 */
(function (root) {
  "use strict";

  const RING_SIZE = 10;
  const LABEL_MAX = 60;
  const TYPES = {
    textInput: "type", change: "change", tabcreate: "new tab", tabremove: "close tab", tabswitch: "switch tab",
  };
  // Attributes that name an element, in order; `value` is never one (a field's value is what was typed).
  const NAMING = ["aria-label", "placeholder", "title", "alt", "name", "id"];

  function short(text) {
    const flat = String(text || "").replace(/\s+/g, " ").trim();
    return flat.length > LABEL_MAX ? `${flat.slice(0, LABEL_MAX - 1)}…` : flat;
  }

  /** "host/path" of a URL (no query, no fragment: they may carry secrets), or "". */
  function pageOf(url) {
    try {
      const parsed = new URL(url);
      return parsed.protocol === "file:" ? parsed.pathname : `${parsed.host}${parsed.pathname}`;
    } catch {
      return "";
    }
  }

  /** The label of a browser turn's element: its accessible name or text, else what names a field. */
  function labelOf(element) {
    if (!element || typeof element !== "object") return "";
    const attributes = element.attributes || {};
    const tag = String(element.tagName || "").toUpperCase();
    const editable = attributes.contenteditable; // an editor's text is what was typed in it
    const typedIn = typeof editable === "string" && editable.toLowerCase() !== "false";
    const field = typedIn || ["INPUT", "TEXTAREA", "SELECT", "FORM"].includes(tag);
    if (attributes["aria-label"]) return short(attributes["aria-label"]);
    if (!field && element.textContent) return short(element.textContent);
    for (const name of NAMING) if (attributes[name]) return short(attributes[name]);
    return tag.toLowerCase();
  }

  function typeOf(turn) {
    if (turn.type === "chat") return "chat";
    const element = (turn.arguments && turn.arguments.element) || {};
    if (turn.intent === "change" && String(element.tagName).toUpperCase() === "SELECT") return "select";
    return TYPES[turn.intent] || String(turn.intent || "action");
  }

  /** {type, label, page, at} of a stored turn. A chat turn's label is who spoke. */
  function itemOf(turn) {
    const at = Number.isFinite(turn.timestamp) ? turn.timestamp : null;
    if (turn.type === "chat") {
      return { type: "chat", label: turn.speaker === "instructor" ? "Instructor" : "Navigator", page: "", at };
    }
    const args = turn.arguments || {};
    const metadata = args.metadata || {};
    const url = turn.intent === "load" ? (args.properties || {}).url || metadata.url : metadata.url;
    return { type: typeOf(turn), label: labelOf(args.element), page: pageOf(url), at };
  }

  /** `items` with `item` in its place, newest first (an item without a time counts as the newest). */
  function placed(items, item) {
    const index = item.at === null ? 0 : items.findIndex((other) => other.at !== null && other.at <= item.at);
    const at = index < 0 ? items.length : index;
    return [...items.slice(0, at), item, ...items.slice(at)].slice(0, RING_SIZE);
  }

  /** A new record for a recording just started (`session`: lib/sessions.js). */
  function started(session) {
    return {
      clientId: session.clientId, taskDescription: session.taskDescription, mode: session.mode, step: session.step,
      startedAt: session.startedAt, stoppedAt: null, turns: 0, chats: 0, chatIds: [], items: [],
    };
  }

  /**
   * `activity` with one more turn of its recording (`stored`: by the recorder; else a chat turn the live session
   * stored, already on the server); unchanged for another recording's turn or a chat turn counted before.
   */
  function added(activity, clientId, turn, { stored = true } = {}) {
    if (!activity || activity.clientId !== clientId) return activity;
    const chatIds = activity.chatIds || [];
    const chat = turn.type === "chat";
    if (chat && turn.client_id && chatIds.includes(turn.client_id)) return activity;
    if (!chat && !stored) return activity;
    return {
      ...activity,
      turns: activity.turns + 1,
      chats: activity.chats + (chat ? 1 : 0),
      chatIds: chat && turn.client_id ? [...chatIds, turn.client_id] : chatIds,
      items: placed(activity.items, itemOf(turn)),
    };
  }

  function plural(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  /**
   * The upload part of the status line. `upload`: C.STORAGE.UPLOAD ({attempt, offline}); `queued`: turns not yet
   * sent (all recordings); `sentBefore`: whether anything was sent or kept since the panel opened. Offline while
   * the last attempts failed without reaching the server.
   */
  function uploadLine({ upload, queued, sentBefore }) {
    const retrying = upload && upload.attempt > 0;
    const unreachable = retrying && upload.offline !== false;
    const kept = plural(queued, "action");
    if (unreachable) return `Offline — ${kept} kept, will send when the server is back`;
    if (retrying) return `The server is not answering — ${kept} kept, will retry`;
    if (queued) return `${queued} to send`;
    return sentBefore ? "All sent" : "";
  }

  /** The stopped recording's upload state: "all 14 actions saved", "3 waiting to upload", or "saving…". */
  function savedLine({ turns, pending, finished }) {
    if (finished) return `all ${plural(turns, "action")} saved`;
    if (pending) return `${pending} waiting to upload`;
    return "saving…";
  }

  const api = { RING_SIZE, LABEL_MAX, pageOf, labelOf, itemOf, started, added, uploadLine, savedLine, plural };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.activity = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
