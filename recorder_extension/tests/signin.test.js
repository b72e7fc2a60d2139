/*
 * The side panel's first run, pure parts (lib/signin.js): the server address as typed → its origin, and the words
 * a person reads when the server, the password or the token is refused.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const S = require("../lib/signin.js");

test("an address is kept as its origin: scheme, host and port, without a path or trailing slash", () => {
  for (const [typed, url] of [
    ["https://demos.example.org", "https://demos.example.org"],
    ["  http://127.0.0.1:8000/ ", "http://127.0.0.1:8000"],
    ["https://demos.example.org/account/token/", "https://demos.example.org"],
    ["HTTP://Demos.Example.org:443/", "http://demos.example.org:443"],
  ]) {
    assert.deepEqual(S.normalizeServerUrl(typed), { url }, typed);
  }
});

test("an address without its scheme says to add it, with the address as it should be", () => {
  assert.equal(
    S.normalizeServerUrl("demos.example.org").error,
    "Add http:// or https:// in front: https://demos.example.org",
  );
  const error = S.normalizeServerUrl("localhost:8000/").error;
  assert.equal(error, "Add http:// or https:// in front: https://localhost:8000/");
});

test("an empty, broken or non-web address is refused with an example", () => {
  assert.match(S.normalizeServerUrl("").error, /Enter the server's address, e\.g\. https:\/\/demos\.example\.org/);
  assert.match(S.normalizeServerUrl("http://").error, /not a web address/);
  assert.match(S.normalizeServerUrl("ftp://demos.example.org").error, /Use an http:\/\/ or https:\/\/ address/);
});

test("the platform's health check passes; nothing answering, an error or another site each say so", () => {
  const server = "http://127.0.0.1:9";
  assert.equal(S.serverProblem(server, { status: 200, body: { status: "ok", database: "postgresql" } }), null);
  assert.equal(
    S.serverProblem(server, { error: "TypeError" }),
    "Cannot reach http://127.0.0.1:9: is the address right and the server running?",
  );
  assert.match(S.serverProblem(server, { status: 503, body: null }), /answers with an error \(HTTP 503\)/);
  for (const answer of [{ status: 204, body: null }, { status: 404, body: null }, { status: 200, body: { ok: 1 } }]) {
    const problem = S.serverProblem(server, answer);
    assert.match(problem, /^http:\/\/127\.0\.0\.1:9 answers, but it is not a demonstrations platform: check/);
  }
});

test("a wrong password is said plainly; throttling says when to try again", () => {
  assert.equal(S.passwordRefusal({ status: 400, detail: "Unable to log in" }), "Wrong username or password.");
  assert.equal(
    S.passwordRefusal({ status: 429, retryAfter: "900" }),
    "Too many failed sign-ins for this username: try again in 15 minutes.",
  );
  assert.match(S.passwordRefusal({ status: 429, retryAfter: "61" }), /in 2 minutes\.$/);
  assert.match(S.passwordRefusal({ status: 429, retryAfter: "1" }), /in 1 second\.$/);
  assert.match(S.passwordRefusal({ status: 429, retryAfter: null }), /in 1 minute\.$/);
});

test("a wrong token names the server and where a right one comes from, never a bare status code", () => {
  const message = S.tokenRefusal("https://demos.example.org", { status: 401, detail: "Invalid token." });
  assert.match(message, /^This token does not work on https:\/\/demos\.example\.org: copy it again from your token/);
  assert.doesNotMatch(message, /HTTP|401/);
  assert.match(S.tokenRefusal("https://x.test", { status: 502 }), /The server failed \(HTTP 502\)/);
});

test("an unencrypted address off this machine is warned about before a password is typed; local ones are not", () => {
  const warning = S.plainHttpWarning("http://demos.example.org");
  assert.match(warning, /^http:\/\/demos.example.org is not encrypted \(http:\/\/\)/);
  assert.match(S.plainHttpWarning("http://10.0.0.5:8000"), /paste a token/);
  const safe = ["https://demos.example.org", "http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"];
  for (const server of safe) {
    assert.equal(S.plainHttpWarning(server), "", server);
  }
});

test("answers that are not the platform's (no username, projects not a list) are refused, not half-used", () => {
  const owner = { status: 200, body: { username: "ana" } };
  const projects = [{ name: "alpha", role: "annotator" }];
  assert.deepEqual(S.signedInFrom(owner, { status: 200, body: { results: projects } }), { user: "ana", projects });
  assert.deepEqual(S.signedInFrom(owner, { status: 200, body: projects }), { user: "ana", projects });
  assert.equal(S.signedInFrom(owner, { status: 200, body: { results: {} } }), null);
  assert.equal(S.signedInFrom({ status: 200, body: { username: ["x"] } }, { status: 200, body: projects }), null);
  assert.equal(S.signedInFrom({ status: 200, body: null }, { status: 200, body: projects }), null);
  const odd = S.signedInFrom(owner, { status: 200, body: [null, "x", { name: 3 }, { name: "beta" }] });
  assert.deepEqual(odd.projects, [{ name: "beta" }]);
});
