"""Servers a test run starts die with the run, however it is stopped: a pytest run using the suite's own fixtures
(SeaweedFS, the platform as `make run` starts it) and ``devtools.processes`` servers (uvicorn with two processes,
a Celery worker, Celery beat) is stopped with SIGTERM, as a time limit or a cancelled CI job stops it (no
``finally`` runs), and every process it had started, their children included, is gone. And `make run` killed
outright takes its server, worker and beat with it."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dj_database_url
import psycopg
import pytest

from devtools.processes import ROOT, free_port, release, scratch_database, start_platform

pytestmark = pytest.mark.processes

INNER_CONFTEST = """
import pytest

from devtools.processes import running_platform
from tests.conftest import s3_server  # noqa: F401


@pytest.fixture(scope="session")
def platform(tmp_path_factory):
    with running_platform(tmp_path_factory.mktemp("platform-var"), "--no-sample") as running:
        yield running
"""

INNER_TEST = """
import os
import time
from pathlib import Path

from devtools.processes import asgi_process, celery_beat, celery_worker


def test_servers_run_until_the_run_is_stopped(s3_server, platform, tmp_path):
    env = {"DATABASE_URL": platform.env["DATABASE_URL"], "VAR_DIR": str(platform.var_dir)}
    with (
        asgi_process(env, tmp_path / "server.log", workers=2),
        celery_worker(env, tmp_path / "worker.log"),
        celery_beat(env, tmp_path / "beat.log", tmp_path / "beat-schedule"),
    ):
        Path(os.environ["READY_FILE"]).write_text(platform.env["DATABASE_URL"])
        while True:
            time.sleep(3600)  # until the run is stopped
"""


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent, ...), None once it has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def processes() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, start time) of every process on the machine."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) is not None:
            table[int(entry.name)] = (int(fields[1]), fields[19])
    return table


def descendants(root: int) -> dict[int, str]:
    """pid → start time of every process under ``root`` (the start time tells a reused pid apart)."""
    table, found, frontier = processes(), {}, {root}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier and pid not in found}
        found.update({pid: table[pid][1] for pid in frontier})
    return found


def command_line(pid: int) -> bytes | None:
    """The process's command line, None once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return None


def inner_log(folder: Path) -> str:
    """The inner run's output, and the logs of the servers it started (each one's end)."""
    logs = sorted(folder.rglob("*.log"), key=lambda path: path.stat().st_mtime)
    return "\n".join(f"--- {path}\n{path.read_text(errors='replace')[-3000:]}" for path in logs)


def alive(pid: int, started_at: str) -> bool:
    """The process that had this pid and start time still runs (a zombie waiting to be reaped does not; another
    process that got the pid since is not it)."""
    fields = stat_fields(pid)
    return fields is not None and fields[19] == started_at and fields[0] != "Z"


def drop_database(url: str) -> None:
    if not url.startswith(("postgres://", "postgresql://")):
        return
    config = dj_database_url.parse(url)
    admin = {"host": config["HOST"], "port": config["PORT"] or 5432, "user": config["USER"], "dbname": "postgres"}
    with psycopg.connect(**admin, password=config["PASSWORD"], autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{config["NAME"]}" WITH (FORCE)')


def test_a_test_run_stopped_by_sigterm_leaves_no_server_running(tmp_path):
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    ready = tmp_path / "ready"
    env = {**os.environ, "READY_FILE": str(ready), "VAR_DIR": str(tmp_path / "var"), "CELERY_QUEUE": "sigterm-run"}
    env.pop("CACHE_KEY_PREFIX", None)  # the inner run's own, from its VAR_DIR
    command = [sys.executable, "-m", "pytest", "-q", "--rootdir", str(ROOT), "-c"]
    command += [str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")]
    with (tmp_path / "inner.log").open("w") as log:
        run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 400
        while not ready.exists():
            assert run.poll() is None, inner_log(tmp_path)
            assert time.monotonic() < deadline, "the inner run never started its servers"
            time.sleep(0.2)
        started = descendants(run.pid)
        commands = {pid: line for pid in started if (line := command_line(pid)) is not None}
        shown = f"{commands}\n{inner_log(tmp_path)}"
        assert any(b"weed" in line for line in commands.values()), shown
        assert sum(b"config.serve" in line for line in commands.values()) == 3, shown  # supervisor + 2
        assert sum(b"runplatform" in line for line in commands.values()) == 1, shown

        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == -signal.SIGTERM, inner_log(tmp_path)

        deadline = time.monotonic() + 60
        while (left := {pid for pid, at in started.items() if alive(pid, at)}) and time.monotonic() < deadline:
            time.sleep(0.2)  # the kernel's SIGKILL/SIGTERM is immediate; a graceful stop takes a moment
        assert not left, {pid: commands.get(pid) for pid in left}
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid, at in started.items():  # what a failing run left behind
            if alive(pid, at):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if ready.exists():
            drop_database(ready.read_text())


def test_make_run_killed_outright_takes_its_server_worker_and_beat_with_it(tmp_path):
    with scratch_database(migrated=True) as database_url:
        platform = start_platform(tmp_path, database_url, free_port(), "--no-sample")
        children: dict[int, str] = {}
        try:
            children = descendants(platform.process.pid)
            commands = [command_line(pid) or b"" for pid in children]
            assert sum(b"uvicorn" in line for line in commands) == 1, commands
            assert sum(b"beat" in line for line in commands) == 1, commands

            platform.process.kill()  # SIGKILL: no handler runs, the children are not told
            platform.process.wait()

            deadline = time.monotonic() + 60
            while (left := {pid for pid, at in children.items() if alive(pid, at)}) and time.monotonic() < deadline:
                time.sleep(0.2)  # they were sent SIGTERM and stop gracefully
            assert not left, [command_line(pid) for pid in left]
        finally:
            for pid, at in children.items():  # what a failing run left behind
                if alive(pid, at):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            release(platform.process)


@pytest.mark.parametrize("how", ["SIGTERM to the process group", "SIGTERM to runplatform", "Ctrl-C"])
def test_make_run_stopped_by_a_signal_stops_every_child_cleanly(tmp_path, how):
    """SIGTERM to `make run`'s process group (what a service manager or ``kill -- -PGID`` sends) stops the server,
    the worker and beat as Ctrl-C does: each ends on its own (none has to be killed), the worker's pool is not shot
    from under it (no ``WorkerLostError``), and nothing is left running."""
    with scratch_database(migrated=True) as database_url:
        platform = start_platform(tmp_path, database_url, free_port(), "--no-sample")
        children: dict[int, str] = {}
        try:
            children = descendants(platform.process.pid)
            commands = [command_line(pid) or b"" for pid in children]
            assert sum(b"celery -A config worker" in line for line in commands) >= 1, commands
            if how == "SIGTERM to the process group":
                os.killpg(platform.process.pid, signal.SIGTERM)
            elif how == "SIGTERM to runplatform":
                platform.process.send_signal(signal.SIGTERM)
            else:
                os.killpg(platform.process.pid, signal.SIGINT)
            assert platform.process.wait(timeout=120) == 0, platform.output()[-4000:]
            log = platform.output()
            assert "Stopped: server stopped, worker stopped, beat stopped." in log, log[-4000:]
            assert "WorkerLostError" not in log, log[-4000:]
            assert not [pid for pid, at in children.items() if alive(pid, at)]
        finally:
            for pid, at in children.items():  # what a failing run left behind
                if alive(pid, at):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            release(platform.process)
