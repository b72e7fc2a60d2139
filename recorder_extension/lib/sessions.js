/*
 * Durable recording state in chrome.storage.local: the active session, the outbox of stopped sessions
 * still uploading, and the counters the side panel shows. The service worker is killed at any time, so
 * every change is written through at once; read-modify-write goes through `Kv.mutate`, serialised per key.
 *
 * Session (C.STORAGE.SESSION while recording; then in C.STORAGE.OUTBOX until finished on the server):
 *   {clientId, demoName, serverUrl, token, project, mode, taskDescription, websites, category, subcategory,
 *    region, instructorSeesScreen, instructor, startedAt (ms epoch), timezoneOffsetMinutes, userAgent,
 *    recorderVersion, paused, video, finishing, stoppedAt, noFrames, error}
 */
(function (root) {
  "use strict";

  const C = root.WebTasks && root.WebTasks.C ? root.WebTasks.C : require("./constants.js");

  const EMPTY_COUNTERS = Object.freeze({
    captured: 0, queued: 0, uploaded: 0, failed: 0, videoChunks: 0, lastError: null, lastErrorAt: null,
  });

  /** Key-value store with serialised read-modify-write. `area` has chrome.storage's get/set/remove. */
  class Kv {
    constructor(area) {
      this.area = area;
      this.chains = new Map();
    }

    async get(key) {
      const found = await this.area.get(key);
      return found[key];
    }

    set(key, value) {
      return this.area.set({ [key]: value });
    }

    remove(key) {
      return this.area.remove(key);
    }

    /** `change(value) → new value` (undefined: remove), one at a time per key in this context. */
    mutate(key, change) {
      const previous = this.chains.get(key) || Promise.resolve();
      const next = previous.then(async () => {
        const value = change(await this.get(key));
        if (value === undefined) await this.remove(key);
        else await this.set(key, value);
        return value;
      });
      this.chains.set(key, next.catch(() => {}));
      return next;
    }
  }

  /** chrome.storage-like area in memory, for node tests. */
  class MemoryArea {
    constructor(initial = {}) {
      this.data = JSON.parse(JSON.stringify(initial));
    }
    async get(key) {
      if (key === null) return JSON.parse(JSON.stringify(this.data));
      return key in this.data ? { [key]: JSON.parse(JSON.stringify(this.data[key])) } : {};
    }
    async set(items) {
      Object.assign(this.data, JSON.parse(JSON.stringify(items)));
    }
    async remove(key) {
      delete this.data[key];
    }
  }

  /** The active session and the outbox, oldest first: everything that may still need uploading. */
  async function allSessions(kv) {
    const active = await kv.get(C.STORAGE.SESSION);
    const outbox = (await kv.get(C.STORAGE.OUTBOX)) || [];
    return active ? [...outbox, active] : outbox;
  }

  /** Apply `change(session) → session` to the session with `clientId`, wherever it is stored. */
  async function updateSession(kv, clientId, change) {
    let updated = null;
    await kv.mutate(C.STORAGE.SESSION, (active) => {
      if (!active || active.clientId !== clientId) return active;
      return (updated = change(active));
    });
    if (updated) return updated;
    await kv.mutate(C.STORAGE.OUTBOX, (outbox = []) =>
      outbox.map((s) => (s.clientId === clientId ? (updated = change(s)) : s)),
    );
    return updated;
  }

  /** Stop the active session: it moves to the outbox with `finishing` set. Resolves with it (or null). */
  async function stopActive(kv, now) {
    let stopped = null;
    await kv.mutate(C.STORAGE.SESSION, (active) => {
      if (active) stopped = { ...active, paused: false, finishing: true, stoppedAt: now };
      return undefined;
    });
    if (stopped) await kv.mutate(C.STORAGE.OUTBOX, (outbox = []) => [...outbox, stopped]);
    return stopped;
  }

  /** Remove a finished session from the outbox. */
  function dropFromOutbox(kv, clientId) {
    return kv.mutate(C.STORAGE.OUTBOX, (outbox = []) => outbox.filter((s) => s.clientId !== clientId));
  }

  /** Build a new session from the side panel's (or automation's) config. Throws on a missing field. */
  function newSession(config, { clientId, now, userAgent, timezoneOffsetMinutes }) {
    for (const field of ["serverUrl", "token", "project"]) {
      if (!config || !config[field]) throw new Error(`${field} is required to start a demonstration`);
    }
    const mode = config.mode === "task" ? "task" : "chat";
    return {
      clientId,
      demoName: null,
      serverUrl: String(config.serverUrl).replace(/\/+$/, ""),
      token: config.token,
      project: config.project,
      mode,
      taskDescription: config.task_description || config.taskDescription || "",
      websites: listOf(config.websites),
      category: config.category || "",
      subcategory: config.subcategory || "",
      region: config.region || "",
      instructorSeesScreen: config.instructor_sees_screen !== undefined
        ? Boolean(config.instructor_sees_screen)
        : config.instructorSeesScreen !== false,
      instructor: config.instructor || null,
      assignment: Number(config.assignment) > 0 ? Number(config.assignment) : null,  // a form-task assignment
      startedAt: now,
      timezoneOffsetMinutes: timezoneOffsetMinutes || 0,
      userAgent: userAgent || "",
      recorderVersion: C.VERSION,
      paused: false,
      video: Boolean(config.video),
      step: Boolean(config.step), // step mode (lib/step.js): select an element, then pick the operation
      mhtml: Boolean(config.step && config.mhtml), // step mode: an MHTML snapshot of the page before each step
      // a Mind2Web demonstration task (docs/mind2web.md): the recording is started through it
      demonstrationTask: Number(config.demonstration_task) > 0 ? Number(config.demonstration_task) : null,
      confirmedTask: null, // the task description as confirmed at the end (sent with finish)
      finishing: false,
      stoppedAt: null,
      noFrames: false,
      error: null,
    };
  }

  /** "a.com, b.org" or ["a.com"] → ["a.com", "b.org"]. */
  function listOf(value) {
    const items = Array.isArray(value) ? value : String(value || "").split(/[\s,]+/);
    return items.map((s) => String(s).trim()).filter(Boolean);
  }

  /** The body of POST /api/recordings/ for a session. */
  function recordingBody(session) {
    const body = {
      project: session.project,
      client_id: session.clientId,
      mode: session.mode,
      task_description: session.taskDescription,
      websites: session.websites,
      category: session.category,
      subcategory: session.subcategory,
      region: session.region,
      instructor_sees_screen: session.instructorSeesScreen,
      recording_start: new Date(session.startedAt).toISOString(),
      timezone_offset_minutes: session.timezoneOffsetMinutes,
      user_agent: (session.userAgent || "").slice(0, 500),
      recorder_version: session.recorderVersion,
    };
    if (session.instructor) body.instructor = session.instructor;
    if (session.assignment) body.assignment = session.assignment;
    return body;
  }

  /** The body of POST /api/demonstration-tasks/<id>/start/: the server fills the task, website and mode. */
  function demonstrationStartBody(session) {
    const body = recordingBody(session);
    const keys = ["client_id", "recording_start", "timezone_offset_minutes", "user_agent", "recorder_version"];
    return Object.fromEntries(keys.map((key) => [key, body[key]]));
  }

  /** The body of POST /api/recordings/<name>/finish/. */
  function finishBody(session, endMs) {
    const body = { recording_end: new Date(endMs).toISOString() };
    if (session.confirmedTask) body.task_description = session.confirmedTask;
    return body;
  }

  /** The recording state content scripts and the panel see. */
  function publicState(session, config) {
    return {
      recording: Boolean(session),
      paused: Boolean(session && session.paused),
      mode: session ? session.mode : null,
      step: Boolean(session && session.step),
      demoName: session ? session.demoName : null,
      privateSelectors: (config && config.privateSelectors) || [],
    };
  }

  /** Counters with `change` applied (an object of increments for numbers, values for the rest). */
  function bumpCounters(kv, change) {
    return kv.mutate(C.STORAGE.COUNTERS, (counters) => {
      const next = { ...EMPTY_COUNTERS, ...(counters || {}) };
      for (const [key, value] of Object.entries(change)) {
        next[key] = typeof value === "number" && typeof EMPTY_COUNTERS[key] === "number" && key !== "queued"
          ? next[key] + value
          : value;
      }
      return next;
    });
  }

  /** A session without its token, for STATUS answers and the panel. */
  function redacted(session) {
    if (!session) return null;
    const { token, ...rest } = session;
    return { ...rest, token: token ? "…" : null };
  }

  const api = {
    Kv, MemoryArea, EMPTY_COUNTERS, allSessions, updateSession, stopActive, dropFromOutbox, newSession,
    recordingBody, demonstrationStartBody, finishBody, publicState, bumpCounters, redacted, listOf,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.sessions = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
