"""The OpenAPI schema is true: a schema-driven run (schemathesis, pinned in requirements.txt) against the platform
as `make run` starts it finds no 5xx, no undocumented status code or content type and no response that violates the
schema. Bounded: ``SCHEMA_RUN_EXAMPLES`` examples per operation (default 10) and a fixed seed, about a minute.

Real resources are named for the path parameters (the sample project, one of its demonstrations, a finished export,
a stored screenshot), so the run reaches the handlers instead of stopping at 404. The figures (operations, requests,
failures) are printed and kept in the JSON report next to the run's log.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from devtools.processes import running_platform

pytestmark = [pytest.mark.processes, pytest.mark.slow]

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
EXAMPLES = os.environ.get("SCHEMA_RUN_EXAMPLES", "10")
HOOKS = Path(__file__).resolve().parents[1] / "support" / "schemathesis_hooks.py"


def get_json(url: str, token: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=30) as response:
        return json.load(response)


def finished_export(url: str, token: str) -> int:
    job = get_json(f"{url}/api/exports/", token, {"project": "sample", "format": "weblinx"})
    deadline = time.monotonic() + 120
    while job["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.3)
        job = get_json(f"{url}/api/exports/{job['id']}/", token)
    assert job["status"] == "done", job
    return job["id"]


def config(url: str, token: str) -> str:
    """schemathesis.toml naming real resources for each group of paths."""
    demo = get_json(f"{url}/api/recordings/?project__name=sample", token)["results"][0]["name"]
    turns = get_json(f"{url}/api/recordings/{demo}/turns/", token)
    screenshot = next(turn["screenshot"] for turn in turns if turn["screenshot"])
    export = finished_export(url, token)
    website = get_json(
        f"{url}/api/websites/",
        token,
        {"project": "sample", "name": "schema-run", "url": "https://example.com/", "domain": "Info"},
    )["id"]
    proposal_round = get_json(f"{url}/api/proposal-rounds/", token, {"website": website})["id"]
    groups = [
        ("^/api/websites/", {"id": website, "project": "sample"}),
        ("^/api/proposal-rounds/", {"id": proposal_round}),
        ("^/api/projects/", {"name": "sample"}),
        ("^/api/(recordings|demonstrations)/", {"name": demo}),
        ("^/api/(exports|evaluations)/", {"id": export}),
        ("^/api/blobs/", {"sha256": screenshot, "project": "sample"}),
        ("^/api/model-limits/", {"project": "sample"}),
    ]
    return "\n".join(
        f'[[operations]]\ninclude-path-regex = "{regex}"\nparameters = {json.dumps(values).replace(":", " =")}\n'
        for regex, values in groups
    )


def test_a_schema_driven_run_finds_no_server_error_and_no_schema_violation(tmp_path, monkeypatch):
    # Model endpoint URLs are generated at random: with private addresses allowed the platform never resolves their
    # host names (a refusal would ask DNS), so nothing leaves the machine.
    monkeypatch.setenv("MODEL_ENDPOINTS_ALLOW_PRIVATE", "1")
    with running_platform(tmp_path / "var", "--sample-demos", "3") as platform:
        token = platform.credentials()["api token"]
        config_file = tmp_path / "schemathesis.toml"
        config_file.write_text(config(platform.url, token))
        report = tmp_path / "report.json"
        started = time.monotonic()
        result = subprocess.run(
            [
                *(str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(config_file)),
                *("run", f"{platform.url}/api/schema/", "--header", f"Authorization: Token {token}"),
                *("--checks", CHECKS, "--max-examples", EXAMPLES, "--seed", "1", "--workers", "1"),
                *("--request-timeout", "30", "--no-color", "--report", "json", "--report-json-path", str(report)),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)},
            cwd=tmp_path,  # its example cache stays with this run: every run starts from the same seed alone
        )
        seconds = time.monotonic() - started
        server_log = platform.output()

    summary = result.stdout[result.stdout.find("SUMMARY") :]
    print(f"schemathesis: {seconds:.0f} s\n{summary}")
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-3000:]
    assert "Internal Server Error" not in server_log
    cases = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert cases is not None, summary
    assert cases.group(1) == cases.group(2)
