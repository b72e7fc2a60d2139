"""Quality benchmark: agreement and aggregation of a form batch of 4,000 tasks × 5 workers × 5 fields (100,000
answers), and the batch's agreement page.

The batch (radio, select, checkbox group, range, radio; 12 workers of accuracies 0.55–0.95, five per task; gold on
one task in ten) is stored through the upload's parse and action and its submitted assignments bulk-inserted, in a
scratch database, then analysed (as autovacuum would), untimed. Timed, in one process:

- ``seconds``: ``annotation.actions.quality.agreement.batch_agreement(batch, cached=False)``: the answers and the
  gold scores read (two queries), per field Krippendorff's α, majority vote per task and Dawid–Skene (crowd-kit,
  ``DS_ITERATIONS`` / ``DS_TOLERANCE``), per worker agreement and gold accuracy; median of 3. ``read_seconds``: the
  same queries alone (the baseline), and ``ratio_vs_read``; ``cpu_seconds``: this process's CPU time of the
  computation (without the database's), less inflated than wall-clock time by other work on a shared machine.
- ``page_ms_p50``: ``/work/batches/<id>/agreement/`` through the Django test client (the whole request), p50 of 15
  after the first (which computes and caches); ``page_cold_ms``: the first request after one more submission
  (the batch's figures version moves, so it computes again); ``batch_page_ms_p50``: the batch page itself, the
  baseline; ``page_cpu_ms_p50``: the page's CPU time in this process.

Targets: ``seconds`` ≤ 2, ``page_ms_p50`` ≤ 300. ``--quick`` uses 40 tasks and 3 requests.
"""

import json
import shutil
import tempfile
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import manage, migrate, server_env

FULL = {"tasks": 4000, "requests": 15}
QUICK = {"tasks": 40, "requests": 3}

MEASURE = r"""
import datetime as dt, json, os, random, statistics, time
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone
from annotation.actions import forms
from annotation.actions.forms import BatchSettings, do_create_form_batch, parse_batch
from annotation.actions.quality import agreement
from annotation.lib import agreement as lib
from annotation.models import Assignment, AssignmentStatus, Membership, Project, Role, Task

TASKS, REQUESTS = {tasks}, {requests}
TEMPLATE = '''<p>${{text}}</p>
<input type="radio" name="sentiment" value="pos"><input type="radio" name="sentiment" value="neg">
<input type="radio" name="sentiment" value="neutral"><input type="radio" name="sentiment" value="mixed">
<select name="topic"><option value="sport">sport</option><option value="food">food</option>
<option value="news">news</option></select>
<input type="checkbox" name="tags" value="x"><input type="checkbox" name="tags" value="y">
<input type="checkbox" name="tags" value="z">
<input type="range" name="score" min="1" max="5">
<input type="radio" name="relevant" value="yes"><input type="radio" name="relevant" value="no">'''
CHOICES = {{
    "sentiment": ["pos", "neg", "neutral", "mixed"], "topic": ["sport", "food", "news"],
    "tags": [[], ["x"], ["y"], ["x", "y"], ["x", "z"]], "score": ["1", "2", "3", "4", "5"], "relevant": ["yes", "no"],
}}
rng = random.Random(1)
truth = [{{name: rng.randrange(len(values)) for name, values in CHOICES.items()}} for _ in range(TASKS)]
def cell(value):
    return "|".join(value) if isinstance(value, list) else value
rows = ["text,Answer.sentiment,Answer.topic,Answer.score"]
for index in range(TASKS):
    rows.append(f"item {{index}},{{CHOICES['sentiment'][truth[index]['sentiment']]}},"
                f"{{CHOICES['topic'][truth[index]['topic']]}},{{CHOICES['score'][truth[index]['score']]}}")
project = Project.objects.create(name="bench-quality")
researcher = get_user_model().objects.create_user("bench-researcher")
Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
workers = []
for number in range(12):
    user = get_user_model().objects.create_user(f"bench-worker-{{number}}")
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    workers.append(user)
accuracy = [0.55 + 0.4 * number / 11 for number in range(12)]
batch = do_create_form_batch(researcher, project, "agreement", parse_batch(TEMPLATE.encode(), "\n".join(rows).encode(),
                             "agreement.csv"), BatchSettings(assignments_per_task=6))
# gold on one task in ten
Task.objects.filter(batch=batch, index__gte=TASKS // 10).update(gold=[], is_gold=False, gold_answers={{}})
tasks = list(Task.objects.filter(batch=batch).order_by("index"))
now = timezone.now()
assignments = []
for task in tasks:
    for slot in range(5):
        number = (task.index + 2 * slot) % 12
        answers = {{}}
        for name, values in CHOICES.items():
            right = rng.random() < accuracy[number]
            answers[name] = values[truth[task.index][name] if right else rng.randrange(len(values))]
        assignments.append(Assignment(task=task, worker=workers[number], status=AssignmentStatus.SUBMITTED,
            answers=answers, accepted_at=now - dt.timedelta(minutes=5), expires_at=now + dt.timedelta(days=1),
            submitted_at=now, ended_at=now, work_seconds=300.0))
Assignment.objects.bulk_create(assignments, batch_size=2000)
Task.objects.filter(batch=batch).update(taken=5, submitted=5)
forms.rescore_batch(batch)  # the gold scores a submission would have stored
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
answers = sum(len(a.answers) for a in assignments)

timings, reads, cpu = [], [], []
for _ in range(3):
    started = time.perf_counter()
    inputs = agreement.batch_inputs(batch)
    reads.append(time.perf_counter() - started)
    started, started_cpu = time.perf_counter(), time.process_time()
    result = agreement.batch_agreement(batch, cached=False)
    timings.append(time.perf_counter() - started)
    cpu.append(time.process_time() - started_cpu)
client = Client(HTTP_HOST="localhost")
client.force_login(researcher)
url = f"/work/batches/{{batch.pk}}/agreement/"
assert client.get(url).status_code == 200
page, page_cpu = [], []
for _ in range(REQUESTS):
    started, started_cpu = time.perf_counter(), time.process_time()
    response = client.get(url)
    page.append((time.perf_counter() - started) * 1000)
    page_cpu.append((time.process_time() - started_cpu) * 1000)
    assert response.status_code == 200
batch_page = []
for _ in range(REQUESTS):
    started = time.perf_counter()
    response = client.get(f"/work/batches/{{batch.pk}}/")
    batch_page.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200
late = get_user_model().objects.create_user("bench-late")
Membership.objects.create(project=project, user=late, role=Role.ANNOTATOR)
assignment = forms.do_accept_next(late, batch)
forms.do_submit(assignment.pk, {{"sentiment": "pos", "topic": "food", "score": "3", "relevant": "yes"}})
started = time.perf_counter()
response = client.get(url)
cold = (time.perf_counter() - started) * 1000
assert response.status_code == 200
print(json.dumps({{
    "answers": answers, "seconds": statistics.median(timings), "cpu_seconds": statistics.median(cpu),
    "page_cpu": statistics.median(page_cpu), "read_seconds": statistics.median(reads),
    "page": statistics.median(page), "cold": cold, "batch_page": statistics.median(batch_page),
    "fields": len(result["fields"]), "workers": len(result["workers"]),
    "gold_workers": sum(1 for worker in result["workers"] if worker["gold_accuracy"] is not None),
    "load": os.getloadavg()[0],
}}))
"""


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-quality-"))
    try:
        with scratch_database("bench_quality", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            measured = json.loads(manage(env, "shell", "-c", MEASURE.format(**size)).strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "answers": measured["answers"],
        "seconds": round(measured["seconds"], 3),
        "cpu_seconds": round(measured["cpu_seconds"], 3),
        "read_seconds": round(measured["read_seconds"], 3),
        "ratio_vs_read": round(measured["seconds"] / measured["read_seconds"], 1),
        "page_ms_p50": round(measured["page"], 1),
        "page_cpu_ms_p50": round(measured["page_cpu"], 1),
        "page_cold_ms": round(measured["cold"], 1),
        "batch_page_ms_p50": round(measured["batch_page"], 1),
        "gold_workers": measured["gold_workers"],
        "load_average_1m": round(measured["load"], 2),
        "database": "postgresql" if database_url else "sqlite",
    }
