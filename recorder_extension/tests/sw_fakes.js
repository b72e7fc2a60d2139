/*
 * Test doubles for the service-worker tests: an in-memory version of the server's recording-ingest API
 * (same status codes and idempotency as README "Recording ingest"), a controllable clock, and a fresh
 * fake-indexeddb store per test.
 */
"use strict";

const crypto = require("node:crypto");
const zlib = require("node:zlib");
const { IDBFactory, IDBKeyRange } = require("fake-indexeddb");

const C = require("../lib/constants.js");
const { openStore } = require("../lib/store.js");
const { Kv, MemoryArea } = require("../lib/sessions.js");
const { Uploader } = require("../lib/uploader.js");

let dbCounter = 0;

/** A fresh, isolated IndexedDB store. */
function freshStore() {
  return openStore({ indexedDB: new IDBFactory(), IDBKeyRange }, `test-${++dbCounter}`);
}

function sha256(bytes) {
  return crypto.createHash("sha256").update(Buffer.from(bytes)).digest("hex");
}

function response(status, body) {
  const text = body === undefined ? "" : JSON.stringify(body);
  return { status, ok: status >= 200 && status < 300, text: async () => text };
}

/**
 * The server. `server.fetch` is the injected fetch. Failure knobs:
 *   down = true          every request throws (network error)
 *   failNext(n, status)  the next n requests answer `status` (e.g. 503) without doing anything
 *   dropResponse(n)      the next n requests are processed but the answer is lost (throws)
 *   hook(req) → response|undefined   to answer a request specially (e.g. reject a turn)
 */
class FakeServer {
  constructor() {
    this.token = "secret";
    this.recordings = new Map(); // name → {client_id, project, fields, turns: Map(client_id → json), finished, video}
    this.byClientId = new Map();
    this.blobs = new Map(); // sha → {mediaType, size, projects: Set}: stored once, answered per project
    this.log = [];
    this.down = false;
    this.failures = [];
    this.drops = 0;
    this.hook = null;
    this.fetch = this.fetch.bind(this);
  }

  failNext(n, status) {
    for (let i = 0; i < n; i++) this.failures.push(status);
  }

  dropResponse(n) {
    this.drops += n;
  }

  requests(method, pattern) {
    return this.log.filter((r) => r.method === method && pattern.test(r.path));
  }

  async fetch(url, { method = "GET", headers = {}, body } = {}) {
    const parsed = new URL(url);
    const path = parsed.pathname;
    const bundle = headers["Content-Type"] === C.BUNDLE_MEDIA_TYPE ? unframe(body, headers) : null;
    const json = typeof body === "string" && headers["Content-Type"] === "application/json" ? JSON.parse(body) : null;
    const request = { method, path, headers, body, json: bundle || json, project: parsed.searchParams.get("project") };
    this.log.push(request);
    if (this.down) throw new TypeError("Failed to fetch");
    if (this.failures.length) return response(this.failures.shift(), { detail: "unavailable", code: "error", errors: [] });
    if (headers.Authorization !== `Token ${this.token}`) {
      return response(401, { detail: "Invalid token.", code: "authentication_failed", errors: [] });
    }
    const answer = (this.hook && this.hook(request)) || this.route(request);
    if (this.drops > 0) {
      this.drops -= 1;
      throw new TypeError("connection reset after the server processed the request");
    }
    return answer;
  }

  route({ method, path, body, json, headers, project }) {
    let m;
    if (method === "POST" && path === "/api/recordings/") return this.start(json);
    if (method === "POST" && (m = /^\/api\/demonstration-tasks\/(\d+)\/start\/$/.exec(path))) {
      return this.start({ project: "alpha", ...json, demonstration_task: Number(m[1]) }); // the task's project
    }
    if (method === "POST" && path === "/api/blobs/missing/") {
      if (!json.project) return projectRequired();
      return response(200, { missing: json.sha256.filter((sha) => !this.has(sha, json.project)) });
    }
    if (method === "PUT" && (m = /^\/api\/blobs\/([0-9a-f]{64})$/.exec(path))) {
      return project ? this.putBlob(m[1], body, headers, project) : projectRequired();
    }
    if (method === "POST" && (m = /^\/api\/recordings\/([a-z]+)\/turns\/$/.exec(path))) return this.turns(m[1], json);
    if (method === "POST" && (m = /^\/api\/recordings\/([a-z]+)\/bundle\/$/.exec(path))) return this.bundle(m[1], json);
    if (method === "POST" && (m = /^\/api\/recordings\/([a-z]+)\/video\/$/.exec(path))) return this.video(m[1], json);
    if (method === "POST" && (m = /^\/api\/recordings\/([a-z]+)\/finish\/$/.exec(path))) {
      const demo = this.recordings.get(m[1]);
      if (!demo) return response(404, { detail: "not found", code: "not_found", errors: [] });
      demo.finished = true;
      demo.recordingEnd = json && json.recording_end;
      demo.finishBody = json;
      return response(200, { name: m[1], status: "recorded" });
    }
    return response(404, { detail: `no route ${method} ${path}`, code: "not_found", errors: [] });
  }

  start(json) {
    const known = this.byClientId.get(json.client_id);
    if (known) return response(200, { name: known });
    const name = "demo" + "abcdefghijklmnopqrstuvwxyz"[this.recordings.size % 26] + "xyz".slice(0, 3);
    this.recordings.set(name, { fields: json, turns: new Map(), finished: false, video: new Map() });
    this.byClientId.set(json.client_id, name);
    return response(201, { name });
  }

  /** Whether `project` has the blob (another project's copy does not count). */
  has(sha, project) {
    const blob = this.blobs.get(sha);
    return Boolean(blob && blob.projects.has(project));
  }

  putBlob(sha, body, headers, project) {
    const bytes = Buffer.from(body instanceof ArrayBuffer ? new Uint8Array(body) : body);
    if (sha256(bytes) !== sha) return response(400, { detail: "sha256 mismatch", code: "invalid", errors: [] });
    const created = !this.has(sha, project);
    const blob = this.blobs.get(sha) || { mediaType: headers["Content-Type"], size: bytes.length, projects: new Set() };
    blob.projects.add(project);
    this.blobs.set(sha, blob);
    return response(created ? 201 : 200, { sha256: sha });
  }

  /** A bundle as the real server takes it: blobs checked, then turns; stored whole or not at all. */
  bundle(name, json) {
    const demo = this.recordings.get(name);
    if (!demo) return response(404, { detail: "not found", code: "not_found", errors: [] });
    const bad = json.blobs.findIndex((blob) => sha256(blob.bytes) !== blob.sha256);
    if (bad >= 0) {
      const errors = [{ field: `blobs[${bad}].sha256`, message: "does not match the blob's bytes" }];
      return response(400, { detail: "bad blob; nothing was stored", code: "validation_failed", errors });
    }
    const project = demo.fields.project;
    const fresh = json.blobs.filter((blob) => !this.has(blob.sha256, project));
    const answer = json.turns.length ? this.turns(name, json, new Set(json.blobs.map((b) => b.sha256))) : response(201, {});
    if (answer.status >= 300) return answer;
    for (const blob of json.blobs) {
      const stored = this.blobs.get(blob.sha256) || { mediaType: blob.media_type, size: blob.size, projects: new Set() };
      stored.projects.add(project);
      this.blobs.set(blob.sha256, stored);
    }
    return fresh.length && answer.status === 200 ? response(201, {}) : answer;
  }

  turns(name, json, uploaded = new Set()) {
    const demo = this.recordings.get(name);
    if (!demo) return response(404, { detail: "not found", code: "not_found", errors: [] });
    const errors = [];
    json.turns.forEach((turn, i) => {
      for (const field of ["screenshot", "page", "bboxes"]) {
        if (turn[field] && !uploaded.has(turn[field]) && !this.has(turn[field], demo.fields.project)) {
          const message = `blob ${turn[field]} has not been uploaded to this project`;
          errors.push({ field: `turns[${i}].${field}`, message });
        }
      }
      const stored = demo.turns.get(turn.client_id);
      if (stored && stored !== JSON.stringify(turn)) {
        errors.push({ field: `turns[${i}].client_id`, message: "stored before with different content" });
      }
    });
    if (errors.length) return response(400, { detail: "invalid turns", code: "invalid", errors });
    let created = 0;
    for (const turn of json.turns) {
      if (demo.turns.has(turn.client_id)) continue;
      if (demo.finished) return response(409, { detail: `recording ${name} is recorded`, code: "conflict", errors: [] });
      demo.turns.set(turn.client_id, JSON.stringify(turn));
      created += 1;
    }
    return response(created ? 201 : 200, { created, duplicates: json.turns.length - created, turns: [] });
  }

  video(name, json) {
    const demo = this.recordings.get(name);
    if (!this.has(json.blob, demo.fields.project)) {
      return response(400, { detail: "invalid video chunk", code: "invalid", errors: [] });
    }
    demo.video.set(json.index, json);
    return response(201, json);
  }
}

/** A bundle body (gzipped when it says so) → {turns, blobs: [{sha256, media_type, size, bytes}]}. */
function unframe(body, headers) {
  let bytes = Buffer.from(body);
  if (headers["Content-Encoding"] === "gzip") bytes = zlib.gunzipSync(bytes);
  const end = bytes.indexOf(10);
  const manifest = JSON.parse(bytes.subarray(0, end).toString("utf8"));
  let offset = end + 1;
  const blobs = manifest.blobs.map((blob) => {
    const data = bytes.subarray(offset, offset + blob.size);
    offset += blob.size;
    return { ...blob, bytes: data };
  });
  if (offset !== bytes.length) throw new Error(`bundle frame: ${bytes.length - offset} bytes after the blobs`);
  return { turns: manifest.turns, blobs };
}

function projectRequired() {
  return response(400, { detail: "say which project", code: "validation_failed", errors: [{ field: "project", message: "required" }] });
}

/** A clock tests move by hand. */
function fakeClock(start = 1_700_000_000_000) {
  const clock = { t: start, now: () => clock.t, advance: (ms) => (clock.t += ms) };
  return clock;
}

const quiet = { info() {}, warn() {}, debug() {}, error() {} };

/** An uploader wired to a fake server, a fresh store, in-memory chrome.storage and a fake clock. */
async function setup({ session = {}, bundleTurns } = {}) {
  const server = new FakeServer();
  const store = await freshStore();
  const kv = new Kv(new MemoryArea());
  const clock = fakeClock();
  const scheduled = [];
  const uploader = new Uploader({
    store, kv, fetch: server.fetch, now: clock.now, random: () => 0, schedule: (ms) => scheduled.push(ms),
    log: quiet, bundleTurns,
  });
  const active = {
    clientId: "session-1", demoName: null, serverUrl: "http://server.test", token: "secret", project: "alpha",
    mode: "chat", taskDescription: "Find the weather", websites: [], category: "", subcategory: "", region: "",
    instructorSeesScreen: true, startedAt: clock.t, timezoneOffsetMinutes: 0, userAgent: "test", recorderVersion: C.VERSION,
    paused: false, finishing: false, stoppedAt: null, noFrames: false, error: null, ...session,
  };
  await kv.set(C.STORAGE.SESSION, active);
  return { server, store, kv, clock, scheduled, uploader, session: active };
}

let turnCounter = 0;

/** Store a chat or browser turn with the given blobs (each {content, mediaType}); resolves with it. */
async function addTurn(ctx, { blobs = {}, frames = [], readyAt = 0, intent = "click", session } = {}) {
  const id = `t-${++turnCounter}`;
  const made = {};
  for (const [field, content] of Object.entries(blobs)) {
    const bytes = Buffer.from(content);
    made[field] = { sha256: sha256(bytes), bytes: new Uint8Array(bytes).buffer, mediaType: mediaFor(field) };
  }
  const turn = {
    client_id: id, type: "browser", timestamp: turnCounter / 10, intent,
    arguments: { metadata: { url: "https://example.com/", tabId: 1 } },
  };
  for (const [field, blob] of Object.entries(made)) turn[field] = blob.sha256;
  const frameBlobs = frames.map((content) => {
    const bytes = Buffer.from(content);
    return { sha256: sha256(bytes), bytes: new Uint8Array(bytes).buffer, mediaType: "image/png" };
  });
  if (frameBlobs.length) turn.frames = frameBlobs.map((b, i) => ({ screenshot: b.sha256, timestamp: i, label: "before" }));
  await ctx.store.addTurn({
    session: session || ctx.session.clientId, turn, blobs: [...Object.values(made), ...frameBlobs], readyAt, now: ctx.clock.t,
  });
  return turn;
}

function mediaFor(field) {
  return { screenshot: "image/png", page: "text/html", bboxes: "application/json" }[field];
}

module.exports = { FakeServer, freshStore, fakeClock, setup, addTurn, sha256, quiet, response };
