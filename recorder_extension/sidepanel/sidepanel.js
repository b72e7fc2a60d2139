/*
 * Side panel: the recorder's UI. After sign-in and the project (connect.js): start / pause / resume / stop a
 * demonstration, chat, and watch the upload counters.
 * In chat mode the conversation goes over the live session (live_panel.js) while its socket is up.
 *
 * The service worker does the work; this page sends it messages ({target: SW, type}) and renders what it
 * keeps in chrome.storage.local (config, session, counters), refreshing on every storage change.
 *
 * Automation: sidepanel.html?server=URL&token=KEY&project=NAME[&automation=1] (connect.js). automation=1 lets web
 * pages drive the recorder through the content script's page bridge (START/STOP/STATUS... messages); it is off
 * unless set there or by a command.
 */
(function () {
  "use strict";

  const C = globalThis.WebTasks.C;
  const Live = globalThis.WebTasksPanelLive; // the live session (live_panel.js)
  const Session = globalThis.WebTasksPanelSession; // mode, live list, stop confirmation, status line (session_panel.js)
  const $ = (id) => document.getElementById(id);
  let refreshTimer = null;
  let shownCounterError = ""; // the counters' lastError on display: hidden again once the worker clears it

  function send(type, extra = {}) {
    return chrome.runtime.sendMessage({ target: C.TARGET.SW, type, ...extra });
  }

  async function getConfig() {
    return (await chrome.storage.local.get(C.STORAGE.CONFIG))[C.STORAGE.CONFIG] || {};
  }

  async function saveConfig(change) {
    const config = { ...(await getConfig()), ...change };
    await chrome.storage.local.set({ [C.STORAGE.CONFIG]: config });
    return config;
  }

  // --- Recording -----------------------------------------------------------------------------------------

  function startConfig(form) {
    const data = new FormData(form);
    return {
      task_description: String(data.get("task_description") || "").trim(),
      websites: String(data.get("websites") || ""),
      category: String(data.get("category") || "").trim(),
      subcategory: String(data.get("subcategory") || "").trim(),
      region: String(data.get("region") || "").trim(),
      assignment: String(data.get("assignment") || "").trim(),
      ...Session.startMode(), // mode "chat"|"task", step, mhtml, instructor_sees_screen
      video: $("video").checked,
      project: $("project").value,
    };
  }

  async function start(event) {
    event.preventDefault();
    const config = { ...(await getConfig()), ...startConfig(event.target) };
    if (!config.serverUrl || !config.token) return showError("Sign in first.");
    if (!config.project) return showError("Pick a project first.");
    $("start-button").disabled = true;
    try {
      const result = await send(C.MSG.START, { config });
      if (!result || !result.ok) showError(`Could not start: ${(result && result.error) || "no answer"}`);
      else Session.clearStartForm();
    } finally {
      $("start-button").disabled = false;
      refresh();
    }
  }

  async function togglePause() {
    const status = await send(C.MSG.STATUS);
    await send(status && status.state.paused ? C.MSG.RESUME : C.MSG.PAUSE);
    refresh();
  }

  async function stop() {
    $("stop-button").disabled = true;
    try {
      const extra = globalThis.WebTasksPanelStep.stopExtra();
      const result = await send(C.MSG.STOP, extra);
      if (!result || !result.ok) showError(`Could not stop: ${(result && result.error) || "no answer"}`);
    } finally {
      $("stop-button").disabled = false;
      refresh();
    }
  }

  async function chat(event) {
    event.preventDefault();
    const utterance = $("chat-utterance").value.trim();
    if (!utterance) return;
    if (Live.canSend($("chat-speaker").value)) {
      Live.say(utterance); // over the live session; the recorder's own path below is the fallback
      $("chat-utterance").value = "";
      return;
    }
    const result = await send(C.MSG.CHAT, { speaker: $("chat-speaker").value, utterance });
    if (result && result.ok) $("chat-utterance").value = "";
    else showError(`Message not recorded: ${(result && result.error) || "no answer"}`);
  }

  // --- Rendering -----------------------------------------------------------------------------------------

  function showError(message) {
    $("last-error").hidden = !message;
    $("last-error").textContent = message || "";
  }

  async function refresh() {
    let status;
    try {
      status = await send(C.MSG.STATUS);
    } catch {
      return; // the worker is starting; the next storage change refreshes again
    }
    if (!status || !status.state) return;
    const { state, counters, session, outbox } = status;
    const config = await getConfig();
    $("controls").hidden = !state.recording;
    $("signin").hidden = state.recording; // the server and project of a running recording cannot change
    $("start").hidden = state.recording;
    $("status-line").classList.toggle("recording", state.recording && !state.paused);
    const outage = await Session.render(status, config);
    $("demo-name").textContent = session && session.demoName ? `(${session.demoName})` : "";
    $("pause-button").textContent = state.paused ? "Resume" : "Pause";
    const server = (session && session.serverUrl) || config.serverUrl;
    Live.sync(state, server, config.token, () => send(C.MSG.STOP), session && session.startedAt);
    globalThis.WebTasksPanelStep.render(status, config);
    $("count-captured").textContent = counters.captured;
    $("count-queued").textContent = counters.queued;
    $("count-uploaded").textContent = counters.uploaded;
    $("count-failed").textContent = counters.failed;
    $("count-video").textContent = counters.videoChunks;
    $("outbox").textContent = outbox.length
      ? `Still uploading: ${outbox.map((s) => s.demoName || "(not created yet)").join(", ")}`
      : "";
    if (counters.lastError && !outage) {
      const when = counters.lastErrorAt ? ` (${new Date(counters.lastErrorAt).toLocaleTimeString()})` : "";
      shownCounterError = `${counters.lastError}${when}`;
      showError(shownCounterError);
    } else if (shownCounterError) {
      if ($("last-error").textContent === shownCounterError) showError("");
      shownCounterError = "";
    }
  }

  /** Several storage writes come with each action: render once for a burst of them. */
  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, 150);
  }

  // --- Start-up ------------------------------------------------------------------------------------------

  async function init() {
    await globalThis.WebTasksPanelConnect.init(); // sign-in and project (connect.js)
    $("start-form").addEventListener("submit", start);
    $("pause-button").addEventListener("click", togglePause);
    $("stop-button").addEventListener("click", stop);
    $("chat-form").addEventListener("submit", chat);
    $("upload-now").addEventListener("click", () => send(C.MSG.UPLOAD_NOW).then(refresh));
    chrome.storage.onChanged.addListener((changes, area) => {
      if (area === "local") refreshSoon();
    });
    chrome.runtime.onMessage.addListener((message) => {
      if (message && message.target === C.TARGET.PANEL && message.type === C.MSG.STATE) refreshSoon();
      return false;
    });
    refresh();
  }

  // For step_panel.js (loaded after this file).
  globalThis.WebTasksPanel = { send, getConfig, showError, refresh };

  init();
})();
