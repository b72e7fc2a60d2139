"""S3 export benchmark: an export job on S3 storage (blobs read from the bucket, the archive uploaded as it is made)
against the same export job on local storage, and against uploading the same archive bytes with a plain boto3
client, all in this run (S3: one SeaweedFS server on loopback).

A corpus is stored first (``synth_demos`` through the ingest actions, blobs into the bucket, untimed) in a scratch
database, and each demo's blobs packed as the worker packs them after a recording (``pack_blobs``, untimed).
Timed: the export job's runner as the Celery task runs it (query, WebLINX directory from the bucket's
blobs, tar.gz with manifest streamed into a multipart upload, publish). Then the archive is downloaded (untimed) and
uploaded again with boto3's ``upload_file`` (its default multipart transfer). ``mb_per_s`` = archive MB / export
seconds, ``raw_put_mb_per_s`` = archive MB / upload seconds, ``ratio_vs_raw_put`` their ratio (target >= 0.5).
``ratio_vs_local`` = the same job's seconds on local storage (the same corpus, stored the same way in another
scratch database and VAR_DIR) / its seconds on S3: the target is >= 0.5 (S3 at most twice local). ``cpu_seconds``:
the export job's own CPU (all its threads), which the S3 server's latency per object does not hide.
"""

import shutil
import tempfile
import time
from pathlib import Path

from devtools.processes import scratch_database
from devtools.s3server import s3_server

from .export import generate_and_export
from .ingest import migrate, server_env

FULL = {"demos": 16, "turns": 40, "elements": 2000}
QUICK = {"demos": 2, "turns": 8, "elements": 100}
PROJECT = "bench-export-s3"


def raw_put_seconds(server, key: str, work: Path) -> float:
    """Download the export's archive (untimed), then time a plain boto3 upload of the same bytes."""
    client, copy = server.client(), work / "archive.bin"
    client.download_file(server.bucket, key, str(copy))
    started = time.perf_counter()
    client.upload_file(str(copy), server.bucket, f"baseline/{copy.name}")
    return time.perf_counter() - started


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-export-s3-"))
    try:
        with scratch_database("bench_export_s3", migrated=True) as database_url, s3_server(work / "s3") as server:
            env = {**server_env(work / "var", database_url), **server.env()}
            migrate(env, database_url)
            # the worker packs each demo's blobs once its recording finishes (workers/exports/packs.py)
            generated, job = generate_and_export(env, size, PROJECT, prepare=[("pack_blobs", "--project", PROJECT)])
            put = raw_put_seconds(server, job["name"], work)
        with scratch_database("bench_export_s3_local", migrated=True) as local_url:
            env = server_env(work / "var-local", local_url)
            migrate(env, local_url)
            _, local = generate_and_export(env, size, PROJECT)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    megabytes = job["size"] / 1e6
    return {
        "demos": job["counts"]["demos"],
        "turns": job["counts"]["turns"],
        "archive_mb": round(megabytes, 1),
        "seconds": round(job["seconds"], 2),
        "cpu_seconds": round(job["cpu_seconds"], 2),
        "put_seconds": round(put, 2),
        "mb_per_s": round(megabytes / job["seconds"], 2),
        "raw_put_mb_per_s": round(megabytes / put, 2),
        "ratio_vs_raw_put": round(put / job["seconds"], 3),
        "local_seconds": round(local["seconds"], 2),
        "local_cpu_seconds": round(local["cpu_seconds"], 2),
        "ratio_vs_local": round(local["seconds"] / job["seconds"], 3),
        "elements": size["elements"],
        "generate_seconds": round(generated, 1),
        "database": "postgresql" if database_url else "sqlite",
    }
