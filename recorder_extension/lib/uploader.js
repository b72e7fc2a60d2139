/*
 * The durable upload loop: IndexedDB (lib/store.js) → the server's recording ingest API.
 *
 * For every session that may still need it (the active one, then stopped ones in the outbox):
 *   1. POST /api/recordings/ once (idempotent on client_id) → the demo name, saved in the session;
 *   2. per bundle of ready turns in seq order: ONE gzipped POST /api/recordings/{name}/bundle/ carrying the turns
 *      and the blobs not yet uploaded for the project (docs/ingest.md: a JSON manifest line, then the blobs'
 *      bytes), which the server stores whole or not at all; no missing-check first (POST /api/blobs/missing/ is
 *      asked only about blobs lost locally); blobs are per project on the server (a bundle's blobs go to its
 *      recording's project), so an upload mark names the project it was made for; a turn is marked uploaded
 *      only after a 2xx;
 *   3. video chunks: PUT the blob, POST /api/recordings/{name}/video/;
 *   4. when the session is stopped and nothing of it is pending: POST .../finish/, then forget it.
 * Network errors, 429 and 5xx: exponential backoff (C.TIMING.RETRY_BASE_MS..RETRY_MAX_MS), the state kept in
 * C.STORAGE.UPLOAD so a restarted service worker continues it. 401/403/404: the session's configuration is
 * wrong (token, role, project); recorded as lastError, retried at the longest delay. 400/409 naming a blob
 * (`blobs[2]...`): that blob is marked refused and the bundle is sent again without it (its turns lose the
 * reference); naming turns: those turns are marked failed with the server's message (the rest of the bundle goes
 * on); 413 halves the bundle, and a single turn's bundle too large drops its blobs.
 *
 * The wire (the request, its errors, the bundle body) is lib/upload_wire.js. Everything the loop touches is injected
 * (fetch, store, kv, clock, schedule), so node tests drive it.
 */
(function (root) {
  "use strict";

  const C = root.WebTasks && root.WebTasks.C ? root.WebTasks.C : require("./constants.js");
  const clock = root.WebTasks && root.WebTasks.clock ? root.WebTasks.clock : require("./clock.js");
  const sessions = root.WebTasks && root.WebTasks.sessions ? root.WebTasks.sessions : require("./sessions.js");
  const { STATE } = root.WebTasks && root.WebTasks.store ? root.WebTasks.store : require("./store.js");
  const wire = root.WebTasks && root.WebTasks.uploadWire ? root.WebTasks.uploadWire : require("./upload_wire.js");
  const { RetryableError, SessionError, describe, blobRefs, withoutBlobs, withoutFrames, turnIndexOf, blobIndexOf } = wire;
  const { frameBatch, gzip } = wire;

  const RETRY_PREFIX = "upload will be retried: ";

  class Uploader {
    /**
     * deps: {store, kv, fetch, now() → ms, random() → 0..1, schedule(delayMs), onChange(), log, bundleTurns,
     *        onCreated(session): the server created its recording (session.traffic learnt)}
     */
    constructor(deps) {
      this.d = { random: Math.random, schedule() {}, onChange() {}, onCreated() {}, log: console, ...deps };
      this.bundleTurns = deps.bundleTurns || C.TIMING.UPLOAD_BUNDLE_TURNS;
      this.running = null;
      this.again = false;
      this.recheckedBlobs = new Set();
    }

    /** Start a pump unless one runs; a kick during a pump makes it go round once more. */
    kick(options = {}) {
      if (this.running) {
        this.again = true;
        if (options.force) this.forceNext = true;
        return this.running;
      }
      this.running = (async () => {
        let result;
        let force = Boolean(options.force);
        try {
          do {
            this.again = false;
            result = await this.pump({ force: force || this.forceNext });
            force = this.forceNext = false;
          } while (this.again && result.status !== "retry");
        } finally {
          this.running = null;
        }
        return result;
      })();
      return this.running;
    }

    /**
     * One pass over every session. Resolves with {status: "idle" | "waiting" | "retry", delayMs?}:
     * idle = nothing left; waiting = turns held back (frames) or a session refused, wake-up scheduled;
     * retry = the server or network failed, backing off.
     */
    async pump({ force = false } = {}) {
      const now = this.d.now();
      const upload = (await this.d.kv.get(C.STORAGE.UPLOAD)) || {};
      if (!force && upload.nextAt && upload.nextAt > now) {
        this.d.schedule(upload.nextAt - now);
        return { status: "retry", delayMs: upload.nextAt - now };
      }
      let wakeAt = null;
      let refused = false;
      this.bundleTurns = this.d.bundleTurns || C.TIMING.UPLOAD_BUNDLE_TURNS; // a 413 shrinks it for this pass only
      try {
        for (const session of await sessions.allSessions(this.d.kv)) {
          try {
            const at = await this.syncSession(session);
            if (at !== null) wakeAt = wakeAt === null ? at : Math.min(wakeAt, at);
          } catch (error) {
            if (!(error instanceof SessionError)) throw error;
            refused = true;
            await this.sessionRefused(session, error.message);
          }
        }
      } catch (error) {
        return this.backOff(error);
      } finally {
        await this.refreshQueued();
      }
      if (upload.attempt || upload.nextAt) {
        await this.d.kv.mutate(C.STORAGE.UPLOAD, (u) => ({ ...(u || {}), attempt: 0, nextAt: 0 }));
        // The outage is over: its message no longer describes anything (refusals stay until the next start).
        await this.d.kv.mutate(C.STORAGE.COUNTERS, (c) =>
          c && String(c.lastError).startsWith(RETRY_PREFIX) ? { ...c, lastError: null, lastErrorAt: null } : c,
        );
        this.d.onChange();
      }
      if (refused) wakeAt = Math.min(wakeAt === null ? Infinity : wakeAt, now + C.TIMING.RETRY_MAX_MS);
      if (wakeAt === null) return { status: "idle" };
      const delayMs = Math.max(0, wakeAt - this.d.now());
      this.d.schedule(delayMs);
      return { status: "waiting", delayMs };
    }

    async backOff(error) {
      const message = error instanceof RetryableError ? error.message : `network error: ${error.message || error}`;
      const state = await this.d.kv.mutate(C.STORAGE.UPLOAD, (u) => {
        const attempt = ((u && u.attempt) || 0) + 1;
        const delay = clock.backoffDelay(attempt, C.TIMING.RETRY_BASE_MS, C.TIMING.RETRY_MAX_MS, this.d.random());
        // offline: the server could not be reached (the panel says so); else it answered with an error
        const offline = !(error instanceof RetryableError) || error.offline;
        return { ...(u || {}), attempt, nextAt: this.d.now() + delay, lastRetryError: message, offline };
      });
      await this.setError(`${RETRY_PREFIX}${message}`);
      const delayMs = state.nextAt - this.d.now();
      this.d.schedule(delayMs);
      return { status: "retry", delayMs, attempt: state.attempt };
    }

    /** Upload what is ready of one session; resolves with when to look again (ms epoch) or null. */
    async syncSession(session) {
      if (!session.serverUrl || !session.token) throw new SessionError("not signed in (server URL and token)");
      if (!session.demoName) session = await this.createRecording(session);
      if (session.error) {
        const cleared = await sessions.updateSession(this.d.kv, session.clientId, (s) => ({ ...s, error: null }));
        session = cleared || session;
      }
      const releaseAll = session.finishing;
      for (;;) {
        const now = releaseAll ? Infinity : this.d.now();
        const bundle = await this.d.store.readyTurns(session.clientId, this.bundleTurns, now);
        if (!bundle.length) break;
        session = await this.sendBundle(session, bundle);
      }
      await this.sendChunks(session);
      const summary = await this.d.store.pendingSummary(session.clientId, this.d.now());
      if (!session.finishing) return summary.notReadyUntil;
      const chunksLeft = (await this.d.store.pendingChunks(session.clientId)).length;
      if (summary.pending || chunksLeft) return this.d.now() + C.TIMING.RETRY_BASE_MS;
      await this.finish(session);
      return null;
    }

    async createRecording(session) {
      const { status, body } = session.demonstrationTask
        ? await this.request(session, "POST", `/api/demonstration-tasks/${session.demonstrationTask}/start/`, sessions.demonstrationStartBody(session))
        : await this.request(session, "POST", "/api/recordings/", sessions.recordingBody(session));
      if (status >= 400) throw new SessionError(`starting the recording failed: ${describe(status, body)}`);
      if (!body || !body.name) throw new RetryableError("the server answered without a recording name");
      this.d.log.info && this.d.log.info(`recording ${body.name} for ${session.clientId}`);
      // record_traffic: the project keeps a WebLINX recording's traffic (the service worker attaches the debugger).
      const learnt = { demoName: body.name, traffic: body.record_traffic === true };
      const saved = await sessions.updateSession(this.d.kv, session.clientId, (s) => ({ ...s, ...learnt }));
      this.d.onChange();
      this.d.onCreated(saved || { ...session, ...learnt });
      return saved || { ...session, ...learnt };
    }

    /** Send one bundle: the blobs the server is missing and the turns, in one request. Resolves with the session. */
    async sendBundle(session, records) {
      const refs = records.flatMap((r) => blobRefs(r.turn));
      const { gone, toSend } = await this.blobsToSend(session, refs, { askFirst: false });
      const turns = [];
      for (const record of records) {
        let turn = withoutBlobs(record.turn, gone);
        if (session.noFrames) turn = withoutFrames(turn);
        if (turn !== record.turn) {
          // Persist the rewrite first: a retry of this bundle must send the very same content.
          await this.d.store.updateTurn(record.client_id, (r) => ({ ...r, turn }));
          record.turn = turn;
        }
        turns.push(turn);
      }
      const body = await gzip(frameBatch(turns, toSend));
      const path = `/api/recordings/${session.demoName}/bundle/`;
      const headers = { "Content-Encoding": "gzip" };
      const { status, body: answer } = await this.request(session, "POST", path, body, C.BUNDLE_MEDIA_TYPE, headers);
      if (status < 300) {
        await this.d.store.markBlobs(toSend.map((b) => b.sha256), { uploaded: 1, project: session.project });
        return this.bundleStored(session, records);
      }
      if (await this.blobsRefused(toSend, status, answer)) return session; // sent again without them
      if (status === 413) return this.bundleTooLarge(session, records, answer, toSend);
      if (status === 400 || status === 409) return this.bundleRejected(session, records, status, answer);
      throw new SessionError(`sending turns failed: ${describe(status, answer)}`);
    }

    /** The server named blobs of the bundle (`blobs[i]...`): mark them refused. Resolves with whether it did. */
    async blobsRefused(sent, status, body) {
      const errors = (body && Array.isArray(body.errors) && body.errors) || [];
      const named = [...new Set(errors.map((e) => blobIndexOf(e.field)).filter((i) => i !== null && i < sent.length))];
      if (![400, 409, 413, 415].includes(status) || !named.length) return false;
      for (const index of named) await this.rejectBlob(sent[index].sha256, describe(status, body));
      return true;
    }

    async rejectBlob(sha, refusal) {
      await this.d.store.markBlobs([sha], { rejected: refusal });
      await this.setError(`blob ${sha.slice(0, 12)}… refused: ${refusal}`);
    }

    async bundleStored(session, records) {
      await this.d.store.markTurns(records.map((r) => r.client_id), STATE.UPLOADED);
      await sessions.bumpCounters(this.d.kv, { uploaded: records.length });
      this.d.onChange();
      return session;
    }

    async bundleTooLarge(session, records, body, sent) {
      if (records.length > 1) {
        this.bundleTurns = Math.max(1, Math.ceil(records.length / 2));
        return session;
      }
      if (sent.length) {
        // One turn with its blobs is too large: send it again without them.
        for (const blob of sent) await this.rejectBlob(blob.sha256, `too large for the server: ${describe(413, body)}`);
        return session;
      }
      await this.failTurns(records, `too large for the server: ${describe(413, body)}`);
      return session;
    }

    /** 400/409: fail the turns the server named, keep the others pending (nothing was stored). */
    async bundleRejected(session, records, status, body) {
      const errors = (body && Array.isArray(body.errors) && body.errors) || [];
      if (errors.length && errors.every((e) => /has not been uploaded/.test(e.message || ""))) {
        // Our "uploaded" marks are stale (the server lost or never kept those blobs): check them again, once.
        const key = records[0].client_id;
        if (!this.recheckedBlobs.has(key)) {
          this.recheckedBlobs.add(key);
          await this.d.store.markBlobs(records.flatMap((r) => blobRefs(r.turn)), { uploaded: 0 });
          return session;
        }
      }
      if (errors.length && !session.noFrames && errors.every((e) => /\.frames/.test(e.field || ""))) {
        // A server that does not know `frames` yet: send the turns without them from now on.
        this.d.log.warn && this.d.log.warn("server refused frames; sending turns without them");
        return sessions.updateSession(this.d.kv, session.clientId, (s) => ({ ...s, noFrames: true }));
      }
      const byIndex = new Map();
      for (const error of errors) {
        const index = turnIndexOf(error.field);
        if (index === null || index >= records.length) continue;
        byIndex.set(index, [...(byIndex.get(index) || []), `${error.field}: ${error.message}`]);
      }
      if (!byIndex.size) {
        await this.failTurns(records, describe(status, body));
      } else {
        for (const [index, messages] of byIndex) await this.failTurns([records[index]], messages.join("; "));
      }
      return session;
    }

    async failTurns(records, message) {
      await this.d.store.markTurns(records.map((r) => r.client_id), STATE.FAILED, { error: message });
      await sessions.bumpCounters(this.d.kv, { failed: records.length });
      await this.setError(`${records.length} turn(s) refused: ${message}`);
    }

    /**
     * Which of these blobs the bundle must carry and which cannot be provided (refused before, or lost locally):
     * resolves with {gone: Set of sha, toSend: [blob records]}. Blobs not yet uploaded for this project are sent;
     * with `askFirst` (one PUT per blob: video chunks) the server is asked first which it lacks. A bundle does not
     * ask for blobs it holds: the server takes bytes it has already at the cost of hashing them, cheaper than a
     * round trip per bundle; it asks only about blobs lost locally, which the server may still have.
     */
    async blobsToSend(session, shas, { askFirst = true } = {}) {
      const unique = [...new Set(shas)];
      const local = await this.d.store.getBlobs(unique);
      const gone = new Set(unique.filter((sha) => local[sha] && local[sha].rejected));
      const uploadedHere = (record) => record && record.uploaded && record.project === session.project;
      const unknown = unique.filter((sha) => !gone.has(sha) && !uploadedHere(local[sha]));
      const toAsk = askFirst ? unknown : unknown.filter((sha) => !local[sha]);
      const missing = toAsk.length ? await this.missingBlobs(session, toAsk) : new Set();
      const known = toAsk.filter((sha) => !missing.has(sha));
      if (known.length) await this.d.store.markBlobs(known, { uploaded: 1, project: session.project });
      for (const sha of missing) if (!local[sha]) gone.add(sha);
      const send = askFirst ? [...missing] : unknown;
      return { gone, toSend: send.filter((sha) => local[sha]).map((sha) => local[sha]) };
    }

    /**
     * Make sure the server has these blobs (video chunks): ask which are missing, PUT those. Resolves with the
     * set of shas that cannot be provided (refused by the server, or lost locally).
     */
    async uploadBlobs(session, shas) {
      const { gone, toSend } = await this.blobsToSend(session, shas);
      for (const blob of toSend) {
        const refusal = await this.putBlob(session, blob);
        if (refusal) {
          gone.add(blob.sha256);
          await this.rejectBlob(blob.sha256, refusal);
        } else {
          await this.d.store.markBlobs([blob.sha256], { uploaded: 1, project: session.project });
        }
      }
      return gone;
    }

    async missingBlobs(session, shas) {
      const missing = new Set();
      for (let i = 0; i < shas.length; i += 1000) {
        const part = shas.slice(i, i + 1000);
        const asked = { project: session.project, sha256: part };
        const { status, body } = await this.request(session, "POST", "/api/blobs/missing/", asked);
        if (status >= 400) throw new SessionError(`checking blobs failed: ${describe(status, body)}`);
        for (const sha of (body && body.missing) || []) missing.add(sha);
      }
      return missing;
    }

    /** PUT one blob; resolves with null when stored, or the server's reason when it refused the content. */
    async putBlob(session, blob) {
      const path = `/api/blobs/${blob.sha256}?project=${encodeURIComponent(session.project)}`;
      const { status, body } = await this.request(session, "PUT", path, blob.bytes, blob.mediaType);
      if (status < 300) return null;
      if ([400, 413, 415].includes(status)) return describe(status, body);
      throw new SessionError(`uploading a blob failed: ${describe(status, body)}`);
    }

    async sendChunks(session) {
      const chunks = await this.d.store.pendingChunks(session.clientId);
      for (const chunk of chunks) {
        const gone = await this.uploadBlobs(session, [chunk.sha256]);
        if (gone.has(chunk.sha256)) {
          await this.d.store.markChunk(session.clientId, chunk.index, STATE.FAILED, { error: "video blob refused" });
          continue;
        }
        const body = { index: chunk.index, blob: chunk.sha256, started_at: chunk.startedAt };
        const result = await this.request(session, "POST", `/api/recordings/${session.demoName}/video/`, body);
        if (result.status < 300) {
          await this.d.store.markChunk(session.clientId, chunk.index, STATE.UPLOADED);
          await sessions.bumpCounters(this.d.kv, { videoChunks: 1 });
        } else if ([400, 404, 405, 409, 413].includes(result.status)) {
          const message = describe(result.status, result.body);
          await this.d.store.markChunk(session.clientId, chunk.index, STATE.FAILED, { error: message });
          await this.setError(`video chunk ${chunk.index} refused: ${message}`);
        } else {
          throw new SessionError(`uploading video failed: ${describe(result.status, result.body)}`);
        }
      }
    }

    async finish(session) {
      const end = sessions.finishBody(session, session.stoppedAt || this.d.now());
      const { status, body } = await this.request(session, "POST", `/api/recordings/${session.demoName}/finish/`, end);
      if (status >= 400) throw new SessionError(`finishing the recording failed: ${describe(status, body)}`);
      await sessions.dropFromOutbox(this.d.kv, session.clientId);
      await this.d.kv.mutate(C.STORAGE.UPLOAD, (u) => {
        const recent = [
          { clientId: session.clientId, demoName: session.demoName, finishedAt: this.d.now() },
          ...((u && u.recent) || []),
        ];
        return { ...(u || {}), recent: recent.slice(0, 20) };
      });
      await this.d.store.forgetUploaded(session.clientId);
      this.d.log.info && this.d.log.info(`recording ${session.demoName} finished`);
      this.d.onChange();
    }

    async sessionRefused(session, message) {
      await sessions.updateSession(this.d.kv, session.clientId, (s) => ({ ...s, error: message }));
      await this.setError(message);
    }

    async setError(message) {
      await sessions.bumpCounters(this.d.kv, { lastError: message, lastErrorAt: this.d.now() });
      this.d.onChange();
    }

    async refreshQueued() {
      try {
        await sessions.bumpCounters(this.d.kv, { queued: await this.d.store.countPending() });
      } catch (error) {
        this.d.log.warn && this.d.log.warn("could not count pending turns", error);
      }
    }

    /** One HTTP request with the session's token (lib/upload_wire.js). */
    request(session, method, path, payload, contentType, extraHeaders = {}) {
      return wire.request(this.d.fetch, session, method, path, payload, contentType, extraHeaders);
    }
  }

  const api = {
    Uploader, RetryableError, SessionError, blobRefs, withoutBlobs, describe, turnIndexOf, blobIndexOf, frameBatch, gzip,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.uploader = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
