/*
 * Side panel, the recording as the annotator follows it (docs/recorder.md "Install and record"):
 *   - the mode, chosen first (solo task, chat with an instructor, step by step), showing only its controls
 *     (elements with data-modes="chat task ..."); the last mode chosen is kept in chrome.storage.local (C.STORAGE.PANEL);
 *   - while recording: the last actions captured (type, target, page), newest first, and the chat turns counted,
 *     from the service worker's activity record (lib/activity.js, in STATUS);
 *   - after Stop: a confirmation naming the recording, its upload state updating live, and its page in the app;
 *   - the status line: the recording state, then the upload state in plain words (offline, all sent).
 *
 * Loaded before sidepanel.js, which calls render() on every refresh.
 */
(function () {
  "use strict";

  const C = globalThis.WebTasks.C;
  const A = globalThis.WebTasks.activity;
  const $ = (id) => document.getElementById(id);
  const MODES = ["task", "chat", "step"];
  const DEFAULT_MODE = "task"; // someone recording alone
  const START_FIELDS = ["task-description", "websites", "category", "subcategory", "region", "assignment"];
  let shownItems = "";
  let sentBefore = false; // the upload line says "All sent" only once something was sent or kept

  async function panelPrefs() {
    return (await chrome.storage.local.get(C.STORAGE.PANEL))[C.STORAGE.PANEL] || {};
  }

  async function savePrefs(change) {
    await chrome.storage.local.set({ [C.STORAGE.PANEL]: { ...(await panelPrefs()), ...change } });
  }

  // --- Mode ----------------------------------------------------------------------------------------------

  function mode() {
    const checked = document.querySelector("#mode-choice input[name=mode]:checked");
    return checked ? checked.value : DEFAULT_MODE;
  }

  /** Show the start controls of `chosen` only. */
  function showMode(chosen) {
    for (const element of document.querySelectorAll("#start [data-modes]")) {
      element.hidden = !element.dataset.modes.split(" ").includes(chosen);
    }
    document.body.dataset.mode = chosen;
  }

  /** What START's config says of the mode: chat or task, and step (the service worker's shape, unchanged). */
  function startMode() {
    const chosen = mode();
    return {
      mode: chosen === "chat" ? "chat" : "task",
      step: chosen === "step",
      mhtml: chosen === "step" && $("task-mhtml").checked,
      instructor_sees_screen: chosen === "chat" && $("instructor-sees-screen").checked,
    };
  }

  /** After a recording started: the form emptied, so Start again does not record the same task twice. */
  function clearStartForm() {
    for (const id of START_FIELDS) $(id).value = "";
  }

  // --- Live list -----------------------------------------------------------------------------------------

  function renderItems(activity) {
    const items = (activity && activity.items) || [];
    const key = JSON.stringify(items);
    if (key === shownItems) return;
    shownItems = key;
    const list = $("actions");
    if (!items.length) {
      const empty = document.createElement("li");
      empty.className = "hint";
      empty.textContent = "Nothing captured yet: act on the page.";
      list.replaceChildren(empty);
      return;
    }
    list.replaceChildren(
      ...items.map((item) => {
        const entry = document.createElement("li");
        entry.className = "action";
        const type = document.createElement("strong");
        type.className = "action-type";
        type.textContent = item.type;
        const label = document.createElement("span");
        label.className = "action-label";
        label.textContent = item.label;
        const page = document.createElement("span");
        page.className = "action-page hint";
        page.textContent = item.page;
        entry.append(type, " ", label, " ", page);
        return entry;
      }),
    );
  }

  // --- Confirmation after Stop ---------------------------------------------------------------------------

  function renderSaved(activity, recording, prefs, serverUrl) {
    const show = Boolean(!recording && activity && activity.stoppedAt && prefs.dismissed !== activity.clientId);
    $("saved").hidden = !show;
    if (!show) return;
    $("saved-name").textContent = activity.demoName || "(not created on the server yet)";
    $("saved-task").textContent = activity.taskDescription || "";
    $("saved-state").textContent = A.savedLine(activity);
    // The review page opens a demonstration once it is recorded; an annotator sees their own there.
    const link = $("saved-link");
    link.hidden = !(activity.finished && activity.demoName && serverUrl);
    if (!link.hidden) link.href = `${serverUrl}/review/${encodeURIComponent(activity.demoName)}/`;
    $("saved").dataset.state = activity.finished ? "saved" : activity.pending ? "waiting" : "saving";
  }

  // --- Status line ---------------------------------------------------------------------------------------

  /** The technical side of an outage, kept out of the way: the uploader's last retry error. */
  function renderUploadError(upload, offline) {
    $("upload-details").hidden = !offline;
    $("upload-error").textContent = offline ? String((upload && upload.lastRetryError) || "") : "";
  }

  /**
   * Render from the worker's STATUS answer. Resolves with whether the counters' error is an outage's (the status
   * line tells it; sidepanel.js then leaves #last-error alone).
   */
  async function render(status, config) {
    const { state, counters, upload, activity } = status;
    const prefs = await panelPrefs();
    $("record-state").textContent = !state.recording ? "Not recording" : state.paused ? "Paused" : "Recording";
    if (counters.queued || counters.uploaded || (upload && upload.attempt)) sentBefore = true;
    const line = A.uploadLine({ upload, queued: counters.queued, sentBefore });
    $("upload-state").textContent = line ? ` · ${line}` : "";
    const outage = Boolean(upload && upload.attempt > 0);
    document.body.dataset.upload = outage ? (line.startsWith("Offline") ? "offline" : "retrying") : "ok";
    renderUploadError(upload, outage);
    const current = activity && state.recording ? activity : null;
    renderItems(current);
    const chats = current ? current.chats : 0;
    $("chat-count").hidden = !current || (!chats && state.mode !== "chat");
    $("chat-count").textContent = chats ? A.plural(chats, "chat message") : "No chat messages yet";
    // The chat (and its Instructor speaker) is for chat mode: solo and step recordings have no conversation.
    $("chat-form").hidden = !(state.recording && state.mode === "chat" && !state.step);
    renderSaved(activity, state.recording, prefs, config.serverUrl);
    return outage;
  }

  async function init() {
    const prefs = await panelPrefs();
    const chosen = MODES.includes(prefs.mode) ? prefs.mode : DEFAULT_MODE;
    document.querySelector(`#mode-choice input[value=${chosen}]`).checked = true;
    showMode(chosen);
    for (const input of document.querySelectorAll("#mode-choice input[name=mode]")) {
      input.addEventListener("change", () => {
        showMode(mode());
        savePrefs({ mode: mode() });
      });
    }
    $("new-recording").addEventListener("click", async () => {
      const status = await chrome.runtime.sendMessage({ target: C.TARGET.SW, type: C.MSG.STATUS });
      const shown = status && status.activity;
      await savePrefs({ dismissed: shown ? shown.clientId : null });
      $("saved").hidden = true;
      $("task-description").focus();
    });
  }

  globalThis.WebTasksPanelSession = { render, startMode, mode, clearStartForm };

  init();
})();
