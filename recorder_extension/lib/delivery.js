/*
 * The content script's messages to the service worker (content/capture.js): captures sent until the worker
 * confirms them, saved for it when the page goes away first, and the page bridge for automation.
 *
 * - A capture (CAPTURE message) is re-sent until the worker answers {ok: true} (it answers once the turn is
 *   stored): a worker that was just killed or is starting may reject or not answer. Re-sending is safe (the worker
 *   and the server key turns by client_id). Whatever is unconfirmed when the page goes away (pagehide) is saved in
 *   chrome.storage.local (C.STORAGE.PENDING_CAPTURE + client_id, with the tab's id and URL from the worker's HELLO
 *   reply); the worker stores each once and removes it.
 * - "Extension context invalidated" (the extension was reloaded or removed) means this script can no longer reach
 *   it: the content script is told once (onInvalidated) and nothing is sent any more.
 * - Page bridge: a page posts {type: PAGE_BRIDGE, id?, request}; the request goes to the worker with
 *   viaPageBridge (the worker lets it through only with config.automation) and the answer comes back as
 *   {type, id, reply | error, content}. A page can never send captures or step selections this way.
 *
 * Classic script: defines globalThis.WebTasks.delivery (and module.exports for node).
 */
(function (root) {
  "use strict";

  const W = root.WebTasks || {};
  const C = W.C || require("./constants.js");
  const RESEND_DELAYS_MS = [250, 500, 1000, 2000, 4000];

  /**
   * deps: {chrome (runtime.sendMessage, storage.local), window (the page bridge's), onInvalidated(),
   * schedule(fn, ms) (setTimeout), now() → ms, log}.
   */
  function createDelivery({
    chrome, window, onInvalidated = () => {}, schedule = (fn, ms) => setTimeout(fn, ms), now = () => Date.now(), log = console,
  }) {
    let alive = true;
    let tabId = null; // from the worker's HELLO reply; saved with captures left behind by a page that goes away
    let tabUrl = null; // the tab's URL at HELLO (the top page's, also in a cross-origin frame); saved with them too
    // Captures the worker has not answered yet (it answers once the turn is stored), by client_id.
    const unanswered = new Map();

    function onSendError(err) {
      const text = String((err && err.message) || err);
      if (/context invalidated/i.test(text)) {
        alive = false;
        onInvalidated();
      } else log.warn("[webtasks] message to the service worker failed:", text);
    }

    /** Send `message` once; `onReply(reply)` when the worker answers. */
    function send(message, onReply) {
      if (!alive) return;
      try {
        const pending = chrome.runtime.sendMessage(message);
        if (pending && typeof pending.then === "function") pending.then(onReply || null, onSendError);
      } catch (err) {
        onSendError(err);
      }
    }

    /** The worker's HELLO reply: the tab this page is in (kept for the captures saved at pagehide). */
    function hello(reply) {
      if (reply && Number.isInteger(reply.tabId)) tabId = reply.tabId;
      if (reply && typeof reply.tabUrl === "string") tabUrl = reply.tabUrl;
    }

    /** Send a CAPTURE message until the worker confirms it stored the turn. */
    function deliver(message) {
      unanswered.set(message.turn.client_id, message);
      attempt(message, 0);
    }

    function attempt(message, count) {
      const id = message.turn.client_id;
      const retry = () => {
        if (alive && unanswered.has(id) && count < RESEND_DELAYS_MS.length) {
          schedule(() => attempt(message, count + 1), RESEND_DELAYS_MS[count]);
        }
      };
      if (!alive) return;
      try {
        Promise.resolve(chrome.runtime.sendMessage(message)).then(
          (reply) => (reply && reply.ok ? unanswered.delete(id) : retry()),
          (err) => {
            onSendError(err);
            retry();
          },
        );
      } catch (err) {
        onSendError(err);
        retry();
      }
    }

    /** Hand captures the worker has not confirmed to durable storage; the worker stores each once and removes it. */
    function saveUnanswered() {
      if (!unanswered.size || !chrome || !chrome.storage || !chrome.storage.local) return;
      const entries = {};
      for (const [clientId, message] of unanswered) {
        // Written to disk: never with what the page's private fields hold (those go to the worker's memory only).
        const { privateValues: _private, ...saved } = message;
        entries[C.STORAGE.PENDING_CAPTURE + clientId] = { message: saved, tabId, tabUrl, at: now() };
      }
      unanswered.clear();
      try {
        Promise.resolve(chrome.storage.local.set(entries)).catch(onSendError);
      } catch (err) {
        onSendError(err);
      }
    }

    /**
     * A page's request {type: PAGE_BRIDGE, id?, request} for the worker; `content` is this frame's script's own view
     * of the recording (automation waits for it before acting), sent back with every reply.
     */
    function bridge(data, content) {
      const reply = (body) => window.postMessage(Object.assign({ type: C.MSG.PAGE_BRIDGE, id: data.id, reply: null, content }, body), "*");
      const request = data.request && typeof data.request === "object" ? data.request : {};
      if (request.type === C.MSG.CAPTURE || request.type === C.MSG.STEP_SELECT) {
        reply({ error: "a page cannot send captures" });
        return;
      }
      if (!alive) {
        reply({ error: "extension context invalidated" });
        return;
      }
      const message = Object.assign({}, request, { target: C.TARGET.SW, viaPageBridge: true });
      try {
        Promise.resolve(chrome.runtime.sendMessage(message)).then(
          (answer) => reply({ reply: answer === undefined ? null : answer }),
          (err) => reply({ error: String((err && err.message) || err) }),
        );
      } catch (err) {
        reply({ error: String((err && err.message) || err) });
      }
    }

    return { alive: () => alive, send, hello, deliver, saveUnanswered, bridge, unanswered };
  }

  const api = { RESEND_DELAYS_MS, createDelivery };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.delivery = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
