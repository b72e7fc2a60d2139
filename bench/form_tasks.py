"""Form tasks benchmark: importing the real TurkingBench tasks, and the server time of a task page and a submission.

Data: the 28 tasks under ``TURKINGBENCH_DATA`` (default ``../shared/data/turkingbench``), imported again and again
(each pass into a new project, so batch names stay unique) until at least ``rows`` CSV rows were imported. Timed:
each pass's reading, checking and storing (``read_task_dir`` + ``do_create_form_batches`` in one transaction,
as ``import_turkingbench`` does), in one process against a scratch database. Then, through the Django test client
(the whole request): ``requests`` GETs of assignment task frames (``page_ms_p50``) and as many POSTs of answers
(``submit_ms_p50``), over tasks of every batch; plus the worker's assignment page around the frame. Targets:
import ≥ 5,000 rows/s, page ≤ 50 ms p50, submit ≤ 50 ms p50. The manager's batch page (its task table a page at a
time) of a 100,000-task batch, first and last page (``batch_page_ms_p50``, ``batch_page_last_ms_p50``), against the
page of a small real batch in the same run (``batch_page_ratio``: the larger of the two over it; target ≤ 3).
``--quick`` imports one pass and times a few requests.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import ROOT, manage, migrate, server_env

FULL = {"rows": 20_000, "requests": 60, "big": 100_000}
QUICK = {"rows": 1, "requests": 5, "big": 300}

MEASURE = r"""
import json, statistics, time
from pathlib import Path
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from annotation.actions import forms
from annotation.actions.forms import BatchSettings, do_create_form_batches, read_task_dir, work_url, work_frame_url
from annotation.models import Batch, Membership, Project, Role

dirs = sorted(p for p in Path({data!r}, "tasks").iterdir() if (p / "batch.csv").is_file())
rows = passes = 0
started = time.perf_counter()
while rows < {rows} or passes == 0:
    with transaction.atomic():
        project = Project.objects.create(name=f"bench-forms-{{passes}}")
        parsed = [(path.name, read_task_dir(path), BatchSettings(source_name=path.name)) for path in dirs]
        do_create_form_batches(None, project, parsed)
        rows += sum(item[1].rows for item in parsed)
    passes += 1
import_seconds = time.perf_counter() - started

project = Project.objects.get(name="bench-forms-0")
user = get_user_model().objects.create_user("bench-worker")
Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
batches = list(Batch.objects.filter(project=project).order_by("name"))
tasks = [task for index in range(5) for batch in batches for task in batch.tasks.filter(index=index)]
assignments = [forms.do_accept_task(user, task) for task in tasks[:{requests}]]
frames = Client(HTTP_HOST="localhost")
app = Client(HTTP_HOST="localhost")
app.force_login(user)
assert frames.get(work_frame_url(assignments[0])).status_code == 200  # warm-up
page, app_page, submit = [], [], []
for assignment in assignments:
    started = time.perf_counter()
    response = app.get(f"/work/assignments/{{assignment.pk}}/")
    app_page.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200
    started = time.perf_counter()
    response = frames.get(work_frame_url(assignment))
    page.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200
for assignment in assignments:
    answers = {{"answer": "some text", "choice": ["a", "b"], "score": "3"}}
    started = time.perf_counter()
    response = frames.post(work_url(assignment), answers)
    submit.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200, response.content[:300]
# The manager's batch page (progress, workers, a page of the task table with its assignments): a batch of {big}
# tasks whose first page three workers did, against the page of a small real batch (the baseline, same run).
from annotation.actions.forms import do_create_form_batch, parse_batch
csv_text = "topic\n" + "".join(f"t{{i}}\n" for i in range({big}))
big = do_create_form_batch(
    None, project, "bench-big", parse_batch(b"<p>${{topic}}</p><input name=answer>", csv_text.encode(), "big.csv"),
    BatchSettings(assignments_per_task=3),
)
for name in ("bench-a", "bench-b", "bench-c"):
    worker = get_user_model().objects.create_user(name)
    Membership.objects.create(project=project, user=worker, role=Role.ANNOTATOR)
    for task in big.tasks.order_by("index")[:50]:
        forms.do_submit(forms.do_accept_task(worker, task).pk, {{"answer": name}})
# What autovacuum does after a bulk insert this size (statistics and the visibility map), before pages are read.
from django.db import connection
if connection.vendor == "postgresql":
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE annotation_task")
manager = get_user_model().objects.create_user("bench-manager")
Membership.objects.create(project=project, user=manager, role=Role.RESEARCHER)
managing = Client(HTTP_HOST="localhost")
managing.force_login(manager)

def batch_page(url, times=15):
    assert managing.get(url).status_code == 200  # warm-up
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        response = managing.get(url)
        spent.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return statistics.median(spent)

small_page = batch_page(f"/work/batches/{{batches[0].pk}}/")
big_first = batch_page(f"/work/batches/{{big.pk}}/")
big_last = batch_page(f"/work/batches/{{big.pk}}/?page={{({big} + 49) // 50}}")
print(json.dumps({{
    "rows": rows, "passes": passes, "import_seconds": import_seconds, "page": statistics.median(page),
    "app_page": statistics.median(app_page), "submit": statistics.median(submit), "requests": len(assignments),
    "big_tasks": {big}, "small_page": small_page, "big_first": big_first, "big_last": big_last,
}}))
"""


def data_dir() -> Path:
    raw = os.environ.get("TURKINGBENCH_DATA") or "../shared/data/turkingbench"
    path = Path(raw) if Path(raw).is_absolute() else (ROOT / raw).resolve()
    if not (path / "tasks").is_dir():
        raise FileNotFoundError(f"no TurkingBench tasks in {path}: set TURKINGBENCH_DATA")
    return path


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-forms-"))
    try:
        with scratch_database("bench_forms", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            script = MEASURE.format(data=str(data_dir()), rows=size["rows"], requests=size["requests"], big=size["big"])
            measured = json.loads(manage(env, "shell", "-c", script).strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "rows": measured["rows"],
        "import_rows_per_s": round(measured["rows"] / measured["import_seconds"]),
        "import_passes": measured["passes"],
        "page_ms_p50": round(measured["page"], 1),
        "app_page_ms_p50": round(measured["app_page"], 1),
        "submit_ms_p50": round(measured["submit"], 1),
        "requests": measured["requests"],
        "batch_page_tasks": measured["big_tasks"],
        "batch_page_ms_p50": round(measured["big_first"], 1),
        "batch_page_last_ms_p50": round(measured["big_last"], 1),
        "batch_page_small_ms_p50": round(measured["small_page"], 1),
        "batch_page_ratio": round(max(measured["big_first"], measured["big_last"]) / measured["small_page"], 2),
        "database": "postgresql" if database_url else "sqlite",
    }
