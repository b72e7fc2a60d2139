/*
 * Offscreen document: records the tab stream (chrome.tabCapture stream id from the service worker) with
 * MediaRecorder as WebM, one chunk per C.TIMING.VIDEO_TIMESLICE_MS. Each chunk is stored in IndexedDB
 * (a video/webm blob + a chunk record {session, index, sha256, startedAt}) BEFORE the service worker is told
 * (VIDEO_CHUNK), so a chunk survives the worker being killed. `startedAt` is the recording clock (s) when
 * MediaRecorder started: all chunks of one recorder share it, and only the first chunk of a recorder holds
 * the WebM header, so the server concatenates the chunks of one `started_at` in index order.
 */
(function () {
  "use strict";

  const W = globalThis.WebTasks;
  const C = W.C;
  const storeReady = W.store.openStore();
  let current = null; // {recorder, stream, session, nextIndex, startedAt, pending: Promise, stopped: Promise}

  chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
    if (!message || message.target !== C.TARGET.OFFSCREEN) return false;
    switch (message.type) {
      case C.MSG.VIDEO_START:
        start(message).then(sendResponse, (error) => sendResponse({ ok: false, error: String(error.message || error) }));
        return true;
      case C.MSG.VIDEO_STOP:
        stop().then(() => sendResponse({ ok: true }), (error) => sendResponse({ ok: false, error: String(error) }));
        return true;
      default:
        console.warn("offscreen: unknown message type", message.type);
        return false;
    }
  });

  async function start({ streamId, session, sessionStartedAt, firstIndex, timesliceMs }) {
    if (current) await stop();
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: false,
      video: { mandatory: { chromeMediaSource: "tab", chromeMediaSourceId: streamId } },
    });
    const mimeType = ["video/webm;codecs=vp9", "video/webm;codecs=vp8", "video/webm"].find((t) =>
      MediaRecorder.isTypeSupported(t),
    );
    const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : undefined);
    const state = { recorder, stream, session, nextIndex: firstIndex || 0, startedAt: 0, pending: Promise.resolve() };
    recorder.ondataavailable = (event) => {
      if (!event.data || !event.data.size) return;
      const index = state.nextIndex++;
      state.pending = state.pending.then(() => saveChunk(state, index, event.data)).catch(reportError);
    };
    state.stopped = new Promise((resolve) => (recorder.onstop = resolve));
    recorder.onerror = (event) => reportError(event.error || new Error("MediaRecorder error"));
    // The tab was closed or capture revoked: stop, and report a failure (nobody else awaits this stop).
    stream.getVideoTracks()[0].onended = () => stop().catch(reportError);
    const started = new Promise((resolve) => (recorder.onstart = resolve));
    recorder.start(timesliceMs || C.TIMING.VIDEO_TIMESLICE_MS);
    await started;
    state.startedAt = Math.max(0, (Date.now() - sessionStartedAt) / 1000);
    current = state;
    send({ type: C.MSG.VIDEO_STATUS, recording: true });
    return { ok: true, startedAt: state.startedAt, mimeType: recorder.mimeType };
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
    for (const track of state.stream.getTracks()) track.stop();
    send({ type: C.MSG.VIDEO_STATUS, recording: false });
  }

  function reportError(error) {
    console.warn("offscreen recorder", error);
    send({ type: C.MSG.VIDEO_STATUS, recording: Boolean(current), error: String((error && error.message) || error) });
  }

  function send(message) {
    chrome.runtime.sendMessage({ target: C.TARGET.SW, ...message }).catch(() => {});
  }
})();
