"""Many recorders at once: N simulated recorders, each uploading one action per second, against the real server.

Each recorder has its own user, token and keep-alive connection to the ASGI server `make run` starts
(``config/server.py``, uvicorn serving ``config.asgi``; with PostgreSQL (DATABASE_URL, a scratch database) one
process per core as in production, ``server_workers``).
It starts a recording, then every second (recorder i of N from i/N s into the run: independent annotators do not
act in the same instant) takes the next action of a synthetic demonstration (``annotation.synth``:
page HTML, bboxes and screenshots as the ``ingest`` benchmark's corpus) and uploads it as the recorder does: one
gzipped ``POST .../batch/`` with the turn and the blobs it has not uploaded before. Every recorder's
blobs are its own (a recorder id is written into each page, bboxes and PNG), so nothing is deduplicated away.
The recorders' own work (marking, hashing, framing and gzipping each action's batch) is done before the run, as
the ``ingest`` benchmark does it: a recorder does it in a browser on its annotator's machine, not on the server's
cores, so during the run the simulated recorders only send bytes and wait for answers, all of them on one event
loop (``Recorder``).

``upload_ms_p95``: the 95th percentile of the time from an action's second to the server's 2xx for it (an upload
that waits for the previous one counts the wait). A failed request (network error, 5xx, 429) is retried after a
short pause, as the recorder retries. After the run every recording is finished and read back: ``lost`` is actions
the server answered 2xx for but did not store; ``duplicated`` is stored turns beyond one per action;
``not_uploaded`` is actions still waiting ``DRAIN_SECONDS`` after the last action's second (a real recorder keeps
them in IndexedDB and sends them later; here the run stops).

The baseline, run first: the same recorders at the same rate for ``bare_seconds`` (recorder i of N from the demo's
(i/N)-th action, so the short run has the whole demo's mix of actions), their batches posted to ``bench.bare``
served as the platform is (same uvicorn settings and process count): the token, the access check and the platform's
``do_ingest_bundle``, with no request stack. ``server_cpu_ratio_vs_bare`` is the platform's server CPU per action
over the bare one's (target ≤ 1.5); ``recorders_per_core`` is ``recorders_at_1s`` over the machine's cores.
"""

import asyncio
import hashlib
import http.client
import json
import os
import shutil
import statistics
import struct
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from devtools.processes import scratch_database

from . import cpu, ingest

FULL = {"recorders": 100, "seconds": 60, "elements": 2000, "bare_seconds": 20}
QUICK = {"recorders": 4, "seconds": 4, "elements": 120, "bare_seconds": 2}
BARE_APP = "bench.bare:application"  # the baseline: the same batches, the same actions, no request stack
# ``recorders_at_1s``: the recorder counts tried, in order, each for the run's seconds (steps of 50).
CAPACITY = (50, 100, 150, 200, 250, 300)
CAPACITY_QUICK = (2, 4)
RETRY_PAUSE = 0.5  # seconds before a failed upload is tried again
DRAIN_SECONDS = 300  # how long the recorders may take, after the last action second, to upload what they hold

SETUP = """
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotation.models import Membership, Project, Role
project = Project.objects.create(name={project!r}, title="Recorders benchmark")
tokens = []
for index in range({count}):
    user = get_user_model().objects.create_user(f"{prefix}-{{index}}")
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    tokens.append(Token.objects.create(user=user).key)
print(json.dumps(tokens))
"""


# --- Each recorder's own copy of the synthetic actions ---------------------------------------------------


def png_with_text(data: bytes, text: bytes) -> bytes:
    """The PNG with a ``tEXt`` chunk after its header: the same image, other bytes (a valid PNG still)."""
    chunk = b"tEXt" + b"recorder\0" + text
    block = struct.pack(">I", len(chunk) - 4) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return data[:33] + block + data[33:]  # 8-byte signature + 25-byte IHDR chunk


def marked(data: bytes, media_type: str, mark: str) -> bytes:
    if media_type == "image/png":
        return png_with_text(data, mark.encode())
    if media_type == "text/html":
        return data + f"<!-- {mark} -->".encode()
    box = json.dumps({mark: {"x": 0, "y": 0, "width": 1, "height": 1}})[1:-1].encode()
    return b"{" + box + b"," + data[1:]  # bboxes: one more box, keyed by the mark


class Actions:
    """A recorder's actions, made one at a time (``prepare`` keeps only each one's gzipped batch, ~5 MB for a
    recorder's 60: 100 recorders' raw blobs would take several GB): the demo's turns with this recorder's client
    ids and blobs, each with the blobs it uses first."""

    def __init__(self, spec, originals: dict, mark: str):
        self.turns, self.originals, self.mark = spec.turns, originals, mark
        self.renamed = {}  # original sha256 → this recorder's

    def __len__(self):
        return len(self.turns)

    def __getitem__(self, index: int) -> tuple[dict, list]:
        turn = {**self.turns[index], "client_id": f"{self.mark}-{self.turns[index]['client_id']}"}
        fresh = [sha for sha in dict.fromkeys(refs(turn)) if sha not in self.renamed]
        blobs = [self.own(sha) for sha in fresh]
        for key in ("screenshot", "page", "bboxes"):
            if key in turn:
                turn[key] = self.renamed[turn[key]]
        if turn.get("frames"):
            turn["frames"] = [{**frame, "screenshot": self.renamed[frame["screenshot"]]} for frame in turn["frames"]]
        return turn, blobs

    def own(self, sha: str) -> tuple[str, str, bytes]:
        media_type, data = self.originals[sha]
        data = marked(data, media_type, self.mark)
        self.renamed[sha] = hashlib.sha256(data).hexdigest()
        return self.renamed[sha], media_type, data


def refs(turn: dict) -> list[str]:
    found = [turn[key] for key in ("screenshot", "page", "bboxes") if key in turn]
    return found + [frame["screenshot"] for frame in turn.get("frames") or []]


@dataclass
class Prepared:
    """One action's request, made before the run: its turn's client id, the gzipped batch body and its payload
    bytes (manifest and blobs before compression)."""

    client_id: str
    gz: bytes = field(repr=False)
    payload: int


def prepare(actions: Actions, count: int, offset: int = 0) -> list[Prepared]:
    """``count`` actions' batches from the ``offset``-th on (after the last, the first again), each with the blobs
    this recorder has not sent before."""
    prepared = []
    for index in range(offset, offset + count):
        turn, blobs = actions[index % len(actions)]
        prepared.append(Prepared(turn["client_id"], *ingest.gzipped_batch([turn], blobs)))
    return prepared


# --- One recorder ---------------------------------------------------------------------------------------


class Recorder:
    """Uploads one action per second from ``start_at`` for the run's seconds; records each action's latency.

    The timed uploads run as a task on the run's one event loop (``play``), each recorder on its own keep-alive
    connection: a browser's fetch costs its annotator's machine, not the server's cores. 40 threads of
    ``http.client`` took 0.69 ms of this machine's CPU per upload, the event loop 0.55 (0.33-0.38 ms at 100
    recorders), against ~9 ms of server CPU. Starting and finishing the recording (untimed) go through
    ``ingest.Client``."""

    def __init__(self, port: int, token: str, spec, prepared: list, mark: str, upload_port: int | None = None):
        self.client = ingest.Client(port, token, keep_pieces=False)
        self.port, self.auth = upload_port or port, f"Token {token}"  # uploads to ``upload_port``: the baseline
        self.spec, self.prepared, self.mark, self.start_at = spec, prepared, mark, None
        self.latencies, self.answered, self.retries, self.name, self.error = [], [], 0, None, None
        self.sent = 0  # payload bytes of the uploads the server answered 2xx for
        self.stopping = False  # set when the run's time is up: upload no further action
        self.connection = None  # (reader, writer) of the upload connection

    async def run(self):
        try:
            await self.record()
        except Exception as error:  # reported as lost actions and in the figures, never silently
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.disconnect()

    def begin(self, project: str) -> None:
        """Start this recorder's recording (before the run's first second)."""
        start = {**self.spec.start_body(project), "client_id": f"{self.mark}-{self.spec.client_id}"}
        _, body = self.retried("POST", "/api/recordings/", ingest.dump(start), ingest.JSON, (201, 200))
        self.name = json.loads(body)["name"]

    async def record(self):
        for second, action in enumerate(self.prepared):
            if self.stopping:
                return
            due = self.start_at + second
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            await self.retried_batch(action)
            self.latencies.append(time.monotonic() - due)
            self.answered.append(action.client_id)

    async def retried_batch(self, action: Prepared):
        path = f"/api/recordings/{self.name}/bundle/"
        while True:
            try:
                status, body = await self.post(path, action.gz)
            except (OSError, EOFError, ValueError):  # the connection broke: opened again, the upload sent again
                await self.pause()
                continue
            if status in (200, 201):
                self.sent += action.payload
                return
            if status != 429 and status < 500:  # as the recorder: server trouble is retried, 4xx is not
                raise ingest.BenchError(f"POST {path} answered {status}: {body[:1000]!r}")
            await self.pause()

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.connection is None:
            self.connection = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.connection
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: {self.auth}\r\n"
            f"Content-Type: {ingest.BUNDLE_MEDIA_TYPE}\r\nContent-Encoding: gzip\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode("latin-1"))
        writer.write(body)
        await writer.drain()
        status, keep_alive, answer = await read_response(reader)
        if not keep_alive:
            self.disconnect()
        return status, answer

    def disconnect(self):
        if self.connection is not None:
            self.connection[1].close()
            self.connection = None

    def retried(self, *args):
        while True:
            try:
                return self.client.request(*args)
            except (OSError, http.client.HTTPException):  # the connection is closed and opened again
                self.retries += 1
                self.client.close()
                time.sleep(RETRY_PAUSE)

    async def pause(self):
        self.retries += 1
        self.disconnect()
        await asyncio.sleep(RETRY_PAUSE)

    def stored(self) -> list[str]:
        """Finish the recording and read back the client ids of its stored turns."""
        if self.name is None:
            return []
        finish = ingest.dump({"recording_end": self.spec.recording_end.isoformat()})
        self.retried("POST", f"/api/recordings/{self.name}/finish/", finish, ingest.JSON, (200,))
        _, body = self.retried("GET", f"/api/recordings/{self.name}/turns/", None, None, (200,))
        return [turn["client_id"] for turn in json.loads(body)]


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool, bytes]:
    """An HTTP/1.1 response: its status, whether the connection stays open, its body (``Content-Length``,
    chunked, or up to the end of the connection). Raises EOFError or ValueError on a broken connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        raise EOFError("the server closed the connection before answering") from error
    status_line, *lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in filter(None, lines):
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    keep_alive = headers.get("connection", "").lower() != "close"
    if "content-length" in headers:
        return status, keep_alive, await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")  # the last chunk's line ends the body (no trailers from our server)
        return status, keep_alive, b"".join(parts)
    return status, False, await reader.read()


# --- The run --------------------------------------------------------------------------------------------


def percentile(values: list, fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(quick: bool = False) -> dict:
    """The run at ``recorders`` (its figures), then the capacity search (``recorders_at_1s``), on one server."""
    size = QUICK if quick else FULL
    spec = ingest.build_corpus(size["seconds"], size["seconds"], size["elements"])[0]
    suffix = uuid.uuid4().hex[:8]
    project, prefix = f"recorders-{suffix}", f"rec-{suffix}"
    work = Path(tempfile.mkdtemp(prefix="bench-recorders-"))
    log_path = Path(os.environ.get("VAR_DIR") or ingest.ROOT / "var") / "bench" / "recorders-server.log"
    steps = CAPACITY_QUICK if quick else CAPACITY
    try:
        with scratch_database("bench_recorders", migrated=True) as database_url:
            env = ingest.server_env(work / "var", database_url)
            ingest.migrate(env, database_url)
            setup = SETUP.format(project=project, count=max(size["recorders"], steps[-1]), prefix=prefix)
            tokens = json.loads(ingest.manage(env, "shell", "-c", setup).strip().splitlines()[-1])
            workers = server_workers(database_url)
            with ingest.asgi_server_process(env, log_path, workers) as (port, server):
                bare = bare_run(env, port, tokens[: size["recorders"]], spec, project, size["bare_seconds"], workers)
                recorders, cpu = play(port, tokens[: size["recorders"]], spec, project, size["seconds"], server.pid)
                stored = [recorder.stored() for recorder in recorders]
                capacity = capacity_search(port, tokens, spec, project, size["seconds"], steps)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures_ = figures(recorders, stored, size, spec)
    per_action = 1000 * cpu / max(1, figures_["uploaded"])
    at_1s = max((n for n, p95 in capacity if p95 is not None and p95 <= 1000), default=0)
    return {
        **figures_,
        "server_cpu_seconds": round(cpu, 3),
        "server_cpu_ms_per_action": round(per_action, 2),
        "bare_cpu_ms_per_action": round(bare["cpu_ms_per_action"], 2),
        "server_cpu_ratio_vs_bare": round(per_action / bare["cpu_ms_per_action"], 3),
        "bare_upload_ms_p95": bare["upload_ms_p95"],
        "bare_seconds": size["bare_seconds"],
        "bare_uploaded": bare["uploaded"],
        "bare_mb": bare["mb"],
        "recorders_at_1s": at_1s,
        "recorders_per_core": round(at_1s / (os.cpu_count() or 1), 1),
        "capacity_p95_ms": {str(n): p95 for n, p95 in capacity},  # None: the step lost or left actions
        "server_workers": workers,
    }


def bare_run(env: dict, port: int, tokens: list, spec, project: str, seconds: int, workers: int) -> dict:
    """The baseline: the same recorders at the same rate for ``seconds``, their batches posted to ``bench.bare``
    served as the platform is (same uvicorn settings, same process count), recordings started and read back through
    the platform on ``port``. Its server's CPU per action; a baseline that lost or left an action fails the run."""
    log_path = Path(os.environ.get("VAR_DIR") or ingest.ROOT / "var") / "bench" / "recorders-bare-server.log"
    with ingest.asgi_server_process(env, log_path, workers, BARE_APP) as (bare_port, bare_server):
        play(port, tokens, spec, project, 1, mark="bw", upload_port=bare_port)  # untimed: each process warmed up
        recorders, cpu = play(port, tokens, spec, project, seconds, bare_server.pid, "b", bare_port, spread=True)
    stored = [recorder.stored() for recorder in recorders]
    done = figures(recorders, stored, {"seconds": seconds, "elements": 0}, spec)
    if done["lost"] or done["not_uploaded"] or done["duplicated"] or done["errors"]:
        raise ingest.BenchError(f"the bare baseline did not store every action once: {done}")
    return {**done, "cpu_ms_per_action": 1000 * cpu / max(1, done["uploaded"])}


def capacity_search(port: int, tokens: list, spec, project: str, seconds: int, steps: tuple) -> list:
    """``recorders_at_1s``: more recorders, step by step (each step ``seconds`` long, with blobs of its own), until
    the 95th percentile of the upload times passes 1 s or a step loses an action. Returns ``[(recorders, p95 ms
    or None when the step lost, duplicated or left actions)]`` for the steps run."""
    results = []
    for step, count in enumerate(steps):
        recorders, _ = play(port, tokens[:count], spec, project, seconds, mark=f"s{step}")
        stored = [recorder.stored() for recorder in recorders]
        done = figures(recorders, stored, {"seconds": seconds, "elements": 0}, spec)
        held = not (done["lost"] or done["not_uploaded"] or done["duplicated"] or done["errors"])
        results.append((count, done["upload_ms_p95"] if held else None))
        if not held or done["upload_ms_p95"] > 1000:
            break
    return results


def server_workers(database_url: str | None) -> int:
    """As in production (docs/deployment.md): one server process per core on PostgreSQL; one on SQLite, which
    takes one writer at a time whatever the number of processes."""
    return max(1, os.cpu_count() or 1) if database_url else 1


def play(
    port: int,
    tokens: list,
    spec,
    project: str,
    seconds: int,
    server_pid: int | None = None,
    mark: str = "",
    upload_port: int | None = None,
    spread: bool = False,
):
    """One timed run of ``len(tokens)`` recorders; returns them and the server's CPU seconds during the timed
    uploads (0 without ``server_pid``). ``mark`` makes this run's blobs its own (a later step must not find them
    stored already); ``upload_port``: the server the batches go to (``port``'s by default). ``spread``: recorder i
    of N starts at the demo's (i/N)-th action, so that a run shorter than the demo uploads the same mix of actions
    (chat turns, new pages, screenshots only) as a whole one, not its first seconds'."""
    originals = {hashlib.sha256(data).hexdigest(): (media_type, data) for data, media_type in spec.blobs}
    count = min(seconds, len(spec.turns))
    recorders = []
    for index, token in enumerate(tokens):
        own = f"{mark}r{index:03d}"
        offset = index * len(spec.turns) // len(tokens) if spread else 0
        prepared = prepare(Actions(spec, originals, own), count, offset)
        recorders.append(Recorder(port, token, spec, prepared, own, upload_port))
    for recorder in recorders:
        recorder.begin(project)
    before = cpu.tree_cpu_seconds(server_pid) if server_pid else 0.0
    asyncio.run(uploads(recorders, seconds))
    return recorders, (cpu.tree_cpu_seconds(server_pid) - before if server_pid else 0.0)


async def uploads(recorders: list[Recorder], seconds: int) -> None:
    """Every recorder's timed uploads, on this event loop; recorders still uploading ``DRAIN_SECONDS`` after the
    last action's second are stopped after the upload under way (what they did not send counts as not uploaded)."""
    start = time.monotonic() + 1
    for index, recorder in enumerate(recorders):
        recorder.start_at = start + index / len(recorders)  # independent annotators: not all in the same instant
    tasks = [asyncio.create_task(recorder.run()) for recorder in recorders]
    await asyncio.wait(tasks, timeout=max(0.0, start + seconds + DRAIN_SECONDS - time.monotonic()))
    for recorder in recorders:
        recorder.stopping = True
    await asyncio.gather(*tasks)


def figures(recorders: list, stored: list, size: dict, spec) -> dict:
    actions = min(size["seconds"], len(spec.turns))
    lost = sum(len(set(r.answered) - set(have)) for r, have in zip(recorders, stored, strict=True))
    duplicated = sum(len(have) - len(set(have)) for have in stored)
    latencies = [1000 * value for recorder in recorders for value in recorder.latencies]
    errors = [recorder.error for recorder in recorders if recorder.error]
    return {
        "recorders": len(recorders),
        "upload_ms_p95": round(percentile(latencies, 0.95), 1),
        "lost": lost,
        "duplicated": duplicated,
        "upload_ms_p50": round(statistics.median(latencies), 1) if latencies else 0.0,
        "upload_ms_max": round(max(latencies, default=0.0), 1),
        "actions": len(recorders) * actions,
        "uploaded": len(latencies),
        "not_uploaded": len(recorders) * actions - len(latencies),
        "seconds": size["seconds"],
        "elements": size["elements"],
        "retries": sum(recorder.retries for recorder in recorders),
        "mb": round(sum(recorder.sent for recorder in recorders) / 1e6, 1),
        "errors": errors[:3],
    }
