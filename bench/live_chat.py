"""Live session benchmark: chat message latency, sender → receiver, through the real ASGI server.

uvicorn (as `make run` starts it) serves ``config.asgi`` on loopback (the channel layer is Redis when ``REDIS_URL`` is
set, in-memory otherwise; the database is a scratch one, SQLite or PostgreSQL as in ``bench.ingest``). ``SESSIONS``
demonstrations each get a navigator and an instructor socket (token auth, as the side panel joins). All sessions talk at
once, taking turns: one side sends a chat message, and the latency is the time until the other side receives it as a
stored turn (so it includes validation, the database write and the broadcast after commit). Sessions start at random
moments and wait 0.5–1.5 × ``PAUSE_S`` between messages (a brisk conversation, far faster than people type), so they are
not in lockstep. Target: p95 <= 50 ms with 50 sessions."""

import json
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

import websocket

from devtools.processes import scratch_database

from .ingest import ROOT, asgi_server, manage, migrate, server_env

FULL = {"sessions": 50, "messages": 20}
QUICK = {"sessions": 2, "messages": 4}
PAUSE_S = 2.0

SETUP = """
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotation.actions import do_start_recording
from annotation.models import Membership, Project, Role
project = Project.objects.create(name={project!r}, title="Live chat benchmark")
users = {{}}
for username in ("navigator", "instructor"):
    users[username] = get_user_model().objects.create_user(f"{{username}}-{suffix}")
    Membership.objects.create(project=project, user=users[username], role=Role.ANNOTATOR)
demos = [
    do_start_recording(users["navigator"], project, f"live-bench-{suffix}-{{i}}", mode="chat",
                       instructor=users["instructor"])[0].name
    for i in range({sessions})
]
tokens = {{role: Token.objects.create(user=user).key for role, user in users.items()}}
print(json.dumps({{"demos": demos, "tokens": tokens}}))
"""


class BenchError(RuntimeError):
    pass


def join(port: int, demo: str, token: str) -> websocket.WebSocket:
    """A socket joined to the demonstration's session and caught up (``synced``)."""
    url = f"ws://127.0.0.1:{port}/ws/sessions/{demo}/"
    sock = websocket.create_connection(url, origin=f"http://127.0.0.1:{port}", timeout=30)
    sock.send(json.dumps({"type": "join", "after_seq": -1, "token": token}))
    while (message := json.loads(sock.recv()))["type"] != "synced":
        if message["type"] not in ("welcome", "turn"):
            raise BenchError(f"unexpected message while joining: {message}")
    return sock


def receive_turn(sock: websocket.WebSocket, client_id: str) -> float:
    """Read until the turn of ``client_id`` arrives (skipping acks, presence, other turns); the arrival time."""
    while True:
        message = json.loads(sock.recv())
        if message["type"] == "turn" and message["turn"].get("client_id") == client_id:
            return time.perf_counter()
        if message["type"] == "error":
            raise BenchError(f"the server refused a message: {message}")


def converse(port: int, demo: str, tokens: dict, messages: int, start: threading.Barrier, out: list) -> None:
    """One session: the two sides take turns; each message's latency (ms) is appended to ``out``."""
    sides = [join(port, demo, tokens["instructor"]), join(port, demo, tokens["navigator"])]
    try:
        start.wait()
        pacing = random.Random(demo)
        time.sleep(pacing.uniform(0, PAUSE_S))  # independent conversations: not all in step
        for index in range(messages):
            sender, receiver = sides[index % 2], sides[(index + 1) % 2]
            client_id = uuid.uuid4().hex
            sent = time.perf_counter()
            sender.send(json.dumps({"type": "chat", "client_id": client_id, "utterance": f"message {index}"}))
            out.append(1000 * (receive_turn(receiver, client_id) - sent))
            time.sleep(pacing.uniform(0.5, 1.5) * PAUSE_S)
    finally:
        for sock in sides:
            sock.close()


def measure(port: int, demos: list, tokens: dict, messages: int) -> tuple[list, float]:
    """Run every session at once; their latencies (ms) and the wall time."""
    latencies, errors = [], []
    start = threading.Barrier(len(demos) + 1)

    def session(demo):
        try:
            converse(port, demo, tokens, messages, start, latencies)
        except Exception as error:  # noqa: BLE001 (reported below, after every thread ended)
            errors.append(f"{demo}: {error!r}")
            start.abort()

    threads = [threading.Thread(target=session, args=(demo,)) for demo in demos]
    for thread in threads:
        thread.start()
    start.wait(timeout=120)
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise BenchError("; ".join(errors[:5]))
    return latencies, time.perf_counter() - began


def percentile(values: list, fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(quick: bool = False) -> dict:
    """Start a server with ``sessions`` demonstrations, let them all chat at once, return the latency figures."""
    size = QUICK if quick else FULL
    suffix = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    log_path = Path(os.environ.get("VAR_DIR") or ROOT / "var") / "bench" / "live-chat-server.log"
    try:
        with scratch_database("bench_live", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            setup = SETUP.format(project=f"live-{suffix}", suffix=suffix, sessions=size["sessions"])
            state = json.loads(manage(env, "shell", "-c", setup).strip().splitlines()[-1])
            with asgi_server(env, log_path) as port:
                latencies, seconds = measure(port, state["demos"], state["tokens"], size["messages"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "sessions": size["sessions"],
        "messages": len(latencies),
        "latency_ms_p50": round(percentile(latencies, 0.50), 2),
        "latency_ms_p95": round(percentile(latencies, 0.95), 2),
        "latency_ms_max": round(max(latencies), 2),
        "latency_ms_mean": round(statistics.fmean(latencies), 2),
        "messages_per_s": round(len(latencies) / seconds, 1),
        "pause_s": PAUSE_S,
        "channel_layer": "redis" if os.environ.get("REDIS_URL") else "in-memory",
        "database": "postgresql" if database_url else "sqlite",
    }
