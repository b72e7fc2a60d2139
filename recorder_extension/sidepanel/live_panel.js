/*
 * The side panel's part of the live session (README, "Live session"): while a chat-mode demonstration records,
 * the panel joins its session over the socket (lib/live.js, authenticated by the API token in the join message),
 * shows the conversation, the instructor's presence and the invitation link, and sends the navigator's messages.
 *
 * When the socket is not live (server unreachable, refused), or the message is typed for the instructor (a
 * navigator transcribing an instructor who is not on the platform), the panel uses the recorder's own chat path
 * instead (the service worker stores the turn and uploads it with the others); a message takes one path, never both.
 * When the instructor ends the demonstration, the panel stops the recording.
 *
 * The panel reports its recording-clock reading (seconds since the session's `startedAt`, the clock of the
 * recorder's turns) in the join and in pings, so the server timestamps chat on that clock. Messages not yet
 * acknowledged are kept in chrome.storage.local and sent again when the panel is opened next.
 */
(function () {
  "use strict";

  const { LiveSession, sessionUrl, chromeStorage, STATES } = globalThis.WebTasks.LiveSession;
  // Unacknowledged messages: one recording at a time, so one entry (it names its session).
  const UNACKED_KEY = globalThis.WebTasks.C.STORAGE.LIVE_UNACKED;
  const $ = (id) => document.getElementById(id);
  const STATE_TEXT = {
    connecting: "connecting…",
    live: "connected",
    reconnecting: "reconnecting…",
    refused: "refused by the server",
    stopped: "closed",
  };
  let live = null;
  let key = "";
  let serverUrl = "";
  let onEnded = () => {};
  const pending = new Map(); // client id → list item

  function item(speaker, utterance) {
    const entry = document.createElement("li");
    entry.className = speaker;
    const who = document.createElement("strong");
    who.textContent = speaker === "navigator" ? "You" : "Instructor";
    entry.append(who, `: ${utterance}`);
    return entry;
  }

  function showTurn(turn) {
    if (turn.type !== "chat") return;
    // Counted in the panel's activity (once per client_id, whichever path the turn took).
    const seen = { target: globalThis.WebTasks.C.TARGET.SW, type: globalThis.WebTasks.C.MSG.CHAT_SEEN };
    chrome.runtime.sendMessage({ ...seen, turn: { client_id: turn.client_id, speaker: turn.speaker, timestamp: turn.timestamp } }).catch(() => {});
    const entry = pending.get(turn.client_id) || item(turn.speaker, turn.utterance);
    pending.delete(turn.client_id);
    entry.classList.remove("pending");
    $("live-messages").append(entry);
    entry.scrollIntoView({ block: "nearest" });
  }

  function onMessage(message) {
    switch (message.type) {
      case "welcome":
        if (message.status !== "recording") onEnded(); // ended while the panel was away
        showInvite(message);
        break;
      case "invite": // revoked and replaced, or used by the instructor
        showInvite(message);
        break;
      case "turn":
        showTurn(message.turn);
        break;
      case "presence":
        if (message.role === "instructor") {
          $("live-instructor").textContent = message.present ? `${message.user} is here` : "not connected";
        }
        break;
      case "ended":
        $("live-state").textContent = "the demonstration was ended";
        onEnded();
        break;
      case "error":
        if (message.client_id && pending.has(message.client_id)) pending.get(message.client_id).classList.add("failed");
        $("live-error").textContent = message.detail;
        $("live-error").hidden = false;
        break;
      default:
        break;
    }
  }

  /** The invitation link (one use, expiring), or nothing once the demonstration has its instructor. */
  function showInvite(message) {
    $("live-invite").value = message.invite ? `${serverUrl}/sessions/join/${message.invite}` : "";
    $("live-invite-expires").textContent = message.invite_expires_at
      ? new Date(message.invite_expires_at).toLocaleString()
      : "";
    $("live-invite-line").hidden = !message.invite;
  }

  /** Revoke the link (someone it should not reach has it): the server answers with the new one. */
  function revokeInvite() {
    if (live) live.send({ type: "revoke_invite" });
  }

  function onState(state) {
    $("live-state").textContent = STATE_TEXT[state] || state;
    $("live").dataset.state = state;
  }

  /** Seconds on the recording clock now (the recorder's turns use the same: lib/clock.js). */
  function recordingClock(startedAt) {
    const ms = Date.now() - Number(startedAt);
    return Number.isFinite(ms) ? Math.max(0, ms) / 1000 : null;
  }

  /** Join, keep or leave the session to match the recording state (called on every panel refresh).
   * `startedAt`: the recording session's start (ms epoch), for the clock reading. */
  function sync(state, server, token, ended, startedAt) {
    onEnded = ended;
    const wanted = state.recording && state.mode === "chat" && state.demoName && server && token;
    const nextKey = wanted ? `${server}|${state.demoName}` : "";
    if (nextKey === key) return;
    if (live) live.stop();
    live = null;
    key = nextKey;
    serverUrl = server;
    pending.clear();
    $("live-messages").replaceChildren();
    $("live-invite-line").hidden = true;
    $("live-instructor").textContent = "not connected";
    $("live").hidden = !wanted;
    if (!wanted) return;
    live = new LiveSession({
      url: sessionUrl(server, state.demoName),
      token,
      onMessage,
      onState,
      clock: startedAt ? () => recordingClock(startedAt) : null,
      storage: globalThis.chrome && chrome.storage ? chromeStorage(chrome.storage.local) : null,
      storageKey: UNACKED_KEY,
    });
    live.start();
  }

  /** Whether a message from ``speaker`` goes over the socket now. */
  function canSend(speaker) {
    return Boolean(live) && live.state === STATES.LIVE && speaker === "navigator";
  }

  function say(utterance) {
    const entry = item("navigator", utterance);
    entry.classList.add("pending");
    pending.set(live.say(utterance), entry);
    $("live-messages").append(entry);
    $("live-error").hidden = true;
  }

  $("live-revoke-invite").addEventListener("click", revokeInvite);

  globalThis.WebTasksPanelLive = { sync, canSend, say };
})();
