"""Export benchmark: an export job (WebLINX directory + tar.gz with manifest) against ``tar`` piped through ``pigz``
(parallel gzip) of the same files.

A corpus of >= 100 demos x 40 turns on 2,000-element pages is stored first (``synth_demos``, through the ingest
actions, untimed) in a scratch database and VAR_DIR, and marked validated. Timed: the export job's runner, as the
Celery task runs it (query, write the WebLINX directory, archive with a sha256 manifest, publish); then, in the
same run, GNU ``tar -cf - <dir> | pigz -6 -p <cores>`` of the directory that ``export_dataset`` writes for the same
demos (the same bytes): the best standard tool, on the same cores and at the same level as the job's archive (level
6). ``ratio_vs_pigz`` = pigz seconds / export seconds (1.0: the whole job, queries and files included, as fast as
archiving its files with tar and pigz; target >= 1.0). pigz is the Debian package ``pigz``
(``scripts/ensure-test-tools.sh`` installs it).
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import manage, migrate, server_env

FULL = {"demos": 100, "turns": 40, "elements": 2000}
QUICK = {"demos": 3, "turns": 8, "elements": 100}
PROJECT = "bench-export"

# Run in the platform's environment (``manage.py shell``): one export job as the Celery task runs it, timed, in a
# process that has run one export before, as a Celery worker that has been up a while (its first job also pays for
# imports, the S3 client and botocore's service model: ~0.5 s on S3).
RUN_JOB = """
import json, time
from django.contrib.auth import get_user_model
from annotation.models import Demonstration, ExportJob, Project
from workers.exports.jobs import run_export
project = Project.objects.get(name={project!r})
Demonstration.objects.filter(project=project).update(status="validated")
owner = get_user_model().objects.get(username="synth-navigator")
def new_job():
    return ExportJob.objects.create(project=project, owner=owner, format="weblinx", statuses=["validated"])
run_export(new_job().pk)  # untimed: the worker process has run an export before (imports, storage client, S3 model)
job = new_job()
started, cpu = time.perf_counter(), time.process_time()
run_export(job.pk)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
job.refresh_from_db()
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu, "status": job.status, "error": job.error, "size": job.size,
                  "counts": job.counts, "name": job.file.name}}))
"""


def generate_and_export(env: dict, size: dict, project: str, prepare: tuple = ()) -> tuple[float, dict]:
    """Store the synthetic corpus (untimed: its seconds are returned for the record), run the ``manage.py`` commands
    ``prepare`` (untimed: work the worker does before any export), then run one export job; returns (generate
    seconds, the job's figures)."""
    started = time.perf_counter()
    counts = [str(size[key]) for key in ("demos", "turns", "elements")]
    manage(
        env,
        "synth_demos",
        "--demos",
        counts[0],
        "--turns",
        counts[1],
        "--elements",
        counts[2],
        "--seed",
        "42",
        "--project",
        project,
    )
    for command in prepare:
        manage(env, *command)
    generated = time.perf_counter() - started
    job = json.loads(manage(env, "shell", "-c", RUN_JOB.format(project=project)).strip().splitlines()[-1])
    if job["status"] != "done":
        raise RuntimeError(f"export job {job['status']}: {job['error']}")
    return generated, job


LEVEL = 6  # the job's archive level (``workers.exports.archive.write_archive``'s ``compresslevel``)


def pigz_seconds(directory: Path, archive: Path) -> float:
    """``tar -cf - | pigz -6 -p <cores>`` of ``directory`` into ``archive``, timed."""
    if not shutil.which("pigz"):
        raise RuntimeError("the export benchmarks need pigz (Debian package pigz: scripts/ensure-test-tools.sh)")
    threads = str(len(os.sched_getaffinity(0)))
    started = time.perf_counter()
    with archive.open("wb") as out:
        tar = subprocess.Popen(["tar", "-cf", "-", "-C", str(directory.parent), directory.name], stdout=subprocess.PIPE)
        pigz = subprocess.run([shutil.which("pigz"), f"-{LEVEL}", "-p", threads], stdin=tar.stdout, stdout=out)
        tar.stdout.close()
        if tar.wait() or pigz.returncode:
            raise RuntimeError(f"tar | pigz failed ({tar.returncode}, {pigz.returncode})")
    return time.perf_counter() - started


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        with scratch_database("bench_export", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            generated, job = generate_and_export(env, size, PROJECT)
            directory = work / "export" / PROJECT
            manage(env, "export_dataset", "--format", "weblinx", "--out", str(directory), "--project", PROJECT)
            baseline = pigz_seconds(directory, work / "baseline.tar.gz")
            baseline_size = (work / "baseline.tar.gz").stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "demos": job["counts"]["demos"],
        "turns": job["counts"]["turns"],
        "seconds": round(job["seconds"], 2),
        "pigz_seconds": round(baseline, 2),
        "ratio_vs_pigz": round(baseline / job["seconds"], 3),
        "files": job["counts"]["files"],
        "archive_mb": round(job["size"] / 1e6, 1),
        "pigz_archive_mb": round(baseline_size / 1e6, 1),
        "elements": size["elements"],
        "generate_seconds": round(generated, 1),
        "database": "postgresql" if database_url else "sqlite",
    }
