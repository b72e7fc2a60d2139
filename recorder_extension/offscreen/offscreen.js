/*
 * Offscreen document: records the tab stream (chrome.tabCapture stream id from the service worker) with
 * MediaRecorder as WebM, one chunk per C.TIMING.VIDEO_TIMESLICE_MS. Each chunk is stored in IndexedDB
 * (a video/webm blob + a chunk record {session, index, sha256, startedAt}) BEFORE the service worker is told
 * (VIDEO_CHUNK), so a chunk survives the worker being killed. `startedAt` is the recording clock (s) when
 * MediaRecorder started: all chunks of one recorder share it, and only the first chunk of a recorder holds
 * the WebM header, so the server concatenates the chunks of one `started_at` in index order.
 *
 * Privacy: the recorder never sees the tab's own frames. Each frame is drawn on a canvas with the tab's private
 * areas painted black (the regions of every frame of the tab, lib/regions.js, sent by the service worker with
 * VIDEO_START and then every C.TIMING.VIDEO_REGIONS_MS as VIDEO_REGIONS) and that canvas frame is recorded. Without
 * fresh regions (none yet, the top frame not answering, none for VIDEO_REGIONS_MAX_AGE_MS) the whole frame is black.
 * The recorder is started just before the first masked frame reaches it, and its first pieces are stored as one
 * chunk only once they hold the whole WebM header (see take).
 */
(function () {
  "use strict";

  const W = globalThis.WebTasks;
  const C = W.C;
  const storeReady = W.store.openStore();
  let current = null; // {recorder, stream, masker, regions, session, nextIndex, startedAt, pending, stopped}
  let starting = null; // the state being started (regions may arrive before its recorder runs)
  const FIRST_FRAME_TIMEOUT_MS = 15000;

  chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
    if (!message || message.target !== C.TARGET.OFFSCREEN) return false;
    switch (message.type) {
      case C.MSG.VIDEO_START:
        start(message).then(sendResponse, (error) => sendResponse({ ok: false, error: String(error.message || error) }));
        return true;
      case C.MSG.VIDEO_REGIONS: {
        const state = current || starting;
        if (state) state.regions = freshRegions(message);
        sendResponse({ ok: Boolean(state) });
        return false;
      }
      case C.MSG.VIDEO_STOP:
        stop().then(() => sendResponse({ ok: true }), (error) => sendResponse({ ok: false, error: String(error) }));
        return true;
      default:
        console.warn("offscreen: unknown message type", message.type);
        return false;
    }
  });

  async function start({ streamId, session, sessionStartedAt, firstIndex, timesliceMs, regions }) {
    if (current) await stop();
    if (typeof MediaStreamTrackProcessor !== "function" || typeof MediaStreamTrackGenerator !== "function") {
      throw new Error("this browser cannot mask video frames (no MediaStreamTrackProcessor): no video");
    }
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: false,
      video: { mandatory: { chromeMediaSource: "tab", chromeMediaSourceId: streamId } },
    });
    const mimeType = ["video/webm;codecs=vp9", "video/webm;codecs=vp8", "video/webm"].find((t) =>
      MediaRecorder.isTypeSupported(t),
    );
    const state = {
      stream, session, nextIndex: firstIndex || 0, startedAt: 0, pending: Promise.resolve(), regions: freshRegions(regions),
    };
    state.masker = maskFrames(stream.getVideoTracks()[0], () => state.regions);
    const recorder = new MediaRecorder(new MediaStream([state.masker.track]), mimeType ? { mimeType } : undefined);
    state.recorder = recorder;
    starting = state;
    state.head = []; // the recorder's first pieces, until they hold the whole WebM header (see take)
    recorder.ondataavailable = (event) => {
      if (!event.data || !event.data.size) return;
      state.pending = state.pending.then(() => take(state, event.data)).catch(reportError);
    };
    state.stopped = new Promise((resolve) => (recorder.onstop = resolve));
    recorder.onerror = (event) => reportError(event.error || new Error("MediaRecorder error"));
    // The tab was closed or capture revoked: stop, and report a failure (nobody else awaits this stop).
    stream.getVideoTracks()[0].onended = () => stop().catch(reportError);
    const started = new Promise((resolve) => (recorder.onstart = resolve));
    let firstFrameAt = null; // wall ms of the first frame's stamp: the video's time 0
    state.masker.beforeFirstFrame = (at) => {
      firstFrameAt = at;
      recorder.start(timesliceMs || C.TIMING.VIDEO_TIMESLICE_MS);
    };
    state.masker.run().catch(reportError);
    try {
      await within(started, FIRST_FRAME_TIMEOUT_MS, "the tab gave no video frame");
    } catch (error) {
      state.masker.stop();
      for (const track of stream.getTracks()) track.stop();
      throw error;
    } finally {
      starting = null;
    }
    // Not the time `onstart` was handled: on a starved machine that comes late, and every click would then be
    // matched to a frame from before it.
    state.startedAt = Math.max(0, ((firstFrameAt ?? Date.now()) - sessionStartedAt) / 1000);
    current = state;
    send({ type: C.MSG.VIDEO_STATUS, recording: true });
    return { ok: true, startedAt: state.startedAt, mimeType: recorder.mimeType };
  }

  /**
   * Store one piece of the recorder's output as the next chunk. The first chunk must hold the whole WebM header:
   * under load Chromium's recorder can hand over its first timeslice with only the header's first byte (seen:
   * a 1-byte chunk 0x1a, the rest of the header in the next one), and a header split over chunks makes the run
   * unreadable for the server. So the first pieces are gathered until they reach the first Cluster (the header,
   * EBML + Segment + Tracks, is complete then), and stored as one chunk.
   */
  async function take(state, data) {
    if (!state.head) return saveChunk(state, state.nextIndex++, data);
    state.head.push(data);
    const gathered = new Blob(state.head, { type: "video/webm" });
    if (!hasCluster(new Uint8Array(await gathered.arrayBuffer()))) return null;
    state.head = null;
    return saveChunk(state, state.nextIndex++, gathered);
  }

  const CLUSTER_ID = [0x1f, 0x43, 0xb6, 0x75];

  function hasCluster(bytes) {
    outer: for (let i = 0; i + CLUSTER_ID.length <= bytes.length; i++) {
      for (let j = 0; j < CLUSTER_ID.length; j++) if (bytes[i + j] !== CLUSTER_ID[j]) continue outer;
      return true;
    }
    return false;
  }

  async function saveChunk(state, index, data) {
    const bytes = await data.arrayBuffer();
    const blob = await W.turns.makeBlob(bytes, "video/webm");
    const store = await storeReady;
    await store.addChunk({ session: state.session, index, blob, startedAt: state.startedAt });
    send({ type: C.MSG.VIDEO_CHUNK, session: state.session, index, sha256: blob.sha256, startedAt: state.startedAt });
  }

  /** Stop and resolve once the last chunk is stored. */
  async function stop() {
    const state = current;
    if (!state) return;
    current = null;
    if (state.recorder.state !== "inactive") state.recorder.stop();
    await state.stopped;
    await state.pending;
    if (state.head && state.head.length) await saveChunk(state, state.nextIndex++, new Blob(state.head, { type: "video/webm" }));
    state.head = null;
    state.masker.stop();
    for (const track of state.stream.getTracks()) track.stop();
    send({ type: C.MSG.VIDEO_STATUS, recording: false });
  }

  /** {rects, viewport, at} from a regions message (viewport null: the tab's regions are unknown). */
  function freshRegions(message) {
    if (!message || !Array.isArray(message.rects)) return null;
    return { rects: message.rects, viewport: message.viewport || null, at: Date.now() };
  }

  /**
   * The tab's video track → a track of the same frames with the private areas black (see the top). `run()` pumps
   * frames until `stop()`; `beforeFirstFrame` is called once, just before the first masked frame is written.
   */
  function maskFrames(track, regionsNow) {
    const reader = new MediaStreamTrackProcessor({ track }).readable.getReader();
    const generator = new MediaStreamTrackGenerator({ kind: "video" });
    const writer = generator.writable.getWriter();
    let canvas = null;
    let context = null;
    let stopped = false;
    const masker = {
      track: generator,
      beforeFirstFrame: null,
      async run() {
        while (!stopped) {
          const { value: frame, done } = await reader.read();
          if (done || stopped) {
            if (frame) frame.close();
            break;
          }
          const width = frame.displayWidth;
          const height = frame.displayHeight;
          if (!canvas || canvas.width !== width || canvas.height !== height) {
            canvas = new OffscreenCanvas(width, height);
            context = canvas.getContext("2d");
          }
          context.drawImage(frame, 0, 0, width, height);
          context.fillStyle = "#000";
          for (const box of blackBoxes(regionsNow(), width, height)) context.fillRect(box.x, box.y, box.width, box.height);
          // Stamped when written: the video's clock then runs with the recorder's (started_at is the wall time of
          // the first frame's stamp), even when the first frame read was captured long before.
          const stamp = performance.now();
          const masked = new VideoFrame(canvas, { timestamp: Math.round(stamp * 1000) });
          frame.close();
          if (masker.beforeFirstFrame) {
            const first = masker.beforeFirstFrame;
            masker.beforeFirstFrame = null;
            first(performance.timeOrigin + stamp);
          }
          await writer.write(masked);
        }
      },
      stop() {
        stopped = true;
        reader.cancel().catch(() => {});
        writer.close().catch(() => {});
      },
    };
    return masker;
  }

  /**
   * The pixel boxes to black out of a `width × height` frame: everything when the regions are not fresh. Tab
   * capture keeps the page's aspect ratio: the viewport is scaled to fit the frame and centred (black bars, e.g.
   * a 1280 × 800 page in an 800 × 600 frame is 800 × 500 at y = 50).
   */
  function blackBoxes(regions, width, height) {
    const viewport = regions && regions.viewport;
    if (!viewport || !(viewport.width > 0 && viewport.height > 0) || Date.now() - regions.at > C.TIMING.VIDEO_REGIONS_MAX_AGE_MS) {
      return [{ x: 0, y: 0, width, height }];
    }
    const scale = Math.min(width / viewport.width, height / viewport.height);
    const dx = (width - viewport.width * scale) / 2;
    const dy = (height - viewport.height * scale) / 2;
    const inFrame = regions.rects.map((r) => ({ x: dx + r.x * scale, y: dy + r.y * scale, width: r.width * scale, height: r.height * scale }));
    return W.regions.scaleRects(inFrame, { width, height }, width, height);
  }

  function within(promise, ms, message) {
    let timer;
    return Promise.race([
      promise.finally(() => clearTimeout(timer)),
      new Promise((resolve, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
    ]);
  }

  function reportError(error) {
    console.warn("offscreen recorder", error);
    send({ type: C.MSG.VIDEO_STATUS, recording: Boolean(current), error: String((error && error.message) || error) });
  }

  function send(message) {
    chrome.runtime.sendMessage({ target: C.TARGET.SW, ...message }).catch(() => {});
  }
})();
