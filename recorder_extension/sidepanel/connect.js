/*
 * Side panel, first run: one step at a time.
 *   1. server  — the address, checked with GET /healthz before going on (lib/signin.js words what went wrong);
 *   2. account — username + password posted to POST /api/auth/token/ (the password is read, sent once and the
 *                field cleared: it is never stored or logged), or a pasted token; a link opens the token page;
 *   3. signed in — "Signed in to SERVER as USER", the project and private fields; the recording form shows
 *                (body[data-signed-in=true]: sidepanel.css hides #tasks and #start until then).
 * The token, checked with GET /api/auth/token/ (whose it is) and GET /api/projects/, is kept in the config
 * (chrome.storage.local) until Sign out forgets it.
 *
 * Automation (tests, lab provisioning): sidepanel.html?server=URL&token=KEY&project=NAME[&automation=1] saves those
 * into the config and signs in (body[data-configured=true] when done). Loaded before sidepanel.js, which calls
 * `init` and reads the project from #project.
 */
(function () {
  "use strict";

  const C = globalThis.WebTasks.C;
  const S = globalThis.WebTasks.SignIn;
  const $ = (id) => document.getElementById(id);
  const TIMEOUT_MS = 15000;
  let projects = [];

  async function getConfig() {
    return (await chrome.storage.local.get(C.STORAGE.CONFIG))[C.STORAGE.CONFIG] || {};
  }

  async function saveConfig(change, forget = []) {
    const config = { ...(await getConfig()), ...change };
    for (const key of forget) delete config[key];
    await chrome.storage.local.set({ [C.STORAGE.CONFIG]: config });
    return config;
  }

  /** fetch without cookies (the token is the credential) → `{status, body, retryAfter, detail}` or `{error}`. */
  async function call(url, options = {}) {
    try {
      const response = await fetch(url, {
        credentials: "omit", cache: "no-store", signal: AbortSignal.timeout(TIMEOUT_MS), ...options,
      });
      const body = await response.json().catch(() => null);
      const detail = body && typeof body.detail === "string" ? body.detail : "";
      return { status: response.status, body, detail, retryAfter: response.headers.get("Retry-After") };
    } catch (error) {
      return { error: error.name || "unreachable" };
    }
  }

  function tokenCall(server, path, token) {
    return call(`${server}${path}`, { headers: { Authorization: `Token ${token}`, Accept: "application/json" } });
  }

  // --- The steps -----------------------------------------------------------------------------------------

  function showStep(step, server) {
    $("server-form").hidden = step !== "server";
    $("account").hidden = step !== "account";
    $("signed-in").hidden = step !== "signed-in";
    document.body.dataset.signinStep = step;
    document.body.dataset.signedIn = String(step === "signed-in");
    if (server) {
      $("account-server").textContent = server;
      $("token-page").href = `${server}${S.TOKEN_PAGE}`;
    }
  }

  /** A line of #server-result or #signin-result; a problem shows as an error. */
  function say(id, text, problem = false) {
    $(id).textContent = text;
    $(id).classList.toggle("error", problem);
  }

  async function checkServer(event) {
    event.preventDefault();
    const typed = S.normalizeServerUrl($("server-url").value);
    if (typed.error) return say("server-result", typed.error, true);
    say("server-result", `Checking ${typed.url}…`);
    const problem = S.serverProblem(typed.url, await call(`${typed.url}${S.CHECK_PATH}`));
    if (problem) return say("server-result", problem, true);
    const config = await getConfig();
    say("server-result", "");
    if (config.serverUrl === typed.url && config.token) return useToken(typed.url, config.token); // back again
    await saveConfig({ serverUrl: typed.url }, ["token", "user"]); // a token belongs to its server
    const warning = S.plainHttpWarning(typed.url);
    say("signin-result", warning, Boolean(warning));
    showStep("account", typed.url);
    $("username").focus();
  }

  async function signInWithPassword(event) {
    event.preventDefault();
    const { serverUrl } = await getConfig();
    const username = $("username").value.trim();
    const password = $("password").value;
    $("password").value = ""; // read once, sent once, kept nowhere
    say("signin-result", "Signing in…");
    const answer = await call(`${serverUrl}${S.TOKEN_PATH}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ username, password }),
    });
    if (answer.error) return say("signin-result", S.serverProblem(serverUrl, answer), true);
    if (answer.status !== 200 || !answer.body || !answer.body.token) {
      return say("signin-result", S.passwordRefusal(answer), true);
    }
    await useToken(serverUrl, answer.body.token);
  }

  async function signInWithToken(event) {
    event.preventDefault();
    const { serverUrl } = await getConfig();
    const token = $("token").value.trim();
    $("token").value = "";
    if (!token) return say("signin-result", "Paste the token from your token page first.", true);
    await useToken(serverUrl, token);
  }

  /** Whose the token is and the projects it sees; signed in when both answer, else the reason shown. */
  async function useToken(serverUrl, token) {
    say("signin-result", "Checking…");
    const owner = await tokenCall(serverUrl, S.TOKEN_PATH, token);
    const listed = owner.status === 200 ? await tokenCall(serverUrl, "/api/projects/?page_size=500", token) : owner;
    if (listed.error) {
      // Nothing answered: back to the address (kept, with the token), so Next tries again.
      showStep("server");
      say("signin-result", "");
      say("server-result", S.serverProblem(serverUrl, listed), true);
      return false;
    }
    if (listed.status !== 200) {
      if ((await getConfig()).token === token) await saveConfig({}, ["token", "user"]); // revoked or rotated
      showStep("account", serverUrl);
      say("signin-result", S.tokenRefusal(serverUrl, listed), true);
      return false;
    }
    const answered = S.signedInFrom(owner, listed);
    if (!answered) {
      showStep("server");
      say("signin-result", "");
      say("server-result", S.serverProblem(serverUrl, { status: 200, body: null }), true);
      return false;
    }
    projects = answered.projects;
    const user = answered.user;
    const config = await saveConfig({ serverUrl, token, user });
    say("signin-result", "");
    say("signed-in-as", `Signed in to ${serverUrl} as ${user}`);
    await renderProjects(config.project);
    showStep("signed-in", serverUrl);
    return true;
  }

  /** Forget the token (the server keeps it: other recorders may use it) and ask again, on the same server. */
  async function signOut() {
    const config = await saveConfig({}, ["token", "user"]);
    projects = [];
    say("signin-result", "Signed out.");
    showStep("account", config.serverUrl);
  }

  async function changeServer() {
    $("server-url").value = (await getConfig()).serverUrl || "";
    say("server-result", "");
    showStep("server");
  }

  // --- Projects ------------------------------------------------------------------------------------------

  function canRecord(project) {
    return ["annotator", "admin"].includes(project.role);
  }

  async function renderProjects(selected) {
    const select = $("project");
    select.replaceChildren();
    for (const project of projects) {
      const option = new Option(`${project.title || project.name} (${project.role || "no role"})`, project.name);
      option.disabled = !canRecord(project);
      select.add(option);
    }
    if (!projects.length) select.add(new Option("No projects: ask a project admin to add you", ""));
    select.disabled = !projects.length;
    const usable = projects.find((p) => p.name === selected) || projects.find(canRecord);
    if (usable) select.value = usable.name;
    renderRole();
    if (usable && usable.name !== selected) await saveConfig({ project: usable.name });
  }

  function renderRole() {
    const project = projects.find((p) => p.name === $("project").value);
    $("project-role").textContent = project
      ? `Your role: ${project.role}${canRecord(project) ? "" : " (cannot record here)"}`
      : "";
    renderChoices(project);
  }

  /** The project's suggested categories, subcategories and regions (its settings page), as datalists. */
  function renderChoices(project) {
    for (const field of ["category", "subcategory", "region"]) {
      const values = (project && project[`${field}_choices`]) || [];
      $(`${field}-choices`).replaceChildren(...values.map((value) => new Option(value)));
    }
  }

  // --- Start-up ------------------------------------------------------------------------------------------

  async function applyUrlParams() {
    const params = new URLSearchParams(location.search);
    const change = {};
    if (params.get("server")) change.serverUrl = params.get("server").replace(/\/+$/, "");
    if (params.get("token")) change.token = params.get("token");
    if (params.get("project")) change.project = params.get("project");
    if (params.has("automation")) change.automation = params.get("automation") === "1";
    if (Object.keys(change).length) await saveConfig(change);
    return Object.keys(change).length > 0;
  }

  async function init() {
    const fromUrl = await applyUrlParams();
    const config = await getConfig();
    $("server-url").value = config.serverUrl || "";
    $("private-selectors").value = (config.privateSelectors || []).join("\n");
    if (config.serverUrl && config.token) await useToken(config.serverUrl, config.token);
    else showStep(config.serverUrl ? "account" : "server", config.serverUrl);
    if (fromUrl) document.body.dataset.configured = "true"; // tests wait for this
    $("server-form").addEventListener("submit", checkServer);
    $("password-form").addEventListener("submit", signInWithPassword);
    $("token-form").addEventListener("submit", signInWithToken);
    $("change-server").addEventListener("click", changeServer);
    $("sign-out").addEventListener("click", signOut);
    $("project").addEventListener("change", () => {
      renderRole();
      saveConfig({ project: $("project").value });
    });
    $("private-selectors").addEventListener("change", () => {
      const selectors = $("private-selectors").value.split("\n").map((s) => s.trim()).filter(Boolean);
      saveConfig({ privateSelectors: selectors });
    });
  }

  globalThis.WebTasksPanelConnect = { init };
})();
