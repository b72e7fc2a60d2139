"""Statistics page benchmark: server time (p50) and query count of ``/projects/<name>/stats/`` for a project of
WebLINX's size (2,337 demos, 100,000 turns), against a project a tenth of its size measured in the same run.

The projects are bulk-inserted (``annotation.synth.bulk``: demos, turns and review edits, no pages) in a scratch
database and analysed (as autovacuum would), untimed. Timed: ``REQUESTS`` GETs of each project's stats page
through the Django test client (the whole request: middleware, queries, template) after one warm-up. Target:
p50 <= 300 ms for the large project and the same query count for both. ``--quick`` uses tiny projects. The
server process's own CPU time per request (``stats_cpu_ms_p50``: Python, ORM and template, without the database's
time) and the machine's load average are reported too: other work on a shared machine inflates wall-clock times.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from devtools.processes import scratch_database

from .ingest import manage, migrate, server_env

FULL = {"demos": 2337, "turns": 100_000, "requests": 15}
QUICK = {"demos": 10, "turns": 250, "requests": 3}

MEASURE = """
import json, statistics, time
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from annotation.models import Membership, Project, Role, Turn
from annotation.synth.bulk import bulk_corpus
user = get_user_model().objects.create_user("bench-researcher")
navigator = get_user_model().objects.create_user("bench-navigator")
client = Client(HTTP_HOST="localhost")
client.force_login(user)
out = {{}}
for name, demos, turns in (("small", {demos} // 10, {turns} // 10), ("large", {demos}, {turns})):
    project = Project.objects.create(name=f"bench-stats-{{name}}")
    Membership.objects.create(project=project, user=user, role=Role.RESEARCHER)
    bulk_corpus(project, navigator, demos=demos, turns=turns, seed=1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would after a load: the planner knows the tables' sizes
    url = f"/projects/{{project.name}}/stats/"
    assert client.get(url).status_code == 200
    times, cpu = [], []
    for _ in range({requests}):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    stored = Turn.objects.filter(demonstration__project=project).count()
    out[name] = {{"ms": statistics.median(times), "cpu_ms": statistics.median(cpu), "queries": len(queries),
                 "demos": demos, "turns": stored}}
print(json.dumps(out))
"""


def run(quick: bool = False) -> dict:
    size = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    try:
        with scratch_database("bench_stats", migrated=True) as database_url:
            env = server_env(work / "var", database_url)
            migrate(env, database_url)
            measured = json.loads(manage(env, "shell", "-c", MEASURE.format(**size)).strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    small, large = measured["small"], measured["large"]
    return {
        "demos": large["demos"],
        "turns": large["turns"],
        "stats_ms_p50": round(large["ms"], 1),
        "stats_cpu_ms_p50": round(large["cpu_ms"], 1),  # the Django process's own CPU time: less load-sensitive
        "queries": large["queries"],
        "demos_small": small["demos"],
        "stats_ms_p50_small": round(small["ms"], 1),
        "queries_small": small["queries"],
        "ratio_vs_small": round(large["ms"] / small["ms"], 2) if small["ms"] else None,
        "requests": size["requests"],
        "load_average_1m": round(os.getloadavg()[0], 1),  # other work on the machine inflates every time above
        "database": "postgresql" if database_url else "sqlite",
    }
