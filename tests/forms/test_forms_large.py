"""Large form batches: a 50,000-row CSV uploaded through the API is stored whole (one task per distinct instance,
gold answers per row, cells with tabs, backslashes, quotes, newlines and non-ASCII text unchanged), its counters
(``tasks_total``, ``tasks_done``) are right and move as workers complete tasks, as the API, the batch page and the
work list show them; on SQLite a batch over ``FORM_SQLITE_MAX_ROWS`` rows is a 413 naming the setting, through the
API and the web form."""

import csv
import io
import json
import os
import subprocess
import sys
import textwrap

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.actions import forms
from annotation.models import Task

BATCHES = "/api/batches/"
ROWS = 50_000
TEMPLATE = '<p>${code}: ${text}</p><input name="label"><input type="submit">'
ODD = ["tab\there", "back\\slash \\n not a newline", 'say "hi", then', "two\nlines", "naïve ☃ 数据 \U0001f600", ""]


def large_csv() -> tuple[bytes, list]:
    """``ROWS`` rows over ``ROWS // 2`` distinct instances (each twice, its two gold answers differing), the first
    instances' texts odd; returns the CSV and the instances' (code, text) in file order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["code", "text", "Answer.label"])
    instances = [(f"c{i}", ODD[i] if i < len(ODD) else f"words {i}") for i in range(ROWS // 2)]
    for i, (code, text) in enumerate(instances):
        writer.writerow([code, text, f"first {i}|{ODD[i % len(ODD)]}"])
    for i, (code, text) in enumerate(instances):
        writer.writerow([code, text, f"second {i}"])
    return out.getvalue().encode(), instances


def all_tasks(client, batch_id) -> list:
    tasks, url = [], f"{BATCHES}{batch_id}/tasks/?page_size=500"
    while url:
        body = client.get(url).json()
        tasks += body["results"]
        url = body["next"]
    return tasks


@pytest.mark.slow
def test_a_large_csv_is_stored_whole_with_counters_that_follow_the_work(manager, owner, teammate, api_for):
    data, instances = large_csv()
    client = api_for(manager)
    body = {
        "project": "alpha",
        "name": "large",
        "assignments_per_task": 2,
        "template": SimpleUploadedFile("t.html", TEMPLATE.encode(), "text/html"),
        "csv": SimpleUploadedFile("large.csv", data, "text/csv"),
    }
    response = client.post(BATCHES, body, format="multipart")
    assert response.status_code == 201, response.content[:500]
    batch_id = response.json()["id"]
    assert (response.json()["tasks_total"], response.json()["tasks_done"]) == (ROWS // 2, 0)

    tasks = all_tasks(client, batch_id)
    assert [t["index"] for t in tasks] == list(range(ROWS // 2))
    assert [(t["inputs"]["code"], t["inputs"]["text"]) for t in tasks] == instances
    for i in (0, 1, 2, 3, 4, 5, 777, ROWS // 2 - 1):
        first = f"first {i}|{ODD[i % len(ODD)]}"
        expected = [{"row": i, "answers": {"label": first.split("|")}}]
        expected.append({"row": ROWS // 2 + i, "answers": {"label": f"second {i}"}})
        assert tasks[i]["gold"] == expected, i

    # two workers complete the first two tasks (two assignments each): the counters follow, wherever they are read
    for worker in (owner, teammate):
        for task_id in (tasks[0]["id"], tasks[1]["id"]):
            assignment = forms.do_accept_task(worker, Task.objects.get(pk=task_id))
            frames = Client()
            assert frames.post(forms.work_url(assignment), {"label": "done"}).status_code == 200
    listed = {b["id"]: b for b in client.get(BATCHES).json()["results"]}[batch_id]
    assert (listed["tasks_total"], listed["tasks_done"]) == (ROWS // 2, 2)
    stats = client.get(f"{BATCHES}{batch_id}/stats/").json()
    assert (stats["tasks_total"], stats["tasks_done"]) == (ROWS // 2, 2)
    page = Client()
    page.force_login(manager)
    assert f"2 / {ROWS // 2}" in page.get(f"/work/batches/{batch_id}/").content.decode()
    assert f"2 / {ROWS // 2}" in page.get("/work/").content.decode()


SQLITE_UPLOADS = textwrap.dedent(
    """
    import json
    import django
    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from rest_framework.test import APIClient
    from annotation.models import Batch, Membership, Project, Role
    from django.contrib.auth import get_user_model

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("manager")
    project = Project.objects.create(name="alpha")
    Membership.objects.create(project=project, user=user, role=Role.RESEARCHER)
    template = b'<p>${code}</p><input name="label">'
    def files(rows):
        csv = b"code\\n" + b"".join(b"c%d\\n" % i for i in range(rows))
        return SimpleUploadedFile("t.html", template), SimpleUploadedFile("b.csv", csv)
    api = APIClient(HTTP_HOST="localhost")
    api.force_authenticate(user)
    out = {"vendor": connection.vendor}
    for rows in (5, 6):
        template_file, csv_file = files(rows)
        body = {"project": "alpha", "name": f"api-{rows}", "template": template_file, "csv": csv_file}
        response = api.post("/api/batches/", body, format="multipart")
        out[f"api_{rows}"] = [response.status_code, response.content.decode()]
    web = Client(HTTP_HOST="localhost")
    web.force_login(user)
    template_file, csv_file = files(6)
    body = {"project": "alpha", "name": "web-6", "template": template_file, "csv": csv_file,
            "assignments_per_task": 1, "allotted_minutes": 30, "published": "on"}
    response = web.post("/work/batches/new/", body)
    out["web_6"] = [response.status_code, response.content.decode()]
    out["batches"] = sorted(Batch.objects.values_list("name", flat=True))
    print(json.dumps(out))
    """
)


@pytest.mark.processes
def test_on_sqlite_a_batch_over_its_row_limit_is_a_413_naming_the_setting(tmp_path):
    """The platform on its embedded SQLite database (``make run``), in a process of its own: 5 rows are stored,
    6 rows (over ``FORM_SQLITE_MAX_ROWS`` = 5) are refused with a 413 naming the limit, through the API and the web
    form, and nothing of them is stored."""
    environment = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "VAR_DIR": str(tmp_path),
        "DEBUG": "1",
        "SECRET_KEY": "k" * 64,
        "FORM_SQLITE_MAX_ROWS": "5",
    }
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_UPLOADS],
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])

    assert out["vendor"] == "sqlite"
    assert out["api_5"][0] == 201
    status, content = out["api_6"]
    assert status == 413
    error = json.loads(content)
    assert error["errors"][0]["field"] == "csv"
    assert "more than 5 rows" in error["detail"]
    assert "FORM_SQLITE_MAX_ROWS" in error["detail"]
    status, content = out["web_6"]
    assert status == 413
    assert "FORM_SQLITE_MAX_ROWS" in content
    assert out["batches"] == ["api-5"]
