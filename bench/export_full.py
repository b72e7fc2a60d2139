"""Full-size export benchmark: a project of WebLINX's size (2,337 demos, 100,000 turns, pages of 200 elements)
exported to WebLINX and to Mind2Web, each job against ``tar | pigz`` of the files it exports, and the job's peak
memory.

Corpus (untimed): ``TEMPLATES`` demos stored through the ingest path (``synth_demos``: pages, bboxes, screenshots),
then copied in bulk up to the full size (``annotation.synth.bulk.bulk_copies``: every turn of a copy with blob files
of its own, same sizes, other bytes), on local storage in a scratch database and VAR_DIR. Timed, per format: the
export job's runner as the Celery task runs it, in a process of its own (``manage.py shell``) whose peak resident
memory (``VmHWM`` in ``/proc/self/status``, which starts anew at exec, where ``ru_maxrss`` carries the bench
process's own high-water mark over) is the job's, Django included; then ``tar -cf - | pigz -6 -p <cores>`` of the
directory ``export_dataset`` writes for the same demos. Before the jobs, untimed, each validated demo's Mind2Web
steps are processed as validation has the worker do (``mind2web_process_*``: where the page parsing went). Targets:
``ratio_vs_pigz`` (pigz seconds / job seconds, the lower of the two formats) >= 1.0, ``peak_rss_mb`` (the higher)
<= 1,024.

By default a tenth (234 demos, 10,000 turns); ``EXPORT_FULL_DEMOS=2337 EXPORT_FULL_TURNS=100000`` is the full size
(~10 GB of files, ~30 minutes on two cores, most of it processing the steps); ``--quick`` uses 10 demos and 250
turns.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devtools.processes import scratch_database

from .export import PROJECT, pigz_seconds
from .ingest import ROOT, manage, migrate, server_env

FULL = {"demos": 2337, "turns": 100_000, "elements": 200, "templates": 24, "template_turns": 50}
DEFAULT = {**FULL, "demos": 234, "turns": 10_000}  # a tenth: `make bench` within its 30 minutes (full: ~30 alone)
QUICK = {"demos": 10, "turns": 250, "elements": 200, "templates": 3, "template_turns": 30}
FORMATS = ("weblinx", "mind2web")

COPY = """
import time
from annotation.models import Project
from annotation.synth.bulk import bulk_copies
started = time.perf_counter()
files = bulk_copies(Project.objects.get(name={project!r}), {demos}, {turns})
print(files, time.perf_counter() - started)
"""

# What validation has the worker do (untimed in the jobs): each validated demo's Mind2Web steps processed and stored.
PROCESS = """
import json, time
from annotation.models import Demonstration, Project
from workers.exports.mind2web_steps import process_demo
demos = Demonstration.objects.filter(project__name={project!r}, status="validated")
started, cpu = time.perf_counter(), time.process_time()
steps = sum(process_demo(demo) for demo in demos.iterator(chunk_size=20))
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu, "steps": steps}}))
"""

# The job as the Celery task runs it, alone in this process: its peak RSS is the job's (and Django's).
RUN_JOB = """
import json, time
from django.contrib.auth import get_user_model
from annotation.models import ExportJob, Project
from workers.exports.jobs import run_export
project = Project.objects.get(name={project!r})
owner = get_user_model().objects.get(username="synth-navigator")
job = ExportJob.objects.create(project=project, owner=owner, format={format!r}, statuses=["validated"])
started, cpu = time.perf_counter(), time.process_time()
run_export(job.pk)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
job.refresh_from_db()
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024  # kB
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu, "status": job.status, "error": job.error,
                  "size": job.size, "counts": job.counts, "peak_rss": peak}}))
"""


def sizes(quick: bool) -> dict:
    if quick:
        return QUICK
    demos = int(os.environ.get("EXPORT_FULL_DEMOS", DEFAULT["demos"]))
    return {**DEFAULT, "demos": demos, "turns": int(os.environ.get("EXPORT_FULL_TURNS", DEFAULT["turns"]))}


def long_manage(env: dict, *args: str) -> str:
    """``manage.py`` without ``manage``'s ten-minute limit: at full size the copies and the jobs take longer."""
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def build_corpus(env: dict, size: dict) -> dict:
    started = time.perf_counter()
    counts = [str(size[key]) for key in ("templates", "template_turns", "elements")]
    manage(
        env,
        "synth_demos",
        "--seed",
        "7",
        "--project",
        PROJECT,
        "--demos",
        counts[0],
        "--turns",
        counts[1],
        "--elements",
        counts[2],
    )
    ingested = time.perf_counter() - started
    script = COPY.format(project=PROJECT, demos=size["demos"], turns=size["turns"])
    files, copied = long_manage(env, "shell", "-c", script).strip().splitlines()[-1].split()
    return {"ingest_seconds": ingested, "copy_seconds": float(copied), "blob_files": int(files)}


def run(quick: bool = False) -> dict:
    size = sizes(quick)
    work = Path(tempfile.mkdtemp(prefix="bench-export-full-"))
    figures = {}
    try:
        with scratch_database("bench_export_full", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            corpus = build_corpus(env, size)
            # the templates stay "recorded": the jobs export the validated copies only
            process = json.loads(
                long_manage(env, "shell", "-c", PROCESS.format(project=PROJECT)).strip().splitlines()[-1]
            )
            for name in FORMATS:
                line = long_manage(env, "shell", "-c", RUN_JOB.format(project=PROJECT, format=name))
                job = json.loads(line.strip().splitlines()[-1])
                if job["status"] != "done":
                    raise RuntimeError(f"{name} export job {job['status']}: {job['error']}")
                directory = work / "export" / name / PROJECT
                long_manage(env, "export_dataset", "--format", name, "--out", str(directory), "--project", PROJECT)
                baseline = pigz_seconds(directory, work / f"{name}.tar.gz")
                figures[name] = {**job, "pigz_seconds": baseline, "pigz_size": (work / f"{name}.tar.gz").stat().st_size}
                shutil.rmtree(work / "export" / name)
                (work / f"{name}.tar.gz").unlink()
            disk = shutil.disk_usage(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    weblinx, mind2web = figures["weblinx"], figures["mind2web"]
    ratios = {name: figures[name]["pigz_seconds"] / figures[name]["seconds"] for name in FORMATS}
    return {
        "demos": weblinx["counts"]["demos"],
        "turns": weblinx["counts"]["turns"],
        "seconds": round(weblinx["seconds"] + mind2web["seconds"], 1),
        "ratio_vs_pigz": round(min(ratios.values()), 3),
        "peak_rss_mb": round(max(weblinx["peak_rss"], mind2web["peak_rss"]) / 2**20, 1),
        **{
            f"{name}_{key}": value
            for name in FORMATS
            for key, value in (
                ("seconds", round(figures[name]["seconds"], 1)),
                ("cpu_seconds", round(figures[name]["cpu_seconds"], 1)),
                ("pigz_seconds", round(figures[name]["pigz_seconds"], 1)),
                ("ratio_vs_pigz", round(ratios[name], 3)),
                ("peak_rss_mb", round(figures[name]["peak_rss"] / 2**20, 1)),
                ("archive_mb", round(figures[name]["size"] / 1e6, 1)),
                ("pigz_archive_mb", round(figures[name]["pigz_size"] / 1e6, 1)),
            )
        },
        "mind2web_steps": mind2web["counts"]["turns"],
        "mind2web_process_seconds": round(process["seconds"], 1),
        "mind2web_process_cpu_seconds": round(process["cpu_seconds"], 1),
        "mind2web_processed_steps": process["steps"],
        "blob_files": corpus["blob_files"],
        "ingest_seconds": round(corpus["ingest_seconds"], 1),
        "copy_seconds": round(corpus["copy_seconds"], 1),
        "free_disk_gb_after": round(disk.free / 1e9, 1),
        "elements": size["elements"],
        "load_average_1m": round(os.getloadavg()[0], 1),
        "database": "postgresql" if database_url else "sqlite",
    }
