"""Ingest benchmark: the recorder's HTTP upload path against a real ASGI server, compared with raw disk writes.

A synthetic corpus (``annotation.synth``: >= 1,000 browser turns on pages of 2,000 elements) is generated and encoded
first. Then, timed, a client does over one keep-alive connection exactly what the recorder does per demo: ``POST
/api/recordings/``; per batch of turns, ``POST /api/blobs/missing/`` with the blobs the batch uses first and ``PUT`` of
each missing one; ``POST /api/recordings/<name>/turns/``; finally ``POST .../finish/``. The server is uvicorn as `make
run` starts it, serving ``config.asgi`` in its own process, with its own VAR_DIR (a fresh SQLite database) or, when
DATABASE_URL is PostgreSQL, a throw-away database on that server. MB are 10^6 bytes of request bodies (blobs + JSON).
``raw_write_mb_per_s`` writes the same bodies to files with an fsync each, on the same disk, in the same run."""

import collections
import contextlib
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from annotation import synth
from config.secret_key import FILE_NAME, ensure_key_file
from devtools.processes import free_port, scratch_database

ROOT = Path(__file__).resolve().parent.parent
FULL = {"browser_turns": 1000, "turns_per_demo": 60, "elements": 2000}
QUICK = {"browser_turns": 30, "turns_per_demo": 24, "elements": 120}
BATCH_TURNS = 50
SEED = 2024
JSON = "application/json"
LATENCIES = ("missing", "put", "turns")  # mean milliseconds reported per request of these kinds
RETRYABLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class BenchError(RuntimeError):
    """The server answered something the recorder would not accept."""


@dataclass
class Upload:
    """One demo's requests, encoded before timing: per batch, the blobs it uses first and its JSON body."""

    spec: synth.DemoSpec
    start: bytes
    batches: list = field(default_factory=list)  # [(blobs [(sha, media_type, data)], body)]
    finish: bytes = b""


def build_corpus(browser_turns: int, turns_per_demo: int, elements: int) -> list[synth.DemoSpec]:
    """Demos of ``turns_per_demo`` turns until they hold at least ``browser_turns`` browser turns."""
    specs = []
    for spec in synth.generate_corpus(10**6, turns_per_demo, elements, SEED):
        specs.append(spec)
        if sum(s.browser_turns for s in specs) >= browser_turns:
            return specs
    raise AssertionError("unreachable")


def encode(spec: synth.DemoSpec, project: str, instructor: str) -> Upload:
    """Every request body of one demo, as bytes."""
    blobs = {hashlib.sha256(data).hexdigest(): (media_type, data) for data, media_type in spec.blobs}
    upload = Upload(spec, dump(spec.start_body(project, instructor)))
    seen = set()
    for first in range(0, len(spec.turns), BATCH_TURNS):
        turns = spec.turns[first : first + BATCH_TURNS]
        used = [turn[key] for turn in turns for key in ("screenshot", "page", "bboxes") if key in turn]
        fresh = [sha for sha in dict.fromkeys(used) if sha not in seen]
        seen.update(fresh)
        upload.batches.append(([(sha, *blobs[sha]) for sha in fresh], dump({"turns": turns})))
    upload.finish = dump({"recording_end": spec.recording_end.isoformat()})
    return upload


def dump(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# --- The client -----------------------------------------------------------------------------------------


class Client:
    """A keep-alive HTTP/1.1 client that counts requests and body bytes sent."""

    def __init__(self, port: int, token: str):
        self.port, self.auth = port, f"Token {token}"
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self.sent, self.requests, self.bodies = 0, collections.Counter(), []
        self.seconds = collections.Counter()  # per kind of request, for mean latencies

    def request(self, method: str, path: str, body: bytes | None = None, media_type=None, expect=(200, 201), kind=None):
        headers, started = {"Authorization": self.auth}, time.perf_counter()
        if media_type:
            headers["Content-Type"] = media_type
        try:
            response = self.send(method, path, body, headers)
        except RETRYABLE:  # the server closed an idle keep-alive connection; every request here is idempotent
            self.connection.close()
            response = self.send(method, path, body, headers)
        data = response.read()
        kind = kind or method
        self.requests[kind] += 1
        self.seconds[kind] += time.perf_counter() - started
        if body:
            self.sent += len(body)
            self.bodies.append(body)  # kept for the raw-write comparison (references, not copies)
        if response.status not in expect:
            raise BenchError(f"{method} {path} answered {response.status}: {data[:1000]!r}")
        return response.status, data

    def send(self, method, path, body, headers):
        self.connection.request(method, path, body=body, headers=headers)
        return self.connection.getresponse()

    def close(self):
        self.connection.close()


def upload_demo(client: Client, upload: Upload) -> str:
    """Upload one demo the way the recorder does; returns its name."""
    _, body = client.request("POST", "/api/recordings/", upload.start, JSON, expect=(201,), kind="start")
    name, project = json.loads(body)["name"], json.loads(upload.start)["project"]
    for blobs, turns in upload.batches:
        if blobs:
            asked = dump({"project": project, "sha256": [sha for sha, _, _ in blobs]})
            _, body = client.request("POST", "/api/blobs/missing/", asked, JSON, expect=(200,), kind="missing")
            missing = set(json.loads(body)["missing"])
            for sha, media_type, data in blobs:
                if sha in missing:
                    client.request(
                        "PUT", f"/api/blobs/{sha}?project={project}", data, media_type, expect=(201,), kind="put"
                    )
        client.request("POST", f"/api/recordings/{name}/turns/", turns, JSON, expect=(201,), kind="turns")
    client.request("POST", f"/api/recordings/{name}/finish/", upload.finish, JSON, expect=(200,), kind="finish")
    return name


def check_stored(client: Client, names: list, uploads: list) -> None:
    """After timing: every demo is recorded with all its turns."""
    for name, upload in zip(names, uploads, strict=True):
        _, body = client.request("GET", f"/api/recordings/{name}/", expect=(200,), kind="check")
        demo = json.loads(body)
        if (demo["status"], demo["turn_count"]) != ("recorded", len(upload.spec.turns)):
            raise BenchError(f"{name} stored as {demo['status']} with {demo['turn_count']} turns")


# --- The server -----------------------------------------------------------------------------------------


def server_env(var_dir: Path, database_url: str | None) -> dict:
    ensure_key_file(var_dir / FILE_NAME)  # as `make run` keeps one: the server refuses a development key
    env = {**os.environ, "VAR_DIR": str(var_dir), "MEDIA_ROOT": str(var_dir / "media"), "DEBUG": "0"}
    env.update(PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings", ALLOWED_HOSTS="127.0.0.1,localhost")
    env.pop("AWS_STORAGE_BUCKET_NAME", None)  # blobs go to local disk, the same disk as the raw writes
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


SETUP = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotation.models import Membership, Project, Role
project = Project.objects.create(name={project!r}, title="Ingest benchmark")
for username in ({navigator!r}, {instructor!r}):
    user = get_user_model().objects.create_user(username)
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
print(Token.objects.create(user=get_user_model().objects.get(username={navigator!r})).key)
"""


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode:
        raise BenchError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@contextlib.contextmanager
def asgi_server(env: dict, log_path: Path):
    """The ASGI server `make run` starts, serving ``config.asgi`` on a free port, output to ``log_path``; always
    stopped on exit."""
    from config.server import server_command

    port = free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            server_command("127.0.0.1", port),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_listening(port, process, log_path)
            yield port
        finally:
            stop(process)


def wait_listening(port: int, process: subprocess.Popen, log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise BenchError(f"server not listening on {port} after {timeout}s:\n{log_path.read_text()[-3000:]}")


def stop(process: subprocess.Popen, grace: float = 10) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- The measurement ------------------------------------------------------------------------------------


def raw_write(bodies: list, directory: Path) -> float:
    """Seconds to write each body to its own file and fsync it: the disk's speed for the same bytes."""
    directory.mkdir(parents=True)
    started = time.perf_counter()
    for index, body in enumerate(bodies):
        with (directory / f"{index:06d}").open("wb") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
    return time.perf_counter() - started


def timed_upload(port: int, token: str, uploads: list) -> tuple[Client, float, list]:
    client = Client(port, token)
    started = time.perf_counter()
    names = [upload_demo(client, upload) for upload in uploads]
    seconds = time.perf_counter() - started
    check_stored(client, names, uploads)
    client.close()
    return client, seconds, names


def run(quick: bool = False) -> dict:
    """Generate the corpus, start a server, time the upload, time raw writes; return the figures."""
    size = QUICK if quick else FULL
    started = time.perf_counter()
    specs = build_corpus(**size)
    generated = time.perf_counter() - started
    suffix = uuid.uuid4().hex[:8]
    project, navigator, instructor = f"bench-{suffix}", f"bench-nav-{suffix}", f"bench-ins-{suffix}"
    uploads = [encode(spec, project, instructor) for spec in specs]
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    log_path = Path(os.environ.get("VAR_DIR") or ROOT / "var") / "bench" / "ingest-server.log"
    try:
        with scratch_database("bench_ingest") as database_url:
            database = "postgresql" if database_url else "sqlite"
            env = server_env(work / "var", database_url)
            manage(env, "migrate", "--noinput", "-v", "0")
            setup = SETUP.format(project=project, navigator=navigator, instructor=instructor)
            token = manage(env, "shell", "-c", setup).strip().splitlines()[-1]
            with asgi_server(env, log_path) as port:
                client, seconds, _ = timed_upload(port, token, uploads)
        raw_seconds = raw_write(client.bodies, work / "raw")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return figures(specs, size, client, seconds, raw_seconds, generated, database)


def figures(specs, size, client: Client, seconds: float, raw_seconds: float, generated: float, database) -> dict:
    turns = sum(len(spec.turns) for spec in specs)
    mb_per_s, raw_mb_per_s = client.sent / 1e6 / seconds, client.sent / 1e6 / raw_seconds
    return {
        "turns": turns,
        "turns_per_s": round(turns / seconds, 1),
        "mb_per_s": round(mb_per_s, 2),
        "raw_write_mb_per_s": round(raw_mb_per_s, 2),
        "ratio_vs_raw": round(mb_per_s / raw_mb_per_s, 3),
        "browser_turns": sum(spec.browser_turns for spec in specs),
        "demos": len(specs),
        "elements": size["elements"],
        "blobs": client.requests["put"],
        "bytes": client.sent,
        "requests": sum(client.requests.values()) - client.requests["check"],  # checks come after timing
        **{f"{kind}_ms": round(1000 * client.seconds[kind] / client.requests[kind], 1) for kind in LATENCIES},
        "seconds": round(seconds, 2),
        "raw_write_seconds": round(raw_seconds, 2),
        "generate_seconds": round(generated, 2),
        "database": database,
        "batch_turns": BATCH_TURNS,
    }
