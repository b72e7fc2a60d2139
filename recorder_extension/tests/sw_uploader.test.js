/* The upload loop against an in-memory server: batching, ordering, dedup, backoff, refusals, finish. */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const C = require("../lib/constants.js");
const { STATE } = require("../lib/store.js");
const sessions = require("../lib/sessions.js");
const { setup, addTurn, sha256 } = require("./sw_fakes.js");

async function counters(ctx) {
  return ctx.kv.get(C.STORAGE.COUNTERS);
}

async function stop(ctx) {
  await sessions.stopActive(ctx.kv, ctx.clock.t);
  await ctx.store.releaseTurns(ctx.session.clientId);
}

test("creates the recording once and uploads turns in seq order with their blobs", async () => {
  const ctx = await setup();
  const first = await addTurn(ctx, { blobs: { screenshot: "png-1", page: "<html>1</html>", bboxes: "{}" } });
  const second = await addTurn(ctx, { blobs: { screenshot: "png-2" } });
  const result = await ctx.uploader.pump();
  assert.equal(result.status, "idle");
  assert.equal(ctx.server.requests("POST", /^\/api\/recordings\/$/).length, 1);
  const demo = [...ctx.server.recordings.values()][0];
  assert.deepEqual([...demo.turns.keys()], [first.client_id, second.client_id]);
  assert.equal((await ctx.kv.get(C.STORAGE.SESSION)).demoName, [...ctx.server.recordings.keys()][0]);
  assert.equal(ctx.server.blobs.get(sha256(Buffer.from("<html>1</html>"))).mediaType, "text/html");
  const c = await counters(ctx);
  assert.equal(c.uploaded, 2);
  assert.equal(c.queued, 0);
  assert.equal(demo.fields.client_id, "session-1");
  assert.equal(demo.fields.task_description, "Find the weather");
});

test("sends what the server validates: the turn without local bookkeeping fields", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "png" } });
  await ctx.uploader.pump();
  const sent = ctx.server.requests("POST", /\/bundle\/$/)[0].json.turns[0];
  assert.deepEqual(Object.keys(sent).sort(), ["arguments", "client_id", "intent", "screenshot", "timestamp", "type"]);
});

test("a bundle carries each blob not yet uploaded once, without asking the server first", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "first" } });
  await addTurn(ctx, { blobs: { screenshot: "shared" } });
  await addTurn(ctx, { blobs: { screenshot: "shared" }, frames: ["shared"] });
  await ctx.uploader.pump();
  assert.equal(ctx.server.requests("PUT", /^\/api\/blobs\//).length, 0, "no request per blob");
  assert.equal(ctx.server.requests("POST", /missing/).length, 0, "no missing-check round trip");
  const bundles = ctx.server.requests("POST", /\/bundle\/$/);
  assert.equal(bundles.length, 1);
  assert.deepEqual(bundles[0].json.blobs.map((b) => b.sha256), ["first", "shared"].map((t) => sha256(Buffer.from(t))));
  assert.equal(bundles[0].json.turns.length, 3);
});

test("a blob lost locally is asked about, for the session's project, and kept as a reference if the server has it", async () => {
  const ctx = await setup();
  const projects = new Set(["alpha"]);
  const kept = sha256(Buffer.from("server-has-it"));
  ctx.server.blobs.set(kept, { mediaType: "image/png", size: 13, projects });
  const turn = await addTurn(ctx, { blobs: { screenshot: "png" } });
  await ctx.store.updateTurn(turn.client_id, (r) => ({ ...r, turn: { ...r.turn, page: kept } }));
  await ctx.uploader.pump();
  const asked = ctx.server.requests("POST", /missing/);
  assert.equal(asked.length, 1);
  assert.deepEqual(asked[0].json, { project: "alpha", sha256: [kept] });
  const [bundle] = ctx.server.requests("POST", /\/bundle\/$/);
  assert.deepEqual(bundle.json.blobs.map((b) => b.sha256), [sha256(Buffer.from("png"))]);
  assert.equal(bundle.json.turns[0].page, kept);
  assert.deepEqual([...ctx.server.blobs.get(sha256(Buffer.from("png"))).projects], ["alpha"]);
});

test("a bundle is one gzipped request: the manifest line, then the blobs' bytes", async () => {
  const ctx = await setup();
  const turn = await addTurn(ctx, { blobs: { screenshot: "png-bytes", page: "<html>é</html>" } });
  await ctx.uploader.pump();
  const [request] = ctx.server.requests("POST", /\/bundle\/$/);
  assert.equal(request.headers["Content-Type"], "application/x-webtasks-batch");
  assert.equal(request.headers["Content-Encoding"], "gzip");
  const raw = require("node:zlib").gunzipSync(Buffer.from(request.body));
  const end = raw.indexOf(10);
  const manifest = JSON.parse(raw.subarray(0, end).toString("utf8"));
  assert.deepEqual(manifest.turns.map((t) => t.client_id), [turn.client_id]);
  assert.deepEqual(
    manifest.blobs.map((b) => [b.media_type, b.size]),
    [["image/png", 9], ["text/html", Buffer.byteLength("<html>é</html>")]],
  );
  assert.equal(raw.subarray(end + 1).toString("utf8"), "png-bytes<html>é</html>");
});

test("bytes uploaded for one project are checked and uploaded again for another", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "same-shot" } });
  await ctx.uploader.pump();
  await sessions.stopActive(ctx.kv, ctx.clock.t);
  await ctx.uploader.pump();
  // A new recording in project beta captures the very same screenshot.
  await ctx.kv.set(C.STORAGE.SESSION, { ...ctx.session, clientId: "session-2", project: "beta", demoName: null });
  await addTurn(ctx, { blobs: { screenshot: "same-shot" }, session: "session-2" });
  await ctx.uploader.pump();
  const sent = ctx.server.requests("POST", /\/bundle\/$/).map((r) => r.json.blobs.length);
  assert.deepEqual(sent, [1, 1], "the same bytes go again with the beta recording");
  assert.deepEqual([...ctx.server.blobs.get(sha256(Buffer.from("same-shot"))).projects], ["alpha", "beta"]);
  const beta = [...ctx.server.recordings.values()].find((demo) => demo.fields.project === "beta");
  assert.equal(beta.turns.size, 1);
  assert.equal((await counters(ctx)).failed || 0, 0);
});

test("does not send a blob again once the server stored it", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "same" } });
  await ctx.uploader.pump();
  await addTurn(ctx, { blobs: { screenshot: "same" } });
  await ctx.uploader.pump();
  const bundles = ctx.server.requests("POST", /\/bundle\/$/);
  assert.deepEqual(bundles.map((b) => b.json.blobs.length), [1, 0]);
  assert.equal(ctx.server.requests("POST", /missing/).length, 0);
});

test("bundles turns by UPLOAD_BUNDLE_TURNS", async () => {
  const ctx = await setup({ bundleTurns: 2 });
  for (let i = 0; i < 5; i++) await addTurn(ctx);
  await ctx.uploader.pump();
  const sizes = ctx.server.requests("POST", /\/bundle\/$/).map((r) => r.json.turns.length);
  assert.deepEqual(sizes, [2, 2, 1]);
});

test("server down: retries with growing delays, then uploads everything exactly once", async () => {
  const ctx = await setup();
  const turns = [await addTurn(ctx), await addTurn(ctx), await addTurn(ctx)];
  ctx.server.down = true;
  const delays = [];
  for (let i = 0; i < 4; i++) {
    const result = await ctx.uploader.pump();
    assert.equal(result.status, "retry");
    delays.push(result.delayMs);
    const before = ctx.server.log.length;
    assert.equal((await ctx.uploader.pump()).status, "retry", "no request before the backoff is over");
    assert.equal(ctx.server.log.length, before);
    ctx.clock.advance(result.delayMs);
  }
  assert.deepEqual(delays, [1000, 2000, 4000, 8000]);
  assert.match((await counters(ctx)).lastError, /network|Failed to fetch/);
  ctx.server.down = false;
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const demo = [...ctx.server.recordings.values()][0];
  assert.deepEqual([...demo.turns.keys()], turns.map((t) => t.client_id));
  assert.equal((await counters(ctx)).uploaded, 3);
  assert.equal((await ctx.kv.get(C.STORAGE.UPLOAD)).attempt, 0, "backoff reset after a success");
  assert.equal((await counters(ctx)).lastError, null, "the outage message is cleared once it is over");
});

test("backoff is capped at RETRY_MAX_MS", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  ctx.server.down = true;
  let last;
  for (let i = 0; i < 12; i++) {
    last = await ctx.uploader.pump();
    ctx.clock.advance(last.delayMs);
  }
  assert.equal(last.delayMs, C.TIMING.RETRY_MAX_MS);
});

test("5xx and 429 are retried like network errors", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  ctx.server.failNext(1, 503);
  assert.equal((await ctx.uploader.pump()).status, "retry");
  ctx.clock.advance(1000);
  ctx.server.failNext(1, 429);
  assert.equal((await ctx.uploader.pump()).delayMs, 2000);
  ctx.clock.advance(2000);
  assert.equal((await ctx.uploader.pump()).status, "idle");
  assert.equal((await counters(ctx)).uploaded, 1);
});

test("a lost answer after the server stored the bundle: the retry is a duplicate, nothing is stored twice", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "x" } });
  await addTurn(ctx);
  await ctx.uploader.pump(); // creates the recording and uploads
  await addTurn(ctx);
  await addTurn(ctx);
  ctx.server.dropResponse(1); // the next request is POST turns (these turns have no blobs)
  const result = await ctx.uploader.pump();
  assert.equal(result.status, "retry");
  ctx.clock.advance(result.delayMs);
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const demo = [...ctx.server.recordings.values()][0];
  assert.equal(demo.turns.size, 4);
  const posts = ctx.server.requests("POST", /\/bundle\/$/);
  assert.deepEqual(posts.at(-1).json, posts.at(-2).json, "the retry sends the very same content");
  assert.equal((await counters(ctx)).uploaded, 4);
});

test("a turn the server refuses (400) is marked failed with its message; the others are uploaded", async () => {
  const ctx = await setup();
  const turns = [await addTurn(ctx), await addTurn(ctx), await addTurn(ctx)];
  ctx.server.hook = ({ path, json }) => {
    if (!/\/bundle\/$/.test(path)) return undefined;
    const bad = json.turns.findIndex((t) => t.client_id === turns[1].client_id);
    if (bad < 0) return undefined;
    const { response } = require("./sw_fakes.js");
    return response(400, {
      detail: "invalid turns", code: "invalid",
      errors: [{ field: `turns[${bad}].arguments.element`, message: "required for element intents" }],
    });
  };
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const demo = [...ctx.server.recordings.values()][0];
  assert.deepEqual([...demo.turns.keys()], [turns[0].client_id, turns[2].client_id]);
  const failed = await ctx.store.getTurn(turns[1].client_id);
  assert.equal(failed.state, STATE.FAILED);
  assert.match(failed.error, /arguments\.element: required/);
  const c = await counters(ctx);
  assert.equal(c.failed, 1);
  assert.match(c.lastError, /refused/);
  assert.equal(ctx.server.requests("POST", /\/bundle\/$/).length, 2, "no retry loop on a 4xx");
});

test("a 400 naming no turn fails the whole bundle once", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  await addTurn(ctx);
  const { response } = require("./sw_fakes.js");
  ctx.server.hook = ({ path }) => (/\/bundle\/$/.test(path) ? response(400, { detail: "bad bundle", code: "x", errors: [] }) : undefined);
  assert.equal((await ctx.uploader.pump()).status, "idle");
  assert.equal((await counters(ctx)).failed, 2);
  assert.equal(ctx.server.requests("POST", /\/bundle\/$/).length, 1);
});

test("401 on start: lastError, session error, retried at the longest delay, no turns sent", async () => {
  const ctx = await setup({ session: { token: "wrong" } });
  await addTurn(ctx);
  const result = await ctx.uploader.pump();
  assert.equal(result.status, "waiting");
  assert.equal(result.delayMs, C.TIMING.RETRY_MAX_MS);
  assert.match((await counters(ctx)).lastError, /HTTP 401 Invalid token/);
  assert.match((await ctx.kv.get(C.STORAGE.SESSION)).error, /401/);
  assert.equal(ctx.server.requests("POST", /\/bundle\/$/).length, 0);
  await sessions.updateSession(ctx.kv, "session-1", (s) => ({ ...s, token: "secret" }));
  assert.equal((await ctx.uploader.pump()).status, "idle");
  assert.equal((await ctx.kv.get(C.STORAGE.SESSION)).error, null);
  assert.equal((await counters(ctx)).uploaded, 1);
});

test("413 halves the bundle until it fits", async () => {
  const ctx = await setup({ bundleTurns: 8 });
  for (let i = 0; i < 8; i++) await addTurn(ctx);
  const { response } = require("./sw_fakes.js");
  ctx.server.hook = ({ path, json }) =>
    /\/bundle\/$/.test(path) && json.turns.length > 2 ? response(413, { detail: "too large", code: "too_large", errors: [] }) : undefined;
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const sizes = ctx.server.requests("POST", /\/bundle\/$/).map((r) => r.json.turns.length);
  assert.deepEqual(sizes, [8, 4, 2, 2, 2, 2]);
  assert.equal((await counters(ctx)).uploaded, 8);
});

test("a blob the server refuses is dropped from the turn, which is still uploaded", async () => {
  const ctx = await setup();
  const turn = await addTurn(ctx, { blobs: { screenshot: "not a png", page: "<p>", bboxes: "{}" } });
  const { response } = require("./sw_fakes.js");
  const bad = turn.screenshot;
  ctx.server.hook = ({ path, json }) => {
    const index = /\/bundle\/$/.test(path) ? json.blobs.findIndex((b) => b.sha256 === bad) : -1;
    if (index < 0) return undefined;
    const errors = [{ field: `blobs[${index}]`, message: "not a decodable image" }];
    return response(400, { detail: `blobs[${index}]: image does not decode`, code: "invalid", errors });
  };
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const stored = JSON.parse([...ctx.server.recordings.values()][0].turns.get(turn.client_id));
  assert.equal(stored.screenshot, undefined);
  assert.equal(stored.page, turn.page);
  assert.match((await counters(ctx)).lastError, /image does not decode/);
});

test("a server without frames support: turns are re-sent without frames", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "a" }, frames: ["b"] });
  const { response } = require("./sw_fakes.js");
  ctx.server.hook = ({ path, json }) =>
    /\/bundle\/$/.test(path) && json.turns.some((t) => t.frames)
      ? response(400, { detail: "invalid", code: "invalid", errors: [{ field: "turns[0].frames", message: "unknown field" }] })
      : undefined;
  assert.equal((await ctx.uploader.pump()).status, "idle");
  assert.equal((await counters(ctx)).uploaded, 1);
  assert.equal((await ctx.kv.get(C.STORAGE.SESSION)).noFrames, true);
});

test("held-back turns wait for their readyAt; the pump asks to be woken then", async () => {
  const ctx = await setup();
  const held = await addTurn(ctx, { readyAt: ctx.clock.t + 2500 });
  const ready = await addTurn(ctx);
  const result = await ctx.uploader.pump();
  assert.equal(result.status, "waiting");
  assert.equal(result.delayMs, 2500);
  const demo = [...ctx.server.recordings.values()][0];
  assert.deepEqual([...demo.turns.keys()], [ready.client_id]);
  ctx.clock.advance(2500);
  assert.equal((await ctx.uploader.pump()).status, "idle");
  assert.deepEqual([...demo.turns.keys()], [ready.client_id, held.client_id]);
});

test("finish is posted once, only after every turn and video chunk is uploaded", async () => {
  const ctx = await setup();
  await addTurn(ctx, { blobs: { screenshot: "s" } });
  await addTurn(ctx, { readyAt: ctx.clock.t + 60000 }); // held back; stop releases it
  const chunkBytes = Buffer.from("webm-chunk-0");
  await ctx.store.addChunk({
    session: "session-1", index: 0, startedAt: 0.25,
    blob: { sha256: sha256(chunkBytes), bytes: new Uint8Array(chunkBytes).buffer, mediaType: "video/webm" },
  });
  await stop(ctx);
  ctx.server.hook = ({ path }) => {
    if (/finish/.test(path)) {
      const demo = [...ctx.server.recordings.values()][0];
      assert.equal(demo.turns.size, 2, "all turns are stored before finish");
      assert.equal(demo.video.size, 1, "the video chunk is stored before finish");
    }
    return undefined;
  };
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const [name, demo] = [...ctx.server.recordings.entries()][0];
  assert.equal(demo.finished, true);
  assert.deepEqual(demo.video.get(0), { index: 0, blob: sha256(chunkBytes), started_at: 0.25 });
  assert.equal(ctx.server.requests("POST", /finish/).length, 1);
  assert.equal(ctx.server.log.at(-1).path, `/api/recordings/${name}/finish/`);
  assert.deepEqual(await ctx.kv.get(C.STORAGE.OUTBOX), []);
  assert.equal((await ctx.kv.get(C.STORAGE.UPLOAD)).recent[0].demoName, name);
  assert.equal(await ctx.store.countPending(), 0);
  await ctx.uploader.pump();
  assert.equal(ctx.server.requests("POST", /finish/).length, 1, "nothing left to finish");
});

test("finish survives a failure: a later pump (e.g. after a worker restart) finishes", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  await stop(ctx);
  ctx.server.hook = ({ path }) => (/finish/.test(path) ? require("./sw_fakes.js").response(502, {}) : undefined);
  const result = await ctx.uploader.pump();
  assert.equal(result.status, "retry");
  assert.equal((await ctx.kv.get(C.STORAGE.OUTBOX))[0].finishing, true, "finishing is kept in storage");
  ctx.server.hook = null;
  ctx.clock.advance(result.delayMs);
  const { Uploader } = require("../lib/uploader.js");
  const restarted = new Uploader({ ...ctx.uploader.d }); // a new worker: nothing in memory
  assert.equal((await restarted.pump()).status, "idle");
  assert.equal([...ctx.server.recordings.values()][0].finished, true);
});

test("a stopped session keeps uploading while a new one records", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  await stop(ctx);
  ctx.server.down = true;
  await ctx.uploader.pump();
  ctx.server.down = false;
  await ctx.kv.set(C.STORAGE.SESSION, { ...ctx.session, clientId: "session-2", demoName: null });
  await addTurn(ctx, { session: "session-2" });
  ctx.clock.advance(1000);
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const demos = [...ctx.server.recordings.values()];
  assert.equal(demos.length, 2);
  assert.equal(demos[0].finished, true);
  assert.equal(demos[1].finished, false);
  assert.equal(demos[1].turns.size, 1);
});

test("kick coalesces concurrent calls into one more pass", async () => {
  const ctx = await setup();
  await addTurn(ctx);
  const a = ctx.uploader.kick();
  const b = ctx.uploader.kick();
  await Promise.all([a, b]);
  assert.equal(ctx.server.requests("POST", /^\/api\/recordings\/$/).length, 1);
  assert.equal((await counters(ctx)).uploaded, 1);
});

test("a demonstration task's recording is started through the task, its MHTML uploaded, its description confirmed", async () => {
  const ctx = await setup({ session: { demonstrationTask: 42, mode: "task", step: true } });
  const turn = await addTurn(ctx, { blobs: { screenshot: "png" } });
  const mhtml = Buffer.from("MIME-Version: 1.0\r\nContent-Type: multipart/related\r\n\r\n");
  const raw = { sha256: sha256(mhtml), bytes: new Uint8Array(mhtml).buffer, mediaType: "multipart/related" };
  await ctx.store.putBlobs([raw]);
  await ctx.store.updateTurn(turn.client_id, (r) => ({
    ...r, turn: { ...r.turn, arguments: { ...r.turn.arguments, properties: { stepOp: "CLICK", mhtml: raw.sha256 } } },
  }));
  await sessions.updateSession(ctx.kv, ctx.session.clientId, (s) => ({ ...s, confirmedTask: "Edited task" }));
  await stop(ctx);
  await ctx.uploader.pump();
  assert.equal(ctx.server.requests("POST", /^\/api\/recordings\/$/).length, 0);
  const [started] = ctx.server.requests("POST", /^\/api\/demonstration-tasks\/42\/start\/$/);
  assert.deepEqual(Object.keys(started.json).sort(), ["client_id", "recorder_version", "recording_start", "timezone_offset_minutes", "user_agent"]);
  assert.equal(ctx.server.blobs.get(raw.sha256).mediaType, "multipart/related");
  const demo = [...ctx.server.recordings.values()][0];
  assert.equal(JSON.parse(demo.turns.get(turn.client_id)).arguments.properties.mhtml, raw.sha256);
  assert.equal(demo.finishBody.task_description, "Edited task");
});

test("a single turn too large with its blobs is sent again without them", async () => {
  const ctx = await setup();
  const turn = await addTurn(ctx, { blobs: { screenshot: "huge", page: "<p>" } });
  const { response } = require("./sw_fakes.js");
  ctx.server.hook = ({ path, json }) =>
    /\/bundle\/$/.test(path) && json.blobs.length ? response(413, { detail: "too large", code: "too_large", errors: [] }) : undefined;
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const stored = JSON.parse([...ctx.server.recordings.values()][0].turns.get(turn.client_id));
  assert.equal(stored.screenshot, undefined);
  assert.equal(stored.page, undefined);
  assert.equal((await counters(ctx)).uploaded, 1);
  assert.match((await counters(ctx)).lastError, /too large/);
});

test("a bundle the server refuses for a blob's hash stores nothing; the turn goes again without it", async () => {
  const ctx = await setup();
  const turn = await addTurn(ctx, { blobs: { screenshot: "shot", page: "<p>" } });
  const original = ctx.server.bundle.bind(ctx.server);
  let first = true;
  ctx.server.bundle = (name, json) => {
    if (first) {
      first = false;
      json.blobs[0].bytes = Buffer.from("tampered in transit");
    }
    return original(name, json);
  };
  assert.equal((await ctx.uploader.pump()).status, "idle");
  const demo = [...ctx.server.recordings.values()][0];
  const stored = JSON.parse(demo.turns.get(turn.client_id));
  assert.equal(stored.screenshot, undefined);
  assert.equal(stored.page, turn.page);
  assert.equal(ctx.server.requests("POST", /\/bundle\/$/).length, 2);
});
