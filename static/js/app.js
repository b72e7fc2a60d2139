/*
 * Behaviour shared by every page (loaded from base.html; no inline scripts under the CSP):
 * - a form or button with data-confirm asks before a destructive action goes ahead;
 * - a button with data-copy="<element id>" copies that input's value (invitation links, tokens);
 * - an element with data-job-url polls that job's JSON and shows its status and progress until it ends.
 */
(function () {
  "use strict";

  document.addEventListener("submit", (event) => {
    const submitter = event.submitter;
    const question = (submitter && submitter.dataset.confirm) || event.target.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    field.select();
    const done = () => {
      button.textContent = "Copied";
      button.dataset.copied = "yes";
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(field.value).then(done, () => {});
    else if (document.execCommand("copy")) done();
  });

  const ENDED = ["done", "failed", "cancelled"];

  function showJob(box, job) {
    box.dataset.status = job.status;
    const bar = box.querySelector("progress");
    if (bar) bar.value = job.progress;
    const status = box.querySelector("[data-job-status]");
    if (status) status.textContent = `${job.status} · ${Math.round(job.progress * 100)} %`;
    const error = box.querySelector("[data-job-error]");
    if (error) error.textContent = job.error || "";
    for (const shown of box.querySelectorAll("[data-when]")) {
      shown.hidden = !shown.dataset.when.split(" ").includes(job.status);
    }
  }

  function follow(box) {
    const poll = () => {
      fetch(box.dataset.jobUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
        .then((job) => {
          showJob(box, job);
          if (ENDED.includes(job.status)) {
            if (box.dataset.reloadWhenDone !== undefined) window.location.reload();
          } else window.setTimeout(poll, 700);
        })
        .catch(() => window.setTimeout(poll, 2000));
    };
    poll();
  }

  for (const box of document.querySelectorAll("[data-job-url]")) {
    if (!ENDED.includes(box.dataset.status)) follow(box);
  }
})();
