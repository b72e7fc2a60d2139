// The review page's polls: someone else's change to the demo (a notice with "reload latest") and the worker's
// progress (thumbnails swapped in as they come, screenshot suggestions announced). Loaded after review.js, whose
// message box (window.reviewPage.showMessage) shows their news.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const page = window.reviewPage;
  if (!page) return;
  const config = JSON.parse($("review-config").textContent);

  // Someone else's change (another reviewer, or this reviewer's other tab): the page asks for the revision now
  // and then, and when it moved on says who changed what, with "reload latest". It never reloads by itself, so
  // nothing being typed is lost; a write from this page would be answered 409 anyway.
  let staleAt = config.revision;
  async function checkRevision() {
    if (page.busy() || document.visibilityState !== "visible") return;
    let state;
    try {
      const response = await fetch(config.revisionUrl, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return;
      state = await response.json();
    } catch (error) {
      return; // offline for a moment: the next poll tries again
    }
    const box = $("message");
    if (page.busy() || state.revision <= staleAt || (!box.hidden && box.classList.contains("conflict"))) return;
    staleAt = state.revision;
    const edit = state.last_edit;
    const by = !edit ? "elsewhere" : edit.by_you ? "by you in another tab or window" : "by " + edit.author;
    const what = edit ? " (" + edit.kind.toLowerCase() + ", at " + new Date(edit.at).toLocaleTimeString() + ")" : "";
    page.showMessage("this demo was changed " + by + what + " since this page was loaded.", "stale");
    document.body.dataset.stale = "true";
  }
  if (config.pollSeconds > 0) {
    setInterval(checkRevision, config.pollSeconds * 1000);
    document.addEventListener("visibilitychange", checkRevision);
  }

  // While the worker is still making thumbnails or suggestions, ask for them every few seconds: thumbnails are
  // swapped in as they come; finished suggestions are announced (they change the frames, so a reload shows them).
  async function pollLive() {
    const pending = Array.from(document.querySelectorAll("img.thumb[data-pending]"));
    const waitSuggestions = !config.realigned;
    if (!pending.length && !waitSuggestions) {
      $("live-status").textContent = "";
      return;
    }
    const total = document.querySelectorAll("img.thumb").length;
    $("live-status").textContent =
      (pending.length ? "Thumbnails " + (total - pending.length) + "/" + total : "") +
      (pending.length && waitSuggestions ? " · " : "") +
      (waitSuggestions ? "suggesting screenshots…" : "");
    const shas = Array.from(new Set(pending.map((img) => img.dataset.sha)));
    try {
      const response = await fetch(config.liveUrl + "?pending=" + shas.join(","), { credentials: "same-origin", cache: "no-store" });
      if (response.ok) applyLive(await response.json(), pending);
    } catch (error) {
      // offline for a moment: the next poll tries again
    }
    setTimeout(pollLive, config.livePollSeconds * 1000);
  }

  function applyLive(state, pending) {
    const ready = new Set(state.ready);
    pending.forEach((img) => {
      if (!ready.has(img.dataset.sha)) return;
      img.src = img.src.split("?")[0] + "?ready=1"; // a new URL: the placeholder was this page's image for the old one
      delete img.dataset.pending;
    });
    if (state.realigned && !config.realigned) {
      config.realigned = true;
      if (state.revision === config.revision && $("message").hidden) page.showMessage("screenshot suggestions are ready.", "stale");
    }
  }
  if (document.querySelector("img.thumb[data-pending]") || !config.realigned) setTimeout(pollLive, 0);
})();
