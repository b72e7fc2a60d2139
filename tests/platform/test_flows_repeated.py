"""The main flows as a team does them: each several times in one project, by several people, every result read the
way its user reads it (the API, the pages, an export's archive), never from the database or the disk.

- Mind2Web: three annotators propose, two reviewers accept three proposals one after the other (and reject a near
  copy of a seed task); each proposer demonstrates their tasks with the recorder's API protocol (start the task,
  HEAD/PUT the blobs, post the step turns with their MHTML snapshots, finish); reviewers verify them (a step
  discarded, a task refined, validated); a researcher exports Mind2Web through a real worker.
- Form tasks: a researcher uploads two batches; three workers work each through the pages and the task frame
  (three assignments per task on the first, one on the second); results, statistics and histories read back.
- Reviews in a row: four recordings by three annotators; reviewers take them with Review next, validate, return
  one with a comment, its annotator resubmits it, and it is validated again.

The second accept, the third worker and the next demo are where a flow done once does not look (#27).
"""

import csv
import io
import json
import tarfile
from urllib.parse import urlsplit

import lxml.html
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.lib.splits import MIND2WEB_SPLITS
from annotation.models import Role
from tests.support.actors import make_user, signed_in, token_client
from tests.support.jobs import poll_job
from tests.support.mind2web_data import propose, review, website
from tests.support.payloads import MHTML, BlobFile, browser_turn, intent_arguments, state_blobs, state_refs
from tests.support.recorder import blob_url, finish, post_turns, put_blob, recordings_url, start_recording


def people(project, role: str, *names: str) -> list:
    return [make_user(name, project, role) for name in names]


# --- Mind2Web: propose, review, demonstrate, verify, export, three times over ------------------------------------


def upload(client, blobs) -> None:
    """The recorder's upload: ``HEAD`` each blob, ``PUT`` the ones the project does not have yet (a page's boxes may
    be the same as an earlier page's)."""
    for blob in blobs:
        if client.head(blob_url(blob.sha256)).status_code == 404:
            assert put_blob(client, blob).status_code == 201


def demonstrate(client, task: dict, seed: int) -> str:
    """What the recorder does for a demonstration task in step mode; returns the recording's name."""
    started = client.post(f"/api/demonstration-tasks/{task['id']}/start/", {"client_id": f"m2w-{seed}"}, format="json")
    assert started.status_code == 201, started.content
    name = started.json()["name"]
    blobs = state_blobs(seed=seed)
    snapshot = BlobFile(MHTML.replace(b"<html></html>", f"<html>step {seed}</html>".encode()), "multipart/related")
    upload(client, [*blobs.values(), snapshot])
    turns = []
    for index, (intent, op) in enumerate((("click", "CLICK"), ("textInput", "TYPE"))):
        arguments = intent_arguments(intent)
        arguments["properties"] = {**arguments.get("properties", {}), "stepOp": op, "mhtml": snapshot.sha256}
        turns.append(browser_turn(f"step-{index}", intent, 1.0 + index, arguments=arguments, **state_refs(blobs)))
    assert post_turns(client, name, turns).status_code == 201
    assert finish(client, name).status_code == 200
    return name


def review_edit(client, name: str, **body):
    """One write of the review page: ``POST /review/<demo>/edit`` with the revision the page shows."""
    body["revision"] = client.get(f"/review/{name}/revision").json()["revision"]
    response = client.post(f"/review/{name}/edit", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, (body, response.content)
    return response.json()


def archive_files(client, job_id: int) -> dict[str, bytes]:
    """The files of a finished export, read from its download, without the archive's top folder."""
    seen = poll_job(client, f"/api/exports/{job_id}/")
    assert seen[-1]["status"] == "done", seen[-1]["error"]
    data = b"".join(client.get(seen[-1]["download_url"]).streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() or m.islnk()}


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_three_proposals_are_accepted_demonstrated_verified_and_exported(alpha, worker):  # noqa: F811
    proposers = people(alpha, Role.ANNOTATOR, "ana", "ben", "cleo")
    reviewers = people(alpha, Role.REVIEWER, "rita", "remy")
    (researcher,) = people(alpha, Role.RESEARCHER, "rosa")
    sites = [website(alpha, "exploretock"), website(alpha, "carmax", seeds=[])]

    ana = propose(token_client(proposers[0]), sites[0], ["Find the gift card balance page", "Track my last order"])
    ben = propose(token_client(proposers[1]), sites[1], ["Find a used SUV under 20000 dollars near Denver"])
    cleo = propose(token_client(proposers[2]), sites[0], ["Browse wine tastings in Napa for this weekend please"])
    assert cleo["proposals"][0]["similar_to"][0]["source"] == "seed"
    decisions = [
        (reviewers[0], ana["proposals"][0], "accept"),
        (reviewers[1], ben["proposals"][0], "accept"),
        (reviewers[0], cleo["proposals"][0], "reject"),
        (reviewers[1], ana["proposals"][1], "accept"),
    ]
    for who, proposal, decision in decisions:
        answer = review(token_client(who), proposal["id"], decision)
        assert answer.status_code == 200, (proposal["text"], answer.content)
        assert answer.json()["status"] == {"accept": "accepted", "reject": "rejected"}[decision]

    tasks = {who.username: token_client(who).get("/api/demonstration-tasks/").json() for who in proposers}
    assert {name: [t["task"] for t in listed] for name, listed in tasks.items()} == {
        "ana": ["Find the gift card balance page", "Track my last order"],
        "ben": ["Find a used SUV under 20000 dollars near Denver"],
        "cleo": [],
    }
    recorded = {}
    for seed, (who, task) in enumerate((p, t) for p in proposers for t in tasks[p.username]):
        recorded[task["task"]] = demonstrate(token_client(who), task, seed)
        assert task["id"] not in [t["id"] for t in token_client(who).get("/api/demonstration-tasks/").json()]
    assert all(token_client(who).get("/api/demonstration-tasks/").json() == [] for who in proposers)

    # Verification: a step discarded in one, the task refined in another, each validated by a reviewer.
    refined = "Open the page with the balance of a gift card"
    for index, name in enumerate(recorded.values()):
        reviewer = signed_in(reviewers[index % 2])
        turns = token_client(researcher).get(recordings_url(name, "turns")).json()
        if index == 0:
            review_edit(reviewer, name, op="edit_metadata", fields={"refined_task": refined})
        if index == 1:  # the first step of the timeline, as the review page lists it
            page = lxml.html.document_fromstring(reviewer.get(f"/review/{name}/").content.decode())
            review_edit(reviewer, name, op="delete", turn=int(page.xpath('//*[@id="timeline"]/li/@data-id')[0]))
        assert review_edit(reviewer, name, op="transition", action="validate")["status"] == "validated"
        snapshot = turns[0]["arguments"]["properties"]["mhtml"]
        assert f"step {index}".encode() in b"".join(token_client(reviewers[0]).get(f"/api/blobs/{snapshot}"))
    verification = token_client(reviewers[1]).get("/api/projects/alpha/verification/").json()
    assert verification == {"tasks": 3, "discarded": 0, "refined": 1, "with_steps_discarded": 1}

    client = token_client(researcher)
    job = client.post("/api/exports/", {"project": "alpha", "format": "mind2web"}, format="json")
    assert job.status_code == 202, job.content
    files = archive_files(client, job.json()["id"])
    records = [r for split in MIND2WEB_SPLITS for r in json.loads(files.get(f"{split}.json", b"[]"))]
    assert sorted(r["confirmed_task"] for r in records) == sorted(
        [refined, "Track my last order", "Find a used SUV under 20000 dollars near Denver"]
    )
    steps = {r["confirmed_task"]: [a["operation"]["original_op"] for a in r["actions"]] for r in records}
    assert steps["Track my last order"] == ["TYPE"], "the discarded step is not exported"
    assert steps[refined] == ["CLICK", "TYPE"]
    for record in records:
        for action in record["actions"]:
            path = f"task/{record['annotation_id']}/processed/snapshots/{action['action_uid']}_before.mhtml"
            assert path in files, sorted(files)
            assert files[path].startswith(b"From: <Saved by Blink>")


# --- Form tasks: three workers on each of two batches --------------------------------------------------------------

TEMPLATE = '<p>${sentence}</p><input type="text" name="answer"><input type="checkbox" name="sure" value="yes">'


def upload_batch(client, name: str, rows: list[str], **fields):
    """A Turkle-style upload as multipart, leaving out ``published`` and ``active`` (both default to true)."""
    body = {
        "project": "alpha",
        "name": name,
        "template": SimpleUploadedFile("template.html", TEMPLATE.encode(), "text/html"),
        "csv": SimpleUploadedFile(f"{name}.csv", ("sentence\n" + "\n".join(rows) + "\n").encode(), "text/csv"),
        **fields,
    }
    response = client.post("/api/batches/", body, format="multipart")
    assert response.status_code == 201, response.content
    assert (response.json()["published"], response.json()["active"]) == (True, True)
    return response.json()


def accept(client, batch_id: int) -> str | None:
    """*Accept* on the work page: the assignment page's path, or None when the batch has nothing left for you."""
    response = client.post(f"/work/batches/{batch_id}/accept/")
    assert response.status_code == 302
    location = response["Location"]
    return None if location == "/work/" else location


def submit(client, assignment_page: str, answers: dict) -> None:
    """What the worker's browser does: open the assignment page, then post the form of its task frame."""
    page = lxml.html.document_fromstring(client.get(assignment_page).content.decode())
    frame = urlsplit(page.get_element_by_id("task-frame").get("src")).path
    assert page.get_element_by_id("task-frame").get("referrerpolicy") == "no-referrer"
    answered = Client().post(frame, answers)  # the sandboxed frame has no session: its URL's token authorises it
    assert answered.status_code == 200, answered.content
    assert "submitted" in answered.content.decode()


@pytest.mark.django_db
def test_three_workers_do_two_batches_and_the_results_name_each_of_them(alpha):
    workers = people(alpha, Role.ANNOTATOR, "wanda", "walt", "wes")
    (researcher,) = people(alpha, Role.RESEARCHER, "rosa")
    (reviewer,) = people(alpha, Role.REVIEWER, "rita")
    manager = token_client(researcher)
    shared = upload_batch(manager, "shared", ["It rains.", "They won."], assignments_per_task=3)
    split = upload_batch(manager, "split", ["One.", "Two.", "Three."], assignments_per_task=1)

    for _ in range(2):  # the shared batch: everyone does every task, taking turns
        for who in workers:
            client = signed_in(who)
            page = accept(client, shared["id"])
            assert page is not None, who.username
            submit(client, page, {"answer": f"{who.username} says", "sure": "yes"})
    for who in workers:  # the split batch: one task each, and then none is left for anyone
        client = signed_in(who)
        submit(client, accept(client, split["id"]), {"answer": f"{who.username} alone"})
    assert all(accept(signed_in(who), batch["id"]) is None for who in workers for batch in (shared, split))

    rows = {}
    for batch in (shared, split):
        response = manager.get(f"/api/batches/{batch['id']}/results/", HTTP_ACCEPT="text/csv")
        assert response.status_code == 200
        rows[batch["name"]] = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert sorted((r["Turkle.Username"], r["Input.sentence"], r["Answer.answer"]) for r in rows["shared"]) == sorted(
        (w.username, sentence, f"{w.username} says") for w in workers for sentence in ("It rains.", "They won.")
    )
    assert {r["Answer.sure"] for r in rows["shared"]} == {"yes"}
    assert sorted(r["Input.sentence"] for r in rows["split"]) == ["One.", "Three.", "Two."]
    assert sorted(r["Turkle.Username"] for r in rows["split"]) == sorted(w.username for w in workers)

    stats = token_client(reviewer).get(f"/api/batches/{shared['id']}/stats/").json()
    assert (stats["tasks_done"], stats["tasks_total"], stats["assignments"]["submitted"]) == (2, 2, 6)
    assert [(w["username"], w["submitted"]) for w in stats["workers"]] == [
        (w.username, 2) for w in sorted(workers, key=lambda w: w.username)
    ]
    batch_page = signed_in(reviewer).get(f"/work/batches/{split['id']}/").content.decode()
    assert 'id="tasks-done">3 / 3<' in batch_page
    for who in workers:
        history = lxml.html.document_fromstring(signed_in(who).get("/work/").content.decode())
        assert len(history.xpath('//*[@id="work-history"]//tr[@data-assignment]')) == 3
        own = token_client(who).get("/api/assignments/").json()
        assert sorted(a["status"] for a in own["results"]) == ["submitted"] * 3
    listed = token_client(researcher).get("/api/batches/").json()["results"]
    assert sorted((b["name"], b["tasks_done"], b["tasks_total"], b["completed"]) for b in listed) == [
        ("shared", 2, 2, True),
        ("split", 3, 3, True),
    ]


# --- Reviews in a row -----------------------------------------------------------------------------------------------


def record(who, seed: int) -> str:
    """A recording made through the recorder's API: started, its blobs uploaded, three turns, finished."""
    client = token_client(who)
    started = start_recording(client, client_id=f"rec-{seed}", task_description=f"Task {seed}")
    assert started.status_code == 201, started.content
    name = started.json()["name"]
    blobs = state_blobs(seed=seed)
    upload(client, blobs.values())
    turns = [browser_turn(f"t-{i}", "click", 1.0 + i, **state_refs(blobs)) for i in range(3)]
    assert post_turns(client, name, turns).status_code == 201
    assert finish(client, name).status_code == 200
    return name


def review_next(client) -> str | None:
    """*Review next*: the demo it opens, or None when nothing is left for this reviewer."""
    location = client.post("/review/next")["Location"]
    return None if location.startswith("/review/?") or location == "/review/" else location.split("/")[2]


@pytest.mark.django_db
def test_reviews_in_a_row_validate_return_resubmit_and_validate_again(alpha):
    annotators = people(alpha, Role.ANNOTATOR, "ana", "ben", "cleo")
    reviewer_users = people(alpha, Role.REVIEWER, "rita", "remy")
    reviewers = [signed_in(who) for who in reviewer_users]
    names = [record(who, seed) for seed, who in enumerate([annotators[0], *annotators])]
    navigator = dict(zip(names, [annotators[0], *annotators], strict=True))

    first = review_next(reviewers[0])
    second = review_next(reviewers[1])
    assert {first, second} <= set(names)
    assert first != second, "two reviewers never get the same demo"
    review_edit(reviewers[0], first, op="comment", text="Clean recording")
    assert review_edit(reviewers[0], first, op="transition", action="validate")["status"] == "validated"
    returned = review_edit(reviewers[1], second, op="transition", action="return", comment="Redo the last click")
    assert returned["status"] == "returned"
    third = review_next(reviewers[0])
    assert third not in (first, second)
    assert review_edit(reviewers[0], third, op="transition", action="validate")["status"] == "validated"

    owner = signed_in(navigator[second])
    page = owner.get(f"/review/{second}/").content.decode()
    assert "Redo the last click" in page
    assert review_edit(owner, second, op="transition", action="resubmit")["status"] == "recorded"

    decided = {first, third}
    while (name := review_next(reviewers[1])) is not None:
        assert name not in decided, f"{name} was decided already"
        assert review_edit(reviewers[1], name, op="transition", action="validate")["status"] == "validated"
        decided.add(name)
    assert decided == set(names)
    assert review_next(reviewers[0]) is None

    listed = token_client(annotators[0]).get("/api/recordings/?status=validated&navigator__username=ana").json()
    assert {d["name"] for d in listed["results"]} == {name for name in names if navigator[name] == annotators[0]}
    everyone = token_client(reviewer_users[1]).get("/api/demonstrations/?project__name=alpha&status=validated")
    assert everyone.json()["count"] == 4
    history = reviewers[0].get(f"/review/{second}/").content.decode()
    for words in ("Returned to the annotator", "Validated"):
        assert words in history
