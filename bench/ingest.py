"""Ingest benchmark: the recorder's HTTP upload path against a real ASGI server, compared with raw disk writes.

A synthetic corpus (``annotation.synth``: >= 1,000 browser turns on pages of 2,000 elements) is generated and encoded
first. Then, timed, a client does over one keep-alive connection exactly what the recorder does per demo: ``POST
/api/recordings/``; per batch of turns, one ``POST /api/recordings/<name>/bundle/`` carrying the turns and the blobs
not uploaded before (the recorder remembers what it uploaded; no missing-check round trip), gzipped (docs/ingest.md);
finally
``POST .../finish/``. The server is uvicorn as `make run` starts it, serving ``config.asgi`` in its own process, with
its own VAR_DIR (a fresh SQLite database) or, when DATABASE_URL is PostgreSQL, a throw-away database on that server.
MB are 10^6 bytes of payload (blobs + JSON documents, before compression; ``wire_bytes`` is what was sent).
``raw_write_mb_per_s`` writes the same pieces (each JSON document and each blob) to its own file with an fsync each,
on the same disk, in the same run: the baseline does not change with how the client packs them into requests."""

import collections
import contextlib
import gzip
import hashlib
import http.client
import json
import os
import shutil
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
from devtools.processes import free_port, scratch_database, spawn, stop_group

ROOT = Path(__file__).resolve().parent.parent
FULL = {"browser_turns": 1000, "turns_per_demo": 60, "elements": 2000}
QUICK = {"browser_turns": 30, "turns_per_demo": 24, "elements": 120}
BATCH_TURNS = 50
SEED = 2024
JSON = "application/json"
BUNDLE_MEDIA_TYPE = "application/x-webtasks-batch"  # annotation.actions.BUNDLE_MEDIA_TYPE, without Django
LATENCIES = ("batch",)  # mean milliseconds reported per request of these kinds
RETRYABLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class BenchError(RuntimeError):
    """The server answered something the recorder would not accept."""


@dataclass
class Upload:
    """One demo's requests, encoded before timing: per batch, the blobs it uses first and its turns."""

    spec: synth.DemoSpec
    start: bytes
    batches: list = field(default_factory=list)  # [(blobs [(sha, media_type, data)], turns)]
    finish: bytes = b""
    gzipped: list = field(default_factory=list)  # per batch, its gzipped body with every blob (see ``upload_batch``)

    def compress(self) -> "Upload":
        self.gzipped = [gzipped_batch(turns, blobs)[0] for blobs, turns in self.batches]
        return self


def build_corpus(browser_turns: int, turns_per_demo: int, elements: int) -> list[synth.DemoSpec]:
    """Demos of ``turns_per_demo`` turns until they hold at least ``browser_turns`` browser turns."""
    specs = []
    for spec in synth.generate_corpus(10**6, turns_per_demo, elements, SEED):
        specs.append(spec)
        if sum(s.browser_turns for s in specs) >= browser_turns:
            return specs
    raise AssertionError("unreachable")


def encode(spec: synth.DemoSpec, project: str, instructor: str) -> Upload:
    """Every request body of one demo, as bytes (a batch's body is framed once the server said what it lacks)."""
    blobs = {hashlib.sha256(data).hexdigest(): (media_type, data) for data, media_type in spec.blobs}
    upload = Upload(spec, dump(spec.start_body(project, instructor)))
    seen = set()
    for first in range(0, len(spec.turns), BATCH_TURNS):
        turns = spec.turns[first : first + BATCH_TURNS]
        used = [turn[key] for turn in turns for key in ("screenshot", "page", "bboxes") if key in turn]
        fresh = [sha for sha in dict.fromkeys(used) if sha not in seen]
        seen.update(fresh)
        upload.batches.append(([(sha, *blobs[sha]) for sha in fresh], turns))
    upload.finish = dump({"recording_end": spec.recording_end.isoformat()})
    return upload


def dump(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def batch_pieces(turns: list, blobs: list) -> list[bytes]:
    """The pieces of a batch body as the recorder frames it: the manifest line, then each blob's bytes."""
    manifest = {
        "turns": turns,
        "blobs": [{"sha256": sha, "media_type": media_type, "size": len(data)} for sha, media_type, data in blobs],
    }
    return [dump(manifest) + b"\n", *(data for _, _, data in blobs)]


def gzipped_batch(turns: list, blobs: list) -> tuple[bytes, int]:
    """A batch body gzipped as the recorder sends it (level 1, as ``Client`` compresses), and its payload bytes
    (manifest and blobs before compression)."""
    pieces = batch_pieces(turns, blobs)
    return gzip.compress(b"".join(pieces), compresslevel=1), sum(len(piece) for piece in pieces)


# --- The client -----------------------------------------------------------------------------------------


class Client:
    """A keep-alive HTTP/1.1 client that counts requests, payload bytes and bytes on the wire.

    ``pieces`` are the documents a request carries (a JSON body, or a batch's manifest and each blob): their bytes
    are what ``mb_per_s`` counts and what the raw-write baseline writes, one file each, however they are packed
    into requests or compressed."""

    def __init__(self, port: int, token: str, compress: bool = True, keep_pieces: bool = True):
        self.port, self.auth, self.compress, self.keep_pieces = port, f"Token {token}", compress, keep_pieces
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self.sent, self.wire, self.requests, self.pieces, self.blobs = 0, 0, collections.Counter(), [], 0
        self.uploaded = set()  # sha256 of the blobs the server stored for us: the recorder's upload marks
        self.seconds = collections.Counter()  # per kind of request, for mean latencies

    def request(
        self, method: str, path: str, body=None, media_type=None, expect=(200, 201), kind=None, pieces=None, gz=None
    ):
        """``body``: bytes (a batch's is gzipped when ``compress``, or sent as ``gz`` when that was made already)."""
        headers, started = {"Authorization": self.auth}, time.perf_counter()
        pieces = pieces if pieces is not None else ([body] if body else [])
        if media_type:
            headers["Content-Type"] = media_type
        if media_type == BUNDLE_MEDIA_TYPE and self.compress:
            headers["Content-Encoding"] = "gzip"
            body = gz or gzip.compress(body, compresslevel=1)
        try:
            response = self.send(method, path, body, headers)
        except RETRYABLE:  # the server closed an idle keep-alive connection; every request here is idempotent
            self.connection.close()
            response = self.send(method, path, body, headers)
        data = response.read()
        kind = kind or method
        self.requests[kind] += 1
        self.seconds[kind] += time.perf_counter() - started
        self.wire += len(body or b"")
        self.sent += sum(len(piece) for piece in pieces)
        if self.keep_pieces:
            self.pieces.extend(pieces)  # kept for the raw-write comparison (references, not copies)
        if response.status not in expect:
            raise BenchError(f"{method} {path} answered {response.status}: {data[:1000]!r}")
        return response.status, data

    def send(self, method, path, body, headers):
        self.connection.request(method, path, body=body, headers=headers)
        return self.connection.getresponse()

    def close(self):
        self.connection.close()


def upload_batch(client: Client, name: str, blobs: list, turns: list, gz: bytes | None = None) -> dict:
    """One batch the way the recorder sends it: the turns and the blobs it has not uploaded before, in one request.
    ``gz``: the gzipped body with every blob, made before timing (the recorder compresses in the browser, not on
    the server's cores); used when none of them was uploaded before."""
    fresh = [blob for blob in blobs if blob[0] not in client.uploaded]
    gz = gz if len(fresh) == len(blobs) else None
    pieces, client.blobs = batch_pieces(turns, fresh), client.blobs + len(fresh)
    path = f"/api/recordings/{name}/bundle/"
    _, body = client.request("POST", path, b"".join(pieces), BUNDLE_MEDIA_TYPE, (200, 201), "batch", pieces, gz)
    client.uploaded.update(sha for sha, _, _ in fresh)
    return json.loads(body)


def upload_demo(client: Client, upload: Upload) -> str:
    """Upload one demo the way the recorder does; returns its name."""
    _, body = client.request("POST", "/api/recordings/", upload.start, JSON, expect=(201,), kind="start")
    name = json.loads(body)["name"]
    for (blobs, turns), gz in zip(upload.batches, upload.gzipped or [None] * len(upload.batches), strict=True):
        upload_batch(client, name, blobs, turns, gz)
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


def migrate(env: dict, database_url: str | None) -> None:
    """The bench's database ready: a PostgreSQL scratch database is a copy of a migrated one
    (``scratch_database(migrated=True)``); SQLite's new file is migrated here."""
    if database_url is None:
        manage(env, "migrate", "--noinput", "-v", "0")


@contextlib.contextmanager
def asgi_server(env: dict, log_path: Path, workers: int = 1):
    """The ASGI server `make run` starts, serving ``config.asgi`` on a free port, output to ``log_path``; always
    stopped on exit. ``workers``: processes, as production runs one per core."""
    with asgi_server_process(env, log_path, workers) as (port, _):
        yield port


@contextlib.contextmanager
def asgi_server_process(env: dict, log_path: Path, workers: int = 1, app: str | None = None):
    """``asgi_server`` yielding ``(port, process)``: the process (its workers are its children) for reading the
    server's CPU time (``bench.cpu``). Started through ``devtools.processes.spawn``: its own process group, killed
    by a watchdog if this process dies first. ``app``: another ASGI application served the same way (``bench.bare``)."""
    from config.server import APPLICATION, server_command

    port = free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    process = spawn(server_command("127.0.0.1", port, workers, app or APPLICATION), log_path, env)
    try:
        wait_listening(port, process, log_path)
        yield port, process
    finally:
        stop_group(process)


def wait_listening(port: int, process: subprocess.Popen, log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise BenchError(f"server not listening on {port} after {timeout}s:\n{log_path.read_text()[-3000:]}")


# --- The measurement ------------------------------------------------------------------------------------


def raw_write(bodies: list, directory: Path) -> float:
    """Seconds to write each piece (JSON document, blob) to its own file and fsync it: the disk's speed for the
    same bytes, stored one file per blob as the server stores them."""
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
    uploads = [encode(spec, project, instructor).compress() for spec in specs]
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    log_path = Path(os.environ.get("VAR_DIR") or ROOT / "var") / "bench" / "ingest-server.log"
    try:
        with scratch_database("bench_ingest", migrated=True) as database_url:
            database = "postgresql" if database_url else "sqlite"
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            setup = SETUP.format(project=project, navigator=navigator, instructor=instructor)
            token = manage(env, "shell", "-c", setup).strip().splitlines()[-1]
            with asgi_server(env, log_path) as port:
                client, seconds, _ = timed_upload(port, token, uploads)
        raw_seconds = raw_write(client.pieces, work / "raw")
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
        "blobs": client.blobs,
        "bytes": client.sent,
        "wire_bytes": client.wire,
        "requests": sum(client.requests.values()) - client.requests["check"],  # checks come after timing
        **{f"{kind}_ms": round(1000 * client.seconds[kind] / client.requests[kind], 1) for kind in LATENCIES},
        "seconds": round(seconds, 2),
        "raw_write_seconds": round(raw_seconds, 2),
        "generate_seconds": round(generated, 2),
        "database": database,
        "batch_turns": BATCH_TURNS,
    }
