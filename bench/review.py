"""Review page benchmark: server time (p50) and query count of ``/review/<demo>/`` for demos of 100 and 500 turns.

Demos are stored first through the ingest actions (``synth_demos``, untimed) in a scratch database and VAR_DIR.
Timed: ``REQUESTS`` GETs of each review page through the Django test client in one process (the whole request:
middleware, queries, template), after one warm-up request (which computes and caches the quality checks).
Target: 500 turns <= 200 ms and the same query count for both demos. ``--quick`` uses small demos.
"""

import json
import shutil
import tempfile
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import manage, migrate, server_env

FULL = {"turns": (100, 500), "elements": 300, "requests": 15}
QUICK = {"turns": (10, 30), "elements": 60, "requests": 3}
PROJECT = "bench-review"

MEASURE = """
import json, statistics, time
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from annotation.models import Demonstration, Membership, Project, Role
project = Project.objects.get(name={project!r})
user = get_user_model().objects.create_user("bench-reviewer")
Membership.objects.create(project=project, user=user, role=Role.REVIEWER)
client = Client(HTTP_HOST="localhost")
client.force_login(user)
out = {{}}
for demo in Demonstration.objects.filter(project=project):
    url = f"/review/{{demo.name}}/"
    assert client.get(url).status_code == 200
    times = []
    for _ in range({requests}):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    out[demo.turns.count()] = {{"ms": statistics.median(times), "queries": len(queries)}}
print(json.dumps(out))
"""


def store_demo(env, turns: int, elements: int, seed: int) -> None:
    manage(env, "synth_demos", "--demos", "1", "--turns", str(turns), "--elements", str(elements),
           "--seed", str(seed), "--project", PROJECT)  # fmt: skip


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    try:
        with scratch_database("bench_review", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            for seed, turns in enumerate(size["turns"]):
                store_demo(env, turns, size["elements"], seed)
            script = MEASURE.format(project=PROJECT, requests=size["requests"])
            measured = json.loads(manage(env, "shell", "-c", script).strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (small, small_figures), (large, large_figures) = sorted(measured.items(), key=lambda item: int(item[0]))
    return {
        "server_ms_p50_100": round(small_figures["ms"], 1),
        "server_ms_p50_500": round(large_figures["ms"], 1),
        "queries_100": small_figures["queries"],
        "queries_500": large_figures["queries"],
        "turns_small": int(small),
        "turns_large": int(large),
        "requests": size["requests"],
        "database": "postgresql" if database_url else "sqlite",
    }
