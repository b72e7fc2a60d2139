"""Gold tasks and qualifications through the API and the queue, with three workers: gold tasks served at the batch's
rate and indistinguishable to workers, scored with the TurkingBench scorer's per-field metric, a careless worker
blocked (told why) with their pending work flagged, qualifications granted, revoked and earned in an onboarding batch,
and a batch requiring one invisible to a worker without it. Out-of-range settings are 400s naming the field."""

import pytest
from django.utils import timezone

from agents import scoring
from annotation.actions import Forbidden, forms
from annotation.actions.forms import gold
from annotation.lib import goldschedule
from tests.support.actors import token_client
from tests.support.forms_data import make_batch

# Six tasks; the CSV's Answer.* columns hold known answers (polarity, level) for the first three, blank cells for the
# other three (which are therefore not gold).
GOLD_CSV = "topic,sentence,Answer.polarity,Answer.level\n" + "".join(
    f"t{i},s{i},{'pos' if i % 2 else 'neg'},{'high' if i % 3 else 'low'}\n" if i < 3 else f"t{i},s{i}, ,\n"
    for i in range(6)
)


def right(task) -> dict:
    index = task.index
    return {"polarity": "pos" if index % 2 else "neg", "level": "high" if index % 3 else "low", "short": "ok"}


def wrong(task) -> dict:
    answers = right(task)
    return {**answers, "polarity": "neg" if answers["polarity"] == "pos" else "pos", "level": "none"}


@pytest.fixture
def workers(owner, teammate, instructor):
    return [owner, teammate, instructor]


def gold_batch(alpha, admin, name="questions", **settings):
    batch = make_batch(alpha, csv_text=GOLD_CSV, name=name, assignments_per_task=3)
    api = token_client(admin)
    marked = api.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [0, 1, 2]}, format="json")
    assert marked.status_code == 200
    assert marked.json() == {"changed": 3}
    changed = api.patch(f"/api/batch-quality/{batch.pk}/", settings, format="json")
    assert changed.status_code == 200, changed.content
    batch.refresh_from_db()
    return batch


def work(worker, batch, answer) -> list:
    """Accept and submit until the batch has nothing left for ``worker`` (or blocks them); the assignments
    submitted."""
    done = []
    while True:
        try:
            assignment = forms.do_accept_next(worker, batch)
        except Forbidden:
            return done
        if assignment is None:
            return done
        done.append(forms.do_submit(assignment.pk, answer(assignment.task), timezone.now()))


def test_gold_tasks_come_at_the_rate_and_are_scored_with_the_turkingbench_metric(alpha, admin, workers):
    batch = gold_batch(alpha, admin, gold_rate=0.5)
    owner = workers[0]
    order = []
    for _ in range(6):
        assignment = forms.do_accept_next(owner, batch)
        order.append(assignment.task.is_gold)
        forms.do_submit(assignment.pk, wrong(assignment.task) if assignment.task.index == 1 else right(assignment.task))
    # the kind the worker's schedule says at each position, the other kind once that one is used up
    key, left, expected = gold.schedule_key(batch, owner), {True: 3, False: 3}, []
    for position in range(6):
        due = goldschedule.is_gold_position(key, position, 0.5)
        kind = due if left[due] else not due
        left[kind] -= 1
        expected.append(kind)
    assert order == expected
    rows = token_client(admin).get("/api/decisions/", {"batch": batch.pk, "worker": "owner"}).json()["results"]
    scores = {row["task_index"]: row["gold_score"] for row in rows}
    assert {i: scores[i] for i in (3, 4, 5)} == {3: None, 4: None, 5: None}
    assert scores[0] == 1.0
    assert scores[2] == 1.0
    # task 1 answered wrong: radio and select both miss, so 0 (the scorer's own exact match on each field)
    assert scores[1] == 0.0
    expected = [
        scoring.field_score("official", t, [g], v) for t, g, v in (("radio", "pos", "neg"), ("select", "high", "none"))
    ]
    assert expected == [0.0, 0.0]
    assert rows[0]["worker_gold"] == pytest.approx(2 / 3)


def test_workers_cannot_tell_gold_tasks_apart(alpha, admin, workers, client):
    batch = gold_batch(alpha, admin, gold_rate=1.0)
    teammate = workers[1]
    gold = forms.do_accept_next(teammate, batch)
    assert gold.task.is_gold
    mine = token_client(teammate).get("/api/assignments/").json()["results"][0]
    assert not {"is_gold", "gold_score", "gold_answers", "flagged"} & set(mine)
    client.force_login(teammate)
    page = client.get(f"/work/assignments/{gold.pk}/").content.decode().lower()
    assert "gold" not in page
    assert token_client(teammate).get(f"/api/batch-quality/{batch.pk}/").status_code == 403
    assert token_client(teammate).get("/api/decisions/", {"batch": batch.pk}).status_code == 403


def test_a_careless_worker_is_blocked_told_why_and_their_pending_work_flagged(alpha, admin, workers, client):
    batch = gold_batch(alpha, admin, gold_rate=0.5, gold_threshold=0.6, gold_min_answers=2)
    good, careless, third = workers
    work(good, batch, right)
    done = work(careless, batch, wrong)
    assert [a.task.is_gold for a in done].count(True) == 2  # blocked at the second gold answer
    assert done[-1].task.is_gold
    refused = client.force_login(careless) or client.post(f"/work/batches/{batch.pk}/accept/")
    assert refused.status_code == 403
    assert "blocked" in refused.content.decode()
    assert "gold accuracy" in refused.content.decode()
    with pytest.raises(Forbidden, match="blocked"):
        forms.do_accept_next(careless, batch)
    api_refusal = token_client(careless).post(f"/api/batches/{batch.pk}/accept/")
    assert api_refusal.status_code == 403
    assert "blocked" in api_refusal.json()["detail"]
    assert "gold accuracy" in api_refusal.json()["detail"]
    listed = token_client(careless).get("/api/batches/").json()["results"]
    assert batch.pk not in [b["id"] for b in listed]
    work_page = client.get("/work/").content.decode()
    assert f'data-batch="{batch.pk}"' not in work_page
    assert "blocked" in work_page
    flagged = token_client(admin).get("/api/decisions/", {"batch": batch.pk, "flagged": "true"}).json()["results"]
    assert {row["worker"] for row in flagged} == {"teammate"}
    assert len(flagged) == len(done)
    low = token_client(admin).get("/api/decisions/", {"batch": batch.pk, "gold_below": "0.5"}).json()["results"]
    assert {row["worker"] for row in low} == {"teammate"}
    assert token_client(admin).get(f"/api/batch-quality/{batch.pk}/").json()["blocked"][0]["worker"] == "teammate"
    assert len(work(third, batch, right)) == 6  # the others carry on


def test_settings_out_of_range_name_the_field(alpha, admin, researcher):
    batch = make_batch(alpha)
    api = token_client(researcher)
    for body, field in (
        ({"gold_rate": 1.5}, "gold_rate"),
        ({"gold_rate": -0.1}, "gold_rate"),
        ({"gold_threshold": 2}, "gold_threshold"),
        ({"grant_threshold": "high"}, "grant_threshold"),
        ({"gold_min_answers": 0}, "gold_min_answers"),
        ({"auto_approve_seconds": -5}, "auto_approve_seconds"),
        ({"grants_qualification": "nope"}, "grants_qualification"),
        ({"requirements": [{"qualification": "nope", "min_score": 0.5}]}, "requirements[0].qualification"),
        ({"colour": "red"}, "colour"),
    ):
        response = api.patch(f"/api/batch-quality/{batch.pk}/", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["errors"][0]["field"] == field
    made = token_client(admin).post("/api/qualifications/", {"project": "alpha", "name": "english"}, format="json")
    qid = made.json()["id"]
    bad = api.patch(
        f"/api/batch-quality/{batch.pk}/",
        {"requirements": [{"qualification": "english", "min_score": 3}]},
        format="json",
    )
    assert bad.json()["errors"][0]["field"] == "requirements[0].min_score"
    grant = token_client(admin).post(
        f"/api/qualifications/{qid}/grant/", {"worker": "boss", "score": 1.2}, format="json"
    )
    assert grant.status_code == 400
    assert grant.json()["errors"][0]["field"] == "score"
    assert api.get(f"/api/batch-quality/{batch.pk}/").json()["gold_rate"] == 0.0  # nothing stored


def visible(worker, client, batch) -> bool:
    api_ids = [b["id"] for b in token_client(worker).get("/api/batches/").json()["results"]]
    client.force_login(worker)
    page = client.get("/work/").content.decode()
    assert (batch.pk in api_ids) == (f'data-batch="{batch.pk}"' in page)
    return batch.pk in api_ids


def test_a_batch_that_needs_a_qualification_appears_once_granted(alpha, admin, researcher, workers, client):
    api = token_client(admin)
    assert (
        token_client(researcher)
        .post("/api/qualifications/", {"project": "alpha", "name": "x"}, format="json")
        .status_code
        == 403
    )
    assert (
        token_client(workers[0])
        .post("/api/qualifications/", {"project": "alpha", "name": "x"}, format="json")
        .status_code
        == 403
    )
    qualification = api.post("/api/qualifications/", {"project": "alpha", "name": "english"}, format="json").json()
    twice = api.post("/api/qualifications/", {"project": "alpha", "name": "english"}, format="json")
    assert twice.status_code == 400
    batch = make_batch(alpha, name="needs-english")
    settings = {"requirements": [{"qualification": "english", "min_score": 0.7}]}
    assert api.patch(f"/api/batch-quality/{batch.pk}/", settings, format="json").status_code == 200
    owner, teammate, instructor = workers
    for worker in workers:
        assert not visible(worker, client, batch)
    client.force_login(owner)
    refused = client.post(f"/work/batches/{batch.pk}/accept/")
    assert refused.status_code == 403
    assert "english" in refused.content.decode()
    with pytest.raises(Forbidden, match="english"):
        forms.do_accept_next(owner, batch)
    api_refusal = token_client(owner).post(f"/api/batches/{batch.pk}/accept/")
    assert api_refusal.status_code == 403
    assert "english ≥ 0.7" in api_refusal.json()["detail"]
    grant = f"/api/qualifications/{qualification['id']}/grant/"
    assert api.post(grant, {"worker": "owner", "score": 0.9}, format="json").status_code == 200
    assert api.post(grant, {"worker": "teammate", "score": 0.5}, format="json").status_code == 200  # below 0.7
    assert api.post(grant, {"worker": "otto"}, format="json").json()["errors"][0]["field"] == "worker"
    assert token_client(researcher).post(grant, {"worker": "owner"}, format="json").status_code == 403
    assert visible(owner, client, batch)
    assert not visible(teammate, client, batch)
    assert not visible(instructor, client, batch)
    accepted = token_client(owner).post(f"/api/batches/{batch.pk}/accept/")
    assert accepted.status_code == 201
    assert accepted.json()["batch"] == batch.pk
    revoke = f"/api/qualifications/{qualification['id']}/revoke/"
    assert api.post(revoke, {"worker": "owner"}, format="json").status_code == 200
    assert not visible(owner, client, batch)
    scores = token_client(researcher).get(f"/api/qualifications/{qualification['id']}/").json()["scores"]
    assert [(s["worker"], s["score"]) for s in scores] == [("teammate", 0.5)]


def test_an_onboarding_batch_grants_the_qualification_on_gold_accuracy(alpha, admin, workers, client):
    api = token_client(admin)
    api.post("/api/qualifications/", {"project": "alpha", "name": "trained"}, format="json")
    onboarding = gold_batch(
        alpha,
        admin,
        name="onboarding",
        gold_rate=1.0,
        gold_min_answers=2,
        grants_qualification="trained",
        grant_threshold=0.8,
    )
    real = make_batch(alpha, name="real")
    settings = {"requirements": [{"qualification": "trained", "min_score": 0.8}]}
    assert api.patch(f"/api/batch-quality/{real.pk}/", settings, format="json").status_code == 200
    good, careless, slow = workers
    for worker, answer in ((good, right), (careless, wrong)):
        for _ in range(2):
            assignment = forms.do_accept_next(worker, onboarding)
            forms.do_submit(assignment.pk, answer(assignment.task))
    first = forms.do_accept_next(slow, onboarding)
    forms.do_submit(first.pk, right(first.task))
    assert visible(good, client, real)
    assert not visible(careless, client, real)
    assert not visible(slow, client, real)  # one gold answer: not yet judged
    listed = {q["name"]: q for q in api.get("/api/qualifications/", {"project__name": "alpha"}).json()["results"]}
    assert [(s["worker"], s["score"], s["source"]) for s in listed["trained"]["scores"]] == [
        ("owner", 1.0, "onboarding")
    ]


def test_a_choice_is_scored_exactly_so_the_opposite_extreme_is_not_right():
    """The official metric deletes punctuation (``-2`` == ``2``); a worker's gold score compares choices exactly."""
    from annotation.lib import agreement

    controls = agreement.template_controls(
        '<input type="radio" name="scale" value="-2"><input type="radio" name="scale" value="2">'
        '<input type="checkbox" name="tags" value="-a"><input type="checkbox" name="tags" value="a">'
    )
    assert agreement.gold_score(controls, {"scale": ["2", "2"]}, {"scale": "-2"}) == 0.0
    assert agreement.gold_score(controls, {"scale": ["2", "2"]}, {"scale": " 2 "}) == 1.0
    assert agreement.gold_score(controls, {"tags": ["a"]}, {"tags": ["-a"]}) == 0.0
    assert agreement.gold_score(controls, {"tags": ["a"]}, {"tags": ["a"]}) == 1.0


def test_a_range_answered_with_nan_scores_wrong_and_is_not_left_out():
    from annotation.lib import agreement

    controls = agreement.template_controls('<input type="range" name="level" min="0" max="10">')
    for answer in ("nan", "NaN", "inf", "-inf"):
        assert agreement.gold_score(controls, {"level": ["7"]}, {"level": answer}) == 0.0
    assert agreement.gold_score(controls, {"level": ["7"]}, {"level": "7"}) == 1.0
