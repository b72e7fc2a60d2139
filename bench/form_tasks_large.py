"""Large form batch benchmark: a 1,000,000-row CSV imported as one batch, another user's submissions meanwhile,
and the batch pages at that size.

Timed, in one process against a scratch database: reading, checking and storing the CSV (``parse_batch`` +
``do_create_form_batch``, what the upload page, the API and ``import_turkingbench`` call). Meanwhile another
process (as another server process would) submits answers to another batch of the project through the Django test
client, one after another: ``submit_ms_max`` is the longest any of them waited (the import must not block them for
more than a second). Then, after ``ANALYZE`` (as autovacuum would), ``requests`` GETs through the test client of
the batch page (``/work/batches/<id>/``, a researcher), the work list (``/work/``, a worker of the batch) and the
batch list (``GET /api/batches/``, the researcher); ``page_ms_p50`` is the slowest page's p50. Targets: >= 20,000
rows/s on PostgreSQL, pages <= 300 ms p50, submissions never waiting over 1 s. ``--quick`` uses 5,000 rows.
``import_cpu_seconds``: the importing process's own CPU time, which other work on a shared machine does not inflate.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import manage, migrate, server_env

FULL = {"rows": 1_000_000, "requests": 15}
QUICK = {"rows": 5_000, "requests": 3}

# The other worker's process: one submission after another (the first untimed: its set-up) until told to stop.
SUBMIT = """
import json, pathlib, time
from django.test import Client
from annotation.actions.forms import work_url
from annotation.models import Assignment
folder = pathlib.Path({folder!r})
ids, waits = json.loads((folder / "ids.json").read_text()), []
frames = Client(HTTP_HOST="localhost")
assert frames.post(work_url(Assignment.objects.get(pk=ids[0])), {{"label": "x"}}).status_code == 200
(folder / "ready").touch()
for pk in ids[1:]:
    if (folder / "stop").exists():
        break
    url = work_url(Assignment.objects.get(pk=pk))
    started = time.perf_counter()
    response = frames.post(url, {{"label": "x"}})
    waits.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200, response.content[:300]
    time.sleep(0.02)
(folder / "waits.json").write_text(json.dumps(waits))
"""

MEASURE = r"""
import json, pathlib, statistics, subprocess, sys, time
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from annotation.actions import forms
from annotation.actions.forms import BatchSettings, do_create_form_batch, parse_batch, work_url
from annotation.models import Membership, Project, Role

ROWS = {rows}
TEMPLATE = b'<p>${{code}}: ${{text}}</p><input name="label"><input type="submit">'
lines = ["code,text,Answer.label"]
lines += [f"row-{{i:07d}},words to label number {{i}},label {{i % 7}}" for i in range(ROWS)]
data = ("\n".join(lines) + "\n").encode()
del lines

users = get_user_model().objects
researcher, worker = users.create_user("bench-researcher"), users.create_user("bench-worker")
submitter = users.create_user("bench-submitter")
project = Project.objects.create(name="bench-forms-large")
Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
for user in (worker, submitter):
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
small = parse_batch(TEMPLATE, b"code,text\n" + b"".join(b"s%d,t%d\n" % (i, i) for i in range(400)), "small.csv")
other = do_create_form_batch(researcher, project, "other", small, BatchSettings())
held = [forms.do_accept_task(submitter, task) for task in other.tasks.order_by("index")[:400]]

# Another worker's submissions come from a process of their own, as from another server process.
folder = pathlib.Path({folder!r})
(folder / "ids.json").write_text(json.dumps([assignment.pk for assignment in held]))
submitter = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", {submit!r}])
while not (folder / "ready").exists():
    assert submitter.poll() is None, "the submitting process ended before it was ready"
    time.sleep(0.05)
import_started, import_cpu = time.perf_counter(), time.process_time()
parsed = parse_batch(TEMPLATE, data, "large.csv")
parsed_at = time.perf_counter()
batch = do_create_form_batch(researcher, project, "large", parsed, BatchSettings())
import_seconds, import_cpu = time.perf_counter() - import_started, time.process_time() - import_cpu
(folder / "stop").touch()
assert submitter.wait() == 0
waits = json.loads((folder / "waits.json").read_text())
del parsed, data

with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
manager, member = Client(HTTP_HOST="localhost"), Client(HTTP_HOST="localhost")
manager.force_login(researcher)
member.force_login(worker)
pages = {{}}
for key, client, url in (("batch", manager, f"/work/batches/{{batch.pk}}/"), ("work", member, "/work/"),
                         ("list", manager, "/api/batches/")):
    assert client.get(url).status_code == 200, url
    times = []
    for _ in range({requests}):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    pages[key] = statistics.median(times)
print(json.dumps({{
    "rows": ROWS, "tasks": batch.tasks.count(), "import_seconds": import_seconds, "import_cpu": import_cpu,
    "parse_seconds": parsed_at - import_started,
    "pages": pages, "submits": len(waits), "submit_max": max(waits), "submit_p50": statistics.median(waits),
}}))
"""


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-forms-large-"))
    try:
        with scratch_database("bench_forms_large", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            folder = work / "submitter"
            folder.mkdir()
            submit = SUBMIT.format(folder=str(folder))
            script = MEASURE.format(rows=size["rows"], requests=size["requests"], folder=str(folder), submit=submit)
            measured = json.loads(manage(env, "shell", "-c", script).strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pages = measured["pages"]
    return {
        "rows": measured["rows"],
        "tasks": measured["tasks"],
        "import_rows_per_s": round(measured["rows"] / measured["import_seconds"]),
        "import_seconds": round(measured["import_seconds"], 1),
        # the importing process's own CPU (parse, COPY lines; not PostgreSQL's): less sensitive to other work
        "import_cpu_seconds": round(measured["import_cpu"], 1),
        "parse_seconds": round(measured["parse_seconds"], 1),
        "page_ms_p50": round(max(pages.values()), 1),
        "batch_page_ms_p50": round(pages["batch"], 1),
        "work_page_ms_p50": round(pages["work"], 1),
        "batch_list_ms_p50": round(pages["list"], 1),
        "submits_during_import": measured["submits"],
        "submit_ms_max": round(measured["submit_max"], 1),
        "submit_ms_p50": round(measured["submit_p50"], 1),
        "requests": size["requests"],
        "load_average_1m": round(os.getloadavg()[0], 1),
        "database": "postgresql" if database_url else "sqlite",
    }
