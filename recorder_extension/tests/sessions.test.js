/*
 * The body of POST /api/recordings/ built from a start config: a form-task assignment is named only when given.
 */
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

require("../lib/constants.js");
const { newSession, recordingBody } = require("../lib/sessions.js");

const BASE = { serverUrl: "http://server.test/", token: "secret", project: "alpha", task_description: "Fill it" };
const CONTEXT = { clientId: "c-1", now: 0, userAgent: "test", timezoneOffsetMinutes: 0 };

test("a recording names the form-task assignment it is made on", () => {
  const body = recordingBody(newSession({ ...BASE, assignment: "12" }, CONTEXT));
  assert.equal(body.assignment, 12);
  assert.equal(body.project, "alpha");
});

test("without an assignment (or with a blank or invalid one) the body has none", () => {
  for (const assignment of [undefined, "", "0", "abc", -3]) {
    const body = recordingBody(newSession({ ...BASE, assignment }, CONTEXT));
    assert.equal("assignment" in body, false, String(assignment));
  }
});
