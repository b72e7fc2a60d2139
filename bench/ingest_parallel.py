"""Parallel ingest: 4 clients, each uploading recorded sessions back to back with the recorder's protocol (as
``bench.ingest``: start, gzipped batches of turns and the blobs not sent before, finish), at once against one
server as `make run` starts it (one process per core on PostgreSQL), compared with 4 writers writing and fsyncing
the same pieces (each JSON document and each blob to its own file) in the same run, and with 4 worker processes
doing the server's verification and storage of the same bodies with no HTTP (``bench.checks``), on a database and
disk of their own, in the same run.

``mb_per_s`` is payload (blobs and JSON documents before compression) over the wall time from the first request
to the last answer; ``ratio_vs_raw`` divides it by the 4 writers' MB/s, ``ratio_vs_checks`` by the 4 workers'
(the same payload over their wall time). A bulk upload of finished sessions is what this measures: several
people's recordings arriving at once, or an import of sessions recorded offline.
"""

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from annotation import synth
from devtools.processes import scratch_database

from . import cpu, ingest
from .recorders import server_workers

CLIENTS = 4
FULL = {"browser_turns": 1600, "turns_per_demo": 60, "elements": 2000}
QUICK = {"browser_turns": 40, "turns_per_demo": 12, "elements": 120}

SETUP = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotation.models import Membership, Project, Role
project = Project.objects.create(name={project!r}, title="Parallel ingest benchmark")
tokens = []
for username in {navigators!r} + [{instructor!r}]:
    user = get_user_model().objects.create_user(username)
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    tokens.append(Token.objects.create(user=user).key)
print(" ".join(tokens[:-1]))
"""


def in_parallel(work: list, target) -> float:
    """Run ``target(item)`` for each item on its own thread, all started together; the wall seconds until the last
    ends. An exception in any of them is raised here."""
    errors, barrier = [], threading.Barrier(len(work) + 1)

    def run(item):
        barrier.wait()
        try:
            target(item)
        except Exception as error:  # re-raised below, after every thread ended
            errors.append(error)

    threads = [threading.Thread(target=run, args=(item,)) for item in work]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def upload_share(share: tuple) -> None:
    client, uploads = share
    share_names = [ingest.upload_demo(client, upload) for upload in uploads]
    client.names = share_names


def raw_share(share: tuple) -> None:
    pieces, directory = share
    directory.mkdir(parents=True)
    for index, piece in enumerate(pieces):
        with (directory / f"{index:06d}").open("wb") as out:
            out.write(piece)
            out.flush()
            os.fsync(out.fileno())


def client_bodies(uploads: list) -> list[dict]:
    """The bodies one ``ingest.Client`` sends for ``uploads`` (``ingest.upload_batch``: a batch leaves out the
    blobs the client uploaded before), for ``bench.checks``."""
    uploaded, demos = set(), []
    for upload in uploads:
        batches = []
        for (blobs, turns), gz in zip(upload.batches, upload.gzipped, strict=True):
            fresh = [blob for blob in blobs if blob[0] not in uploaded]
            batches.append(gz if len(fresh) == len(blobs) else ingest.gzipped_batch(turns, fresh)[0])
            uploaded.update(sha for sha, _, _ in fresh)
        demos.append(
            {"start": upload.start, "batches": batches, "finish": upload.finish, "turns": len(upload.spec.turns)}
        )
    return demos


def checks_run(work: Path, project: str, navigators: list, instructor: str, warm_up: list, shares: list) -> float:
    """``bench.checks``: one worker process per client, on a database and VAR_DIR of their own, each given its
    client's bodies; the wall seconds from telling them all to start to the last one done."""
    with scratch_database("bench_ingest_checks", migrated=True) as database_url:
        env = ingest.server_env(work / "checks-var", database_url)
        ingest.migrate(env, database_url)
        ingest.manage(env, "shell", "-c", SETUP.format(project=project, navigators=navigators, instructor=instructor))
        workers = []
        try:
            for index, (username, warm, share) in enumerate(zip(navigators, warm_up, shares, strict=True)):
                path = work / f"checks-{index}.pickle"
                path.write_bytes(pickle.dumps({"username": username, "warm": client_bodies(warm), "demos": share}))
                command = [sys.executable, "-m", "bench.checks", str(path)]
                stdio = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
                workers.append(subprocess.Popen(command, cwd=ingest.ROOT, env=env, text=True, **stdio))
            for worker in workers:
                ready(worker, "ready")
            started = time.perf_counter()
            for worker in workers:
                worker.stdin.write("go\n")
                worker.stdin.flush()
            for worker in workers:
                ready(worker, "done")
            seconds = time.perf_counter() - started
            for worker in workers:
                if worker.wait(timeout=600):
                    raise ingest.BenchError(f"bench.checks failed: {worker.stderr.read()[-3000:]}")
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
    return seconds


def ready(worker: subprocess.Popen, word: str) -> None:
    line = worker.stdout.readline().strip()
    if line != word:
        worker.kill()
        raise ingest.BenchError(f"bench.checks said {line!r}, not {word!r}: {worker.stderr.read()[-3000:]}")


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    specs = ingest.build_corpus(**size)
    suffix = uuid.uuid4().hex[:8]
    project, instructor = f"bench-{suffix}", f"bench-ins-{suffix}"
    navigators = [f"bench-nav{index}-{suffix}" for index in range(CLIENTS)]
    # one small demo a client, untimed, from another seed (no blob shared with the timed ones)
    warm_specs = list(synth.generate_corpus(CLIENTS, 4, size["elements"], ingest.SEED + 1))
    warm_up = [[ingest.encode(spec, project, instructor).compress()] for spec in warm_specs]
    uploads = [ingest.encode(spec, project, instructor).compress() for spec in specs]
    shares = [uploads[index::CLIENTS] for index in range(CLIENTS)]
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-parallel-"))
    log_path = Path(os.environ.get("VAR_DIR") or ingest.ROOT / "var") / "bench" / "ingest-parallel-server.log"
    try:
        with scratch_database("bench_ingest_parallel", migrated=True) as database_url:
            env = ingest.server_env(work / "var", database_url)
            ingest.migrate(env, database_url)
            setup = SETUP.format(project=project, navigators=navigators, instructor=instructor)
            tokens = ingest.manage(env, "shell", "-c", setup).strip().splitlines()[-1].split()
            workers = server_workers(database_url)
            with ingest.asgi_server_process(env, log_path, workers) as (port, server):
                warm = [ingest.Client(port, token, keep_pieces=False) for token in tokens]
                in_parallel(list(zip(warm, warm_up, strict=True)), upload_share)  # each server process warmed up
                clients = [ingest.Client(port, token) for token in tokens]
                before = cpu.tree_cpu_seconds(server.pid)
                seconds = in_parallel(list(zip(clients, shares, strict=True)), upload_share)
                server_cpu = cpu.tree_cpu_seconds(server.pid) - before
                for client, share in zip(clients, shares, strict=True):
                    ingest.check_stored(client, client.names, share)
                    client.close()
        raw = [(client.pieces, work / "raw" / str(index)) for index, client in enumerate(clients)]
        raw_seconds = in_parallel(raw, raw_share)
        bodies = [client_bodies(share) for share in shares]
        checks_seconds = checks_run(work, project, navigators, instructor, warm_up, bodies)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    payload = sum(client.sent for client in clients)
    turns = sum(len(spec.turns) for spec in specs)
    mb_per_s, raw_mb_per_s = payload / 1e6 / seconds, payload / 1e6 / raw_seconds
    checks_mb_per_s = payload / 1e6 / checks_seconds
    return {
        "clients": CLIENTS,
        "mb_per_s": round(mb_per_s, 2),
        "raw_write_mb_per_s": round(raw_mb_per_s, 2),
        "ratio_vs_raw": round(mb_per_s / raw_mb_per_s, 3),
        "checks_mb_per_s": round(checks_mb_per_s, 2),
        "ratio_vs_checks": round(mb_per_s / checks_mb_per_s, 3),
        "turns": turns,
        "turns_per_s": round(turns / seconds, 1),
        "demos": len(specs),
        "bytes": payload,
        "wire_bytes": sum(client.wire for client in clients),
        "seconds": round(seconds, 2),
        "raw_write_seconds": round(raw_seconds, 2),
        "checks_seconds": round(checks_seconds, 2),
        "server_cpu_seconds": round(server_cpu, 3),
        "server_cpu_ms_per_mb": round(1000 * server_cpu / (payload / 1e6), 2),
        "server_workers": workers,
        "elements": size["elements"],
        "database": "postgresql" if database_url else "sqlite",
    }
