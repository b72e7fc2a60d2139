// The review list: bulk selection (select all, count, confirmation before returning), filters applied as soon as
// a choice changes (they live in the URL), and issue counts / statuses that appear as the worker computes them.
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

  // Issue counts the worker has not computed yet ("–") are asked for every few seconds until they all arrive.
  const POLL_MS = 3000;
  async function poll() {
    const pending = Array.from(table.querySelectorAll("td.issues[data-pending]"));
    if (!pending.length) return;
    const names = pending.map((cell) => cell.closest("tr").dataset.name);
    try {
      const response = await fetch(table.dataset.liveUrl + "?names=" + encodeURIComponent(names.join(",")), {
        credentials: "same-origin",
        cache: "no-store",
      });
      if (response.ok) {
        const demos = (await response.json()).demos;
        pending.forEach((cell) => {
          const demo = demos[cell.closest("tr").dataset.name];
          if (demo && demo.issues !== null) {
            cell.textContent = demo.issues;
            delete cell.dataset.pending;
          }
        });
      }
    } catch (error) {
      // offline for a moment: the next poll tries again
    }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
})();
