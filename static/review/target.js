// The review page's target picker ("Change target", key t): the selected browser turn's page elements (uid, tag,
// text, box, from GET …/turns/<id>/elements), filtered as one types; the element focused or pointed at is boxed on
// the screenshot, Enter or a click makes it the turn's target (op "retarget"), Escape closes. Loaded after
// review.js, whose window.reviewPage gives the selected turn and the one write path.
(function () {
  "use strict";
  const page = window.reviewPage;
  const configNode = document.getElementById("review-config");
  const $ = (id) => document.getElementById(id);
  if (!page || !configNode || !$("target-picker")) return;
  const config = JSON.parse(configNode.textContent);
  const elementsUrl = (turnId) => config.elementsUrl.replace(/\/0\/elements$/, "/" + turnId + "/elements");
  let loaded = null; // {turn, current, recorded, elements}
  let request = 0;

  function drawCandidate(element) {
    const box = $("target-box");
    const shot = $("shot");
    const turn = page.selectedTurn();
    box.hidden = true;
    if (!element || !turn || shot.hidden || !shot.naturalWidth) return;
    const scale = shot.clientWidth / (turn.viewport[0] || shot.naturalWidth);
    box.style.left = element.box.x * scale + "px";
    box.style.top = element.box.y * scale + "px";
    box.style.width = element.box.width * scale + "px";
    box.style.height = element.box.height * scale + "px";
    box.hidden = false;
  }

  function describe(element) {
    const marks = [];
    if (element.uid === loaded.current) marks.push("current target");
    if (element.uid === loaded.recorded && loaded.recorded !== loaded.current) marks.push("recorded");
    const text = element.text ? " “" + element.text + "”" : "";
    return "<" + element.tag + ">" + text + " #" + element.uid + (marks.length ? " (" + marks.join(", ") + ")" : "");
  }

  function option(element) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "target-option" + (element.uid === loaded.current ? " current" : "");
    button.dataset.uid = element.uid;
    button.textContent = describe(element);
    button.setAttribute("aria-current", element.uid === loaded.current ? "true" : "false");
    button.addEventListener("focus", () => drawCandidate(element));
    button.addEventListener("mouseenter", () => drawCandidate(element));
    button.addEventListener("click", () => choose(element));
    item.appendChild(button);
    return item;
  }

  function render() {
    const words = $("target-search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const matching = loaded.elements.filter((element) => {
      const haystack = (element.tag + " " + element.text + " #" + element.uid).toLowerCase();
      return words.every((word) => haystack.includes(word));
    });
    const shown = matching.slice(0, 200);
    $("target-list").replaceChildren(...shown.map(option));
    const more = matching.length > shown.length ? " (the first " + shown.length + " shown: filter to narrow)" : "";
    $("target-count").textContent =
      matching.length + " of " + loaded.elements.length + " elements" + more + ".";
  }

  function choose(element) {
    const turn = page.selectedTurn();
    if (page.busy() || !loaded || loaded.turn !== turn.id) return;
    if (element.uid === loaded.current) {
      close(true);
      return;
    }
    page.send("retarget", { turn: turn.id, element: element.uid }, turn.id);
  }

  async function open() {
    const turn = page.selectedTurn();
    if (!turn || !turn.retargetable || turn.deleted || page.busy()) return;
    const picker = $("target-picker");
    picker.hidden = false;
    $("btn-target").setAttribute("aria-expanded", "true");
    $("target-title").textContent = "Change the target of turn " + turn.index;
    $("target-count").textContent = "Loading the page's elements…";
    $("target-list").replaceChildren();
    $("target-search").value = "";
    $("target-search").focus();
    const mine = ++request;
    let data;
    try {
      const response = await fetch(elementsUrl(turn.id), { credentials: "same-origin" });
      data = await response.json();
      if (!response.ok) throw new Error(data.detail || response.status + " " + response.statusText);
    } catch (error) {
      if (mine === request) $("target-count").textContent = "Could not list the elements: " + error.message;
      return;
    }
    if (mine !== request || page.selectedTurn().id !== turn.id) return;
    loaded = data;
    if (!loaded.elements.length) {
      $("target-count").textContent = "This turn's page has no elements with a box to choose from.";
      return;
    }
    render();
  }

  function close(focusButton) {
    request++;
    loaded = null;
    $("target-picker").hidden = true;
    $("target-box").hidden = true;
    if ($("btn-target")) $("btn-target").setAttribute("aria-expanded", "false");
    if (focusButton && $("btn-target") && !$("btn-target").hidden) $("btn-target").focus();
  }

  // Arrows move through the options (and from the filter into them), Escape closes; typing filters.
  function onKey(event) {
    event.stopPropagation(); // the page's one-key shortcuts (d, v, j…) do not apply inside the picker
    const options = Array.from($("target-list").querySelectorAll("button.target-option"));
    const at = options.indexOf(document.activeElement);
    if (event.key === "Escape") {
      event.preventDefault();
      close(true);
    } else if (event.key === "ArrowDown" && options.length) {
      event.preventDefault();
      options[Math.min(at + 1, options.length - 1)].focus();
    } else if (event.key === "ArrowUp" && options.length) {
      event.preventDefault();
      if (at <= 0) $("target-search").focus();
      else options[at - 1].focus();
    } else if (event.key === "Enter" && event.target === $("target-search") && options.length === 1) {
      event.preventDefault();
      options[0].click();
    }
  }

  $("btn-target").addEventListener("click", () => ($("target-picker").hidden ? open() : close(true)));
  $("target-search").addEventListener("input", () => loaded && render());
  $("target-picker").addEventListener("keydown", onKey);
  $("target-picker").addEventListener("mouseleave", () => ($("target-box").hidden = true));

  window.reviewTarget = { open: open, close: close };
})();
