/*
 * Side panel, Mind2Web part: the annotator's demonstration tasks (GET /api/demonstration-tasks/, docs/mind2web.md)
 * with "Explore" (opens the website; nothing is recorded) and "Start" (a step-mode recording linked to the task),
 * and step mode's questions: the element selected on the page, then its operation (STEP_OPERATE), and the task
 * description to confirm or edit before stopping (sent with STOP, then with finish).
 *
 * Loaded after sidepanel.js, whose send/getConfig/showError/refresh it uses (globalThis.WebTasksPanel).
 */
(function () {
  "use strict";

  const C = globalThis.WebTasks.C;
  const P = globalThis.WebTasksPanel;
  const $ = (id) => document.getElementById(id);
  let shownFor = null; // the recording whose description is in the textarea (the annotator's edits are kept)
  let tasksFor = null; // "server project token" the task list was loaded for
  let tasks = [];

  async function api(config, method, path, body) {
    const response = await fetch(`${config.serverUrl}${path}`, {
      method,
      headers: { Authorization: `Token ${config.token}`, Accept: "application/json", "Content-Type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = await response.json().catch(() => null);
    if (!response.ok) throw new Error((answer && answer.detail) || `HTTP ${response.status}`);
    return answer;
  }

  // --- Demonstration tasks -------------------------------------------------------------------------------

  async function loadTasks(config) {
    if (!config.serverUrl || !config.token || !config.project) return;
    tasksFor = `${config.serverUrl} ${config.project} ${config.token}`;
    $("tasks-result").textContent = "Loading…";
    try {
      const query = `?task__batch__project__name=${encodeURIComponent(config.project)}`;
      tasks = await api(config, "GET", `/api/demonstration-tasks/${query}`);
      $("tasks-result").textContent = tasks.length ? "" : "No demonstration tasks assigned to you in this project.";
    } catch (error) {
      tasks = [];
      $("tasks-result").textContent = `Could not list your tasks: ${error.message}`;
    }
    renderTasks();
  }

  function renderTasks() {
    const list = $("task-list");
    list.replaceChildren();
    for (const task of tasks) {
      const item = document.createElement("li");
      item.dataset.task = String(task.id);
      const text = document.createElement("p");
      text.className = "task-text";
      text.textContent = task.task;
      const where = document.createElement("p");
      where.className = "hint";
      where.textContent = [task.website, task.domain, task.subdomain].filter(Boolean).join(" · ");
      const explore = document.createElement("button");
      explore.type = "button";
      explore.className = "task-explore";
      explore.textContent = "Explore";
      explore.addEventListener("click", () => chrome.tabs.create({ url: task.url }));
      const start = document.createElement("button");
      start.type = "button";
      start.className = "task-start";
      start.textContent = "Start";
      start.addEventListener("click", () => startTask(task, start));
      item.append(text, where, explore, start);
      list.append(item);
    }
  }

  async function startTask(task, button) {
    const config = await P.getConfig();
    button.disabled = true;
    try {
      const host = (() => {
        try {
          return new URL(task.url).host;
        } catch {
          return "";
        }
      })();
      const result = await P.send(C.MSG.START, {
        config: {
          ...config, project: task.project, mode: "task", step: true, mhtml: $("task-mhtml").checked,
          demonstration_task: task.id, task_description: task.task, websites: host, category: task.domain || "",
          subcategory: task.subdomain || "",
        },
      });
      if (!result || !result.ok) P.showError(`Could not start: ${(result && result.error) || "no answer"}`);
    } finally {
      button.disabled = false;
      P.refresh();
    }
  }

  // --- Step mode -----------------------------------------------------------------------------------------

  let current = null; // the last STATUS: {session, step}

  async function operate(op, value) {
    const mhtml = current && current.session && current.session.mhtml && op !== "ignore" ? await snapshot() : null;
    const result = await P.send(C.MSG.STEP_OPERATE, { op, value, mhtml });
    if (!result || !result.ok) P.showError(`Step not done: ${(result && result.error) || "no answer"}`);
    else P.showError("");
    P.refresh();
  }

  /**
   * The MHTML of the selected element's tab, base64, without the highlight (chrome.pageCapture: an extension page
   * can read its Blob, the service worker cannot). null when it fails: the step is recorded without it.
   */
  async function snapshot() {
    const selection = current.step && current.step.selection;
    if (!selection) return null;
    try {
      const hide = { target: C.TARGET.CONTENT, type: C.MSG.STEP_DONE, clear: true };
      await chrome.tabs.sendMessage(selection.tabId, hide, { frameId: selection.frameId }).catch(() => null);
      const blob = await chrome.pageCapture.saveAsMHTML({ tabId: selection.tabId });
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(binary);
    } catch (error) {
      P.showError(`No MHTML snapshot: ${error.message}`);
      return null;
    }
  }

  /** Render from the worker's STATUS answer (sidepanel.js calls it on every refresh). */
  function render(status, config) {
    current = status;
    const { state, session, step } = status;
    const stepping = Boolean(state.recording && session && session.step);
    if (!state.recording && config.project && tasksFor !== `${config.serverUrl} ${config.project} ${config.token}`) {
      loadTasks(config);
    }
    $("step").hidden = !stepping;
    document.body.dataset.stepPhase = stepping && step ? step.phase : "";
    if (!stepping) {
      shownFor = null;
      return;
    }
    if (shownFor !== session.clientId) {
      shownFor = session.clientId;
      $("step-task").value = session.taskDescription || "";
    }
    const selected = step && step.phase === "selected" && step.selection;
    $("step-selected").textContent = !step || step.phase === "idle"
      ? "Click an element on the page."
      : step.phase === "executing" ? `Performing ${step.op}…` : `Selected: ${selected.label}`;
    $("step-ops").hidden = !selected;
    $("step-type-form").hidden = !selected;
    // A private element's text is typed unseen here too (its turn records it masked).
    $("step-type-value").type = selected && selected.private ? "password" : "text";
    const options = selected && Array.isArray(selected.options) ? selected.options : null;
    $("step-select-form").hidden = !options;
    const select = $("step-select-value");
    const key = options ? JSON.stringify(options) : "";
    if (select.dataset.options !== key) {
      select.dataset.options = key;
      select.replaceChildren(...(options || []).map((o) => new Option(o.text || o.value, o.value, false, o.selected)));
    }
  }

  /** What STOP carries: the task description as confirmed or edited (step mode). */
  function stopExtra() {
    return $("step").hidden ? {} : { taskDescription: $("step-task").value };
  }

  for (const button of document.querySelectorAll("#step-ops button[data-op]")) {
    button.addEventListener("click", () => operate(button.dataset.op));
  }
  $("step-type-form").addEventListener("submit", (event) => {
    event.preventDefault();
    operate("type", $("step-type-value").value).then(() => ($("step-type-value").value = ""));
  });
  $("step-select-form").addEventListener("submit", (event) => {
    event.preventDefault();
    operate("select", $("step-select-value").value);
  });
  $("tasks-refresh").addEventListener("click", async () => loadTasks(await P.getConfig()));

  globalThis.WebTasksPanelStep = { render, stopExtra, loadTasks };
})();
