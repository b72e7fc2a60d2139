"""`make run`: first-run setup, the real server, worker and beat it starts, and a clean Ctrl-C."""

import json
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from devtools.processes import ROOT, free_port, scratch_database, start_platform, stop_platform

pytestmark = pytest.mark.processes


def get_json(url: str, token: str):
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def child_pids(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return children


def is_running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_first_run_prints_admin_credentials_and_creates_sample_demos(platform):
    credentials = platform.credentials()
    assert credentials["username"] == "admin"
    assert credentials["password"] in platform.output()
    demos = get_json(f"{platform.url}/api/recordings/?project__name=sample", credentials["api token"])
    assert demos["count"] == 2
    assert all(demo["turn_count"] > 0 for demo in demos["results"])
    assert sorted(demo["status"] for demo in demos["results"]) == ["recorded", "recorded"]  # 2 demos: none validated


def test_platform_runs_a_real_celery_worker(platform):
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "inspect", "ping", "--timeout", "10"],
        cwd=ROOT,
        env=platform.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pong" in result.stdout


def test_platform_runs_celery_beat_with_the_periodic_tasks(platform):
    assert "beat: Starting" in platform.output()
    assert (platform.var_dir / "celerybeat-schedule").exists() or any(platform.var_dir.glob("celerybeat-schedule*"))


def test_platform_serves_the_admin_and_api_docs(platform):
    for path in ("/admin/login/", "/api/docs/", "/api/schema/", "/"):
        with urllib.request.urlopen(platform.url + path, timeout=10) as response:
            assert response.status == 200, path


def test_ctrl_c_stops_everything_and_a_second_run_keeps_the_first_runs_data(tmp_path):
    with scratch_database() as database_url:
        first = start_platform(tmp_path, database_url, free_port(), "--sample-demos", "1")
        children = child_pids(first.process.pid)
        credentials = first.credentials()
        key_file = tmp_path / "secret_key"
        key = key_file.read_text()
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert len(children) == 3  # server, worker and beat
        assert stop_platform(first) == 0
        assert not any(is_running(pid) for pid in children)

        # Started the way a script's background job is (SIGINT ignored, inherited): Ctrl-C must still stop it.
        second = start_platform(tmp_path, database_url, free_port(), "--sample-demos", "1", sigint_ignored=True)
        try:
            assert second.credentials() == credentials
            assert key_file.read_text() == key  # kept: sessions and signed values survive a restart
            assert "Created admin account" not in second.output()
            demos = get_json(f"{second.url}/api/recordings/?project__name=sample", credentials["api token"])
            assert demos["count"] == 1
        finally:
            assert stop_platform(second) == 0


def request_json(url: str, token: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as response:
        return json.load(response)


def test_the_platforms_own_worker_runs_an_export_of_the_sample_project(platform):
    import tarfile
    import time

    token = platform.credentials()["api token"]
    job = request_json(
        f"{platform.url}/api/exports/", token, {"project": "sample", "format": "weblinx", "statuses": ["recorded"]}
    )
    deadline = time.monotonic() + 120
    while job["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.3)
        job = request_json(f"{platform.url}/api/exports/{job['id']}/", token)
    assert job["status"] == "done", job
    request = urllib.request.Request(job["download_url"], headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response, tarfile.open(fileobj=response, mode="r|gz") as tar:
        names = [member.name for member in tar]
    assert any(name.endswith("/splits.json") for name in names)
    assert any(name.endswith("/manifest.json") for name in names)
    assert sum(name.endswith("/replay.json") for name in names) == 2
