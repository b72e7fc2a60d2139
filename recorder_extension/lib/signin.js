/*
 * The side panel's first run, pure parts (sidepanel/connect.js does the fetching and the page): the server address
 * as typed → the origin to use, and the plain words a person reads when the server, the password or the token is
 * refused. No secret ever goes into a message.
 */
(function (root) {
  "use strict";

  const EXAMPLE = "https://demos.example.org";
  const CHECK_PATH = "/healthz"; // public and cheap: {"status": "ok", "database": ...} on the platform
  const TOKEN_PATH = "/api/auth/token/"; // POST username + password → token; GET with a token → {username}
  const TOKEN_PAGE = "/account/token/"; // the token page (URL name manage-tokens; page paths stay stable)

  /** What was typed → `{url}` (the origin: scheme, host and port) or `{error}` saying how to fix it. */
  function normalizeServerUrl(input) {
    const text = String(input || "").trim();
    if (!text) return { error: `Enter the server's address, e.g. ${EXAMPLE}` };
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
      return { error: `Add http:// or https:// in front: https://${text.replace(/^\/+/, "")}` };
    }
    let url;
    try {
      url = new URL(text);
    } catch {
      return { error: `This is not a web address: ${text}. It looks like ${EXAMPLE}` };
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return { error: `Use an http:// or https:// address, e.g. ${EXAMPLE}` };
    }
    return { url: url.origin };
  }

  /** The check's answer (`{status, body}`, or `{error}` when nothing answered) → null when it is the platform. */
  function serverProblem(server, answer) {
    if (!answer || answer.error) return `Cannot reach ${server}: is the address right and the server running?`;
    const body = answer.body;
    if (answer.status === 200 && body && body.status === "ok" && typeof body.database === "string") return null;
    if (answer.status >= 500) {
      return `${server} answers with an error (HTTP ${answer.status}): try again in a minute, or tell whoever runs it.`;
    }
    const hint = "check the address (the one you open the app at).";
    return `${server} answers, but it is not a demonstrations platform: ${hint}`;
  }

  /** A warning for an unencrypted address off this machine (a password would cross the network readable); "" else. */
  function plainHttpWarning(server) {
    const url = new URL(server);
    const local = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname) || url.hostname.endsWith(".localhost");
    if (url.protocol !== "http:" || local) return "";
    const fix = "Use its https:// address, or paste a token.";
    return `${server} is not encrypted (http://): a password sent to it can be read on the network. ${fix}`;
  }

  /** The signed-in answers (`GET` the token's owner, the project list) → `{user, projects}`, or null when they are
   * not what the platform answers (another site at the address). */
  function signedInFrom(owner, listed) {
    const user = owner && owner.body && owner.body.username;
    const body = listed && listed.body;
    const projects = Array.isArray(body) ? body : body && body.results;
    if (typeof user !== "string" || !user || !Array.isArray(projects)) return null;
    return { user, projects: projects.filter((p) => p && typeof p === "object" && typeof p.name === "string") };
  }

  /** "in 40 seconds", "in 1 minute", "in 15 minutes" from a Retry-After header's seconds. */
  function waitWords(retryAfter) {
    const seconds = Math.max(1, Math.ceil(Number(retryAfter) || 60));
    if (seconds < 60) return `in ${seconds} second${seconds === 1 ? "" : "s"}`;
    const minutes = Math.ceil(seconds / 60);
    return `in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  }

  /** A refused username + password (`{status, retryAfter, detail}`) → what to do. */
  function passwordRefusal(answer) {
    if (answer.status === 429) {
      return `Too many failed sign-ins for this username: try again ${waitWords(answer.retryAfter)}.`;
    }
    if (answer.status === 400) return "Wrong username or password.";
    return refusal(answer);
  }

  /** A refused token (`{status, detail}`) → what to do. */
  function tokenRefusal(server, answer) {
    if (answer.status === 401 || answer.status === 403) {
      const hint = "copy it again from your token page (a rotated token stops working).";
      return `This token does not work on ${server}: ${hint}`;
    }
    return refusal(answer);
  }

  function refusal(answer) {
    if (answer.status >= 500) return `The server failed (HTTP ${answer.status}): try again in a minute.`;
    return `Sign-in refused: ${answer.detail || `the server answered HTTP ${answer.status}`}`;
  }

  const api = {
    EXAMPLE, CHECK_PATH, TOKEN_PATH, TOKEN_PAGE, normalizeServerUrl, serverProblem, passwordRefusal, tokenRefusal,
    waitWords, plainHttpWarning, signedInFrom,
  };
  root.WebTasks = root.WebTasks || {};
  root.WebTasks.SignIn = api;
  if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
