/*
 * The session pages (instruct, navigate): chat, presence, the navigator's latest screen, "end demonstration".
 * The protocol (join, resume, resend) is in /static/recorder_lib/live.js, shared with the recorder's side panel.
 * What the instructor may see is decided by the server: under the no-vision rule no URL or screenshot arrives.
 */
(function () {
  "use strict";

  const { LiveSession, webStorage } = window.WebTasks.LiveSession;
  const $ = (id) => document.getElementById(id);
  const page = $("session");
  const role = page.dataset.role;
  const pending = new Map(); // client id → list item not yet stored by the server
  const STATE_TEXT = {
    connecting: "Connecting…",
    live: "Connected",
    reconnecting: "Connection lost; reconnecting…",
    refused: "You cannot join this session.",
    stopped: "Disconnected",
  };

  function messageItem(speaker, utterance) {
    const item = document.createElement("li");
    item.className = `chat ${speaker}`;
    const who = document.createElement("strong");
    who.textContent = speaker === role ? "You" : speaker[0].toUpperCase() + speaker.slice(1);
    const text = document.createElement("span");
    text.className = "utterance";
    text.textContent = utterance;
    item.append(who, ": ", text);
    return item;
  }

  function showChat(seq, turn) {
    const item = pending.get(turn.client_id) || messageItem(turn.speaker, turn.utterance);
    pending.delete(turn.client_id);
    item.classList.remove("pending");
    item.dataset.seq = seq;
    $("messages").append(item); // in seq order, after anything stored before it
    item.scrollIntoView({ block: "nearest" });
  }

  function showScreen(turn) {
    if (turn.url && $("screen-url")) $("screen-url").textContent = turn.url;
    if (turn.intent && $("screen-action")) $("screen-action").textContent = turn.intent;
    if (turn.screenshot && $("screen-shot")) {
      $("screen-shot").src = `${page.dataset.screenshots}${turn.screenshot}`;
      $("screen-shot").dataset.sha256 = turn.screenshot;
      $("screen-shot").hidden = false;
    }
  }

  function showPresence(message) {
    const badge = $(`presence-${message.role}`);
    if (!badge) return;
    badge.textContent = message.present ? `${message.user} is here` : "not connected";
    badge.dataset.present = message.present ? "yes" : "no";
  }

  function showEnded() {
    $("ended").hidden = false;
    if ($("invitation")) $("invitation").hidden = true; // nobody can join an ended demonstration
    for (const control of document.querySelectorAll("#chat-form input, #chat-form button, #end-button")) {
      control.disabled = true;
    }
  }

  /** The invitation changed: revoked and replaced (elsewhere), or used by the instructor (no link any more). */
  function showInvite(message) {
    const block = $("invitation");
    if (!block) return;
    block.hidden = !message.invite;
    if (message.invite) $("invite-url").value = new URL(`/sessions/join/${message.invite}`, location.href).href;
  }

  function onMessage(message) {
    switch (message.type) {
      case "welcome":
        if (message.status !== "recording") showEnded();
        break;
      case "turn":
        if (message.turn.type === "chat") showChat(message.seq, message.turn);
        else showScreen(message.turn);
        break;
      case "presence":
        showPresence(message);
        break;
      case "ended":
        showEnded();
        break;
      case "invite":
        showInvite(message);
        break;
      case "error":
        $("error").textContent = message.detail;
        $("error").hidden = false;
        if (message.client_id && pending.has(message.client_id)) pending.get(message.client_id).classList.add("failed");
        break;
      default:
        break;
    }
  }

  function onState(state, detail = {}) {
    // A socket closed because its access ended says why (the server's close reason).
    $("connection").textContent = detail.message ? `Closed: ${detail.message}.` : STATE_TEXT[state] || state;
    $("connection").dataset.state = state;
  }

  const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  // Messages not yet acknowledged are kept per demonstration and role, and sent again when the page is opened next.
  const session = new LiveSession({
    url: scheme + window.location.host + page.dataset.wsPath,
    onMessage,
    onState,
    storage: webStorage(window.localStorage),
    storageKey: `webtasks.live.unacked:${page.dataset.wsPath}:${role}`,
  });

  $("chat-form")?.addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("chat-input");
    const utterance = input.value.trim();
    if (!utterance) return;
    const item = messageItem(role, utterance);
    item.classList.add("pending");
    pending.set(session.say(utterance), item);
    $("messages").append(item);
    input.value = "";
    $("error").hidden = true;
  });
  if ($("end-button")) {
    $("end-button").addEventListener("click", () => {
      if (window.confirm("End this demonstration? Nobody can add to it afterwards.")) session.end();
    });
  }
  session.start();
})();
