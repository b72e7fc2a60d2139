"""Real processes for integration tests and benchmarks: the platform exactly as `make run` starts it.

``running_platform`` starts ``manage.py runplatform`` (migrations, admin, sample data, uvicorn, Celery worker and
beat)
with its own VAR_DIR and, when DATABASE_URL points at PostgreSQL, its own throw-away database, so it never
touches the database pytest-django uses.

Every server started here goes through ``spawn``: its own process group (stopped as one), watched by a
``devtools.watchdog`` that kills the group when the process that started it ends, however it ends. A test run
stopped by SIGTERM or SIGKILL (a time limit, a cancelled CI job) runs no ``finally``; without this its servers
(SeaweedFS, uvicorn, Celery, `make run`) would run on for good.
"""

import contextlib
import hashlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import dj_database_url
import psycopg

ROOT = Path(__file__).resolve().parent.parent


def spawn(command: list[str], log: Path, env: dict, cwd: Path = ROOT, before=None) -> subprocess.Popen:
    """A server for a test or benchmark, output to ``log``, in its own process group (``stop_group``), with a
    watchdog (``devtools.watchdog``) that kills the whole group once this process lets it go (``release``) or
    ends, however it ends and whichever thread started it. ``before``: a ``preexec_fn``."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=before,
        )
    watchdog = [sys.executable, "-m", "devtools.watchdog", str(process.pid)]
    process.watchdog = subprocess.Popen(watchdog, cwd=ROOT, stdin=subprocess.PIPE, start_new_session=True)
    return process


def release(process: subprocess.Popen) -> None:
    """Tell a server's watchdog that the server was stopped here (it leaves without killing anything)."""
    watchdog = getattr(process, "watchdog", None)
    if watchdog is not None and not watchdog.stdin.closed:
        with contextlib.suppress(BrokenPipeError):
            watchdog.stdin.write(b"released")
            watchdog.stdin.close()
        watchdog.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def scratch_database(prefix: str = "webdemos", migrated: bool = False):
    """A fresh PostgreSQL database URL when DATABASE_URL is PostgreSQL (dropped afterwards), else None (SQLite).
    ``migrated``: a copy of a database the migrations already ran on (``migrated_template``), so a server or bench
    started on it skips the ten seconds of migrating an empty one; without it, an empty database (a first run)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield None
        return
    admin = admin_connection(url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    template = f' TEMPLATE "{migrated_template(url)}"' if migrated else ""
    with psycopg.connect(**admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{template}')
    try:
        yield url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def lock_connection(admin: dict) -> psycopg.Connection:
    """A connection to the server's ``postgres`` database where it has one: advisory locks are per database, so
    processes whose URLs name different databases (worktrees sharing a server) only exclude each other there."""
    try:
        return psycopg.connect(**{**admin, "dbname": "postgres"})
    except psycopg.OperationalError:
        return psycopg.connect(**admin)


def admin_connection(url: str) -> dict:
    """psycopg's connection arguments for the database of ``url`` (where databases are created and dropped)."""
    config = dj_database_url.parse(url)
    return {
        "host": config["HOST"],
        "port": config["PORT"] or 5432,
        "user": config["USER"],
        "password": config["PASSWORD"],
        "dbname": config["NAME"],
        "autocommit": True,
    }


def migrations_digest() -> str:
    """What the migrated template depends on: every migration file here and the pinned requirements (the
    migrations of Django's and other packages' apps)."""
    digest = hashlib.sha256()
    for path in sorted([*ROOT.glob("*/migrations/*.py"), ROOT / "requirements.txt"]):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


TEMPLATE_PREFIX = "webdemos_migrated_"
KEPT_TEMPLATES = 4  # migration sets whose template stays (worktrees on one server each have theirs)


def migrated_template(url: str) -> str:
    """The name of a database every migration has run on, made once per set of migrations (under an advisory
    lock, so processes starting at once make it once) and kept for the next run; the oldest beyond
    ``KEPT_TEMPLATES`` are dropped."""
    name = TEMPLATE_PREFIX + migrations_digest()
    with lock_connection(admin_connection(url)) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [TEMPLATE_PREFIX])
        try:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if found is None:
                # Worktrees sharing one server each have their own set: only the oldest beyond KEPT_TEMPLATES go.
                for (old,) in conn.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname NOT LIKE %s"
                    " ORDER BY oid DESC OFFSET %s",
                    [TEMPLATE_PREFIX + "%", "%_building", KEPT_TEMPLATES - 1],
                ).fetchall():
                    conn.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
                building = f"{name}_building"
                conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{building}"')
                env = {**os.environ, "DATABASE_URL": url.rsplit("/", 1)[0] + f"/{building}"}
                env.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
                done = subprocess.run(
                    [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                if done.returncode != 0:
                    conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                    raise RuntimeError(f"migrating the template database failed:\n{done.stdout}{done.stderr}")
                conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", [TEMPLATE_PREFIX])
    return name


@dataclass
class Platform:
    """A running platform: its base URL, environment, folder and process."""

    url: str
    env: dict
    var_dir: Path
    process: subprocess.Popen
    log: Path

    def credentials(self) -> dict:
        lines = (self.var_dir / "admin-credentials.txt").read_text().splitlines()
        return dict(line.split(": ", 1) for line in lines if ": " in line)

    def manage(self, *args, timeout=120) -> subprocess.CompletedProcess:
        """Run a management command against the same database and files."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def wait_http_ok(url: str, timeout: float, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"platform exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
            urllib.request.urlopen(url, timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.5)
    raise TimeoutError(f"{url} not up after {timeout}s:\n{log.read_text()[-4000:]}")


def start_platform(var_dir: Path, database_url: str | None, port: int, *extra, sigint_ignored=False) -> Platform:
    """``runplatform`` in its own var dir; ``sigint_ignored`` starts it as a background job of a script would be."""
    env = {
        **os.environ,
        "VAR_DIR": str(var_dir),
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        "CELERY_QUEUE": f"platform-{port}",
    }
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    var_dir.mkdir(parents=True, exist_ok=True)
    log = var_dir / f"platform-{port}.log"
    command = [sys.executable, "manage.py", "runplatform", "--port", str(port), *extra]
    ignore_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    process = spawn(command, log, env, before=ignore_sigint)
    platform = Platform(f"http://127.0.0.1:{port}", env, var_dir, process, log)
    try:
        wait_http_ok(platform.url + "/healthz", 240, process, log)
        # The worker and beat start beside the server: wait for them too, or a control broadcast (inspect ping) sent
        # before the worker subscribed is lost.
        wait_logged(("ready.", "beat: Starting"), 120, process, log)
    except BaseException:
        stop_group(process)
        raise
    return platform


def wait_logged(lines: tuple, timeout: float, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not all(line in log.read_text(errors="replace") for line in lines):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"platform did not log {lines}:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)


def stop_platform(platform: Platform, timeout: float = 60) -> int:
    """Ctrl-C, as a person would; returns the exit code. ``timeout`` is above the platform's own bound on stopping
    (``runplatform.stop_all``: 30 s of warm shutdown, then 20 s of cold), so a slow stop shows in its log as a child
    killed, not as this wait running out."""
    try:
        if platform.process.poll() is None:
            platform.process.send_signal(signal.SIGINT)
            try:
                platform.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired as error:
                platform.process.kill()
                platform.process.wait()
                raise RuntimeError(f"the platform did not stop in {timeout} s:\n{platform.output()[-4000:]}") from error
        return platform.process.returncode
    finally:
        release(platform.process)


@contextlib.contextmanager
def running_platform(var_dir: Path, *extra):
    with scratch_database(migrated=True) as database_url:
        platform = start_platform(var_dir, database_url, free_port(), *extra)
        try:
            yield platform
        finally:
            stop_platform(platform)


@contextlib.contextmanager
def celery_worker(env_overrides: dict, log: Path, timeout: float = 240):
    """A real Celery worker (solo pool, its own process group) with ``env_overrides``; stopped on exit.

    Yields the process; ``os.killpg(process.pid, SIGKILL)`` kills it the way a lost machine would.
    """
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1", **env_overrides}
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool",
        "solo",
        "--loglevel",
        "INFO",
        "--without-mingle",
        "--without-gossip",
    ]
    process = spawn(command, log, env)
    try:
        deadline = time.monotonic() + timeout
        while "ready." not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"celery worker did not start:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield process
    finally:
        stop_group(process)


@contextlib.contextmanager
def asgi_server(env_overrides: dict, log: Path, timeout: float = 240):
    """The ASGI server exactly as `make run` starts it (uvicorn, ``config.asgi``) on a free port, with
    ``env_overrides``; yields its base URL. Stopped on exit."""
    with asgi_process(env_overrides, log, timeout) as (url, _):
        yield url


@contextlib.contextmanager
def asgi_process(env_overrides: dict, log: Path, timeout: float = 240, workers: int = 1):
    """``asgi_server`` yielding ``(url, process)``, for tests that kill a server the way a lost machine goes.
    ``workers`` > 1: that many server processes under ``config.serve`` (``process`` is their supervisor)."""
    from config.server import server_command

    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1", **env_overrides}
    process = spawn(server_command("127.0.0.1", port, workers), log, env)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/healthz", timeout, process, log)
        yield f"http://127.0.0.1:{port}", process
    finally:
        stop_group(process)


@contextlib.contextmanager
def celery_beat(env_overrides: dict, log: Path, schedule: Path, timeout: float = 240):
    """Celery beat (the periodic tasks of ``CELERY_BEAT_SCHEDULE``) with ``env_overrides``; stopped on exit."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1", **env_overrides}
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "beat",
        "--loglevel",
        "INFO",
        "--schedule",
        str(schedule),
    ]
    process = spawn(command, log, env)
    try:
        deadline = time.monotonic() + timeout
        while "beat: Starting" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"celery beat did not start:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield process
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM to the process's group (started with ``start_new_session``), SIGKILL if it lingers; then its
    watchdog is released."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    release(process)


def database_url(settings_dict: dict) -> str:
    """The URL of the database a Django connection uses (so a subprocess can open the same one)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    auth = settings_dict["USER"] + (f":{settings_dict['PASSWORD']}" if settings_dict["PASSWORD"] else "")
    return f"postgres://{auth}@{settings_dict['HOST']}:{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}"
