/*
 * The uploader's side of the wire (lib/uploader.js): one HTTP request with a session's token and how its answer
 * is read (network errors, 429 and 5xx are RetryableError; a refused session's settings are SessionError; an API
 * error body as one line, the turn or blob its error fields name), and what a bundle carries: the blobs a turn refers
 * to, a turn without the blobs that cannot be sent, the bundle body (a JSON manifest line, then the blobs' bytes,
 * gzipped; docs/ingest.md).
 *
 * Classic script: defines globalThis.WebTasks.uploadWire (and module.exports for node).
 */
(function (root) {
  "use strict";

  /** Try again later with growing delays: the network or the server is down (`offline`: unreachable). */
  class RetryableError extends Error {
    constructor(message, { offline = false } = {}) {
      super(message);
      this.offline = offline;
    }
  }
  const GATEWAY_DOWN = new Set([502, 504]); // a proxy answered: the server behind it is unreachable
  /** This session's settings (token, project, role) are refused: retry at the longest delay. */
  class SessionError extends Error {}

  /** `{detail, errors}` of an API error body, as one line. */
  function describe(status, body) {
    if (!body || typeof body !== "object") return `HTTP ${status}`;
    const first = Array.isArray(body.errors) && body.errors[0];
    const where = first ? `: ${first.field}: ${first.message}` : "";
    return `HTTP ${status} ${body.detail || ""}${where}`.trim();
  }

  /** The sha256 of every blob a turn refers to (screenshot, page, bboxes, frames, a step's MHTML). */
  function blobRefs(turn) {
    const refs = ["screenshot", "page", "bboxes", "har", "dom_snapshot"].map((k) => turn[k]).filter(Boolean);
    for (const frame of turn.frames || []) if (frame && frame.screenshot) refs.push(frame.screenshot);
    if (mhtmlOf(turn)) refs.push(mhtmlOf(turn));
    return refs;
  }

  /** Step mode's MHTML snapshot (lib/step.js): referenced from arguments.properties.mhtml. */
  function mhtmlOf(turn) {
    const properties = turn.arguments && turn.arguments.properties;
    return properties && typeof properties.mhtml === "string" ? properties.mhtml : null;
  }

  /** The turn without references to `gone` blobs (a page needs its bboxes, and the reverse). */
  function withoutBlobs(turn, gone) {
    if (!blobRefs(turn).some((sha) => gone.has(sha))) return turn;
    const next = { ...turn };
    if (gone.has(next.screenshot)) delete next.screenshot;
    if (gone.has(next.har)) delete next.har;
    if (gone.has(next.dom_snapshot)) delete next.dom_snapshot;
    if (gone.has(next.page) || gone.has(next.bboxes)) {
      delete next.page;
      delete next.bboxes;
    }
    if (gone.has(mhtmlOf(next))) {
      const { mhtml, ...properties } = next.arguments.properties;
      next.arguments = { ...next.arguments, properties };
    }
    if (next.frames) {
      next.frames = next.frames.filter((f) => !gone.has(f.screenshot));
      if (!next.frames.length) delete next.frames;
    }
    return next;
  }

  function withoutFrames(turn) {
    if (!("frames" in turn)) return turn;
    const { frames, ...rest } = turn;
    return rest;
  }

  /** Index of the turn a server error field names (`turns[3].arguments...` → 3), or null. */
  function turnIndexOf(field) {
    const match = /^turns\[(\d+)\]/.exec(field || "");
    return match ? Number(match[1]) : null;
  }

  /** Index of the blob a server error field names (`blobs[2].sha256` → 2), or null. */
  function blobIndexOf(field) {
    const match = /^blobs\[(\d+)\]/.exec(field || "");
    return match ? Number(match[1]) : null;
  }

  /** A bundle body: the manifest line, then each blob's bytes in the manifest's order (docs/ingest.md). */
  function frameBatch(turns, blobs) {
    const manifest = {
      turns,
      blobs: blobs.map((b) => ({ sha256: b.sha256, media_type: b.mediaType, size: b.bytes.byteLength })),
    };
    return new Blob([JSON.stringify(manifest) + "\n", ...blobs.map((b) => b.bytes)]);
  }

  /** gzip with the platform's CompressionStream (Chrome, Node 18+): pages and bboxes shrink several times. */
  async function gzip(blob) {
    const stream = blob.stream().pipeThrough(new CompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  /**
   * One HTTP request with the session's token through `fetch`. Resolves with {status, body}; network errors, 429
   * and 5xx throw RetryableError.
   */
  async function request(fetch, session, method, path, payload, contentType, extraHeaders = {}) {
    const headers = { Authorization: `Token ${session.token}`, ...extraHeaders };
    let body;
    if (contentType) {
      headers["Content-Type"] = contentType;
      body = payload;
    } else if (payload !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(payload);
    }
    let response;
    try {
      response = await fetch(`${session.serverUrl}${path}`, { method, headers, body });
    } catch (error) {
      throw new RetryableError(`${method} ${path}: ${error.message || error}`, { offline: true });
    }
    const parsed = await readJson(response);
    if (response.status === 429 || response.status >= 500) {
      const offline = GATEWAY_DOWN.has(response.status);
      throw new RetryableError(`${method} ${path}: ${describe(response.status, parsed)}`, { offline });
    }
    return { status: response.status, body: parsed };
  }

  async function readJson(response) {
    try {
      const text = await response.text();
      return text ? JSON.parse(text) : null;
    } catch {
      return null;
    }
  }

  const api = {
    RetryableError, SessionError, describe, blobRefs, withoutBlobs, withoutFrames, turnIndexOf, blobIndexOf, frameBatch, gzip,
    request,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.uploadWire = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : self);
