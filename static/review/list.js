// The review list: bulk selection (select all, count, confirmation before returning), filters applied as soon as
// a choice changes (they live in the URL), and statuses and issue counts kept live (another reviewer's decision, the
// worker's quality checks).
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const table = $("demos");
  if (!table) return;
  const picks = () => Array.from(table.querySelectorAll("input.pick"));

  function updateCount() {
    const count = picks().filter((box) => box.checked).length;
    const all = $("select-all");
    if (!all) return; // no bulk action for this person's roles: no selection either
    $("selected-count").textContent = count + " selected";
    ["btn-bulk-assign", "btn-bulk-return"].forEach((id) => $(id) && ($(id).disabled = count === 0));
    all.checked = count > 0 && count === picks().length;
    all.indeterminate = count > 0 && count < picks().length;
  }

  $("select-all")?.addEventListener("change", (event) => {
    picks().forEach((box) => (box.checked = event.target.checked));
    updateCount();
  });
  table.addEventListener("change", (event) => {
    if (event.target.classList.contains("pick")) updateCount();
  });
  $("bulk")?.addEventListener("submit", (event) => {
    const button = event.submitter;
    if (button && button.dataset.confirm && !window.confirm(button.dataset.confirm)) event.preventDefault();
  });
  // Choices (selects, dates) filter at once; typed fields when Enter is pressed, as before.
  const filters = $("filters");
  filters.querySelectorAll("select, input[type=date]").forEach((field) =>
    field.addEventListener("change", () => filters.requestSubmit()),
  );
  updateCount();

  // Live, as the review page is: every few seconds (while the tab is visible) the list asks for the status and
  // issue count of the demos it shows, and updates the cells that changed (another reviewer's decision, the
  // worker's quality checks). It never reloads by itself, so a selection or a half-typed filter is kept.
  const POLL_MS = 3000;
  function update(row, demo) {
    if (demo.status !== row.dataset.status) {
      row.dataset.status = demo.status;
      const label = row.querySelector(".status-label");
      if (label) label.textContent = demo.status_display;
      row.classList.add("changed");
    }
    const cell = row.querySelector("td.issues");
    if (cell && demo.issues !== null && cell.textContent.trim() !== String(demo.issues)) {
      cell.textContent = demo.issues;
      delete cell.dataset.pending;
      row.classList.add("changed");
    }
  }

  async function poll() {
    const rows = Array.from(table.querySelectorAll("tbody tr[data-name]"));
    if (rows.length && document.visibilityState === "visible") {
      const names = rows.map((row) => row.dataset.name);
      try {
        const response = await fetch(table.dataset.liveUrl + "?names=" + encodeURIComponent(names.join(",")), {
          credentials: "same-origin",
          cache: "no-store",
        });
        if (response.ok) {
          const demos = (await response.json()).demos;
          rows.forEach((row) => {
            if (demos[row.dataset.name]) update(row, demos[row.dataset.name]);
          });
          table.dataset.polled = String(Number(table.dataset.polled || 0) + 1);
        }
      } catch (error) {
        // offline for a moment: the next poll tries again
      }
    }
    if (rows.length) setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
})();
