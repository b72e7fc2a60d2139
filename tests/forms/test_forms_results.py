"""The Turkle results CSV, byte for byte against a hand-written file, through the API and the download; and the
batch statistics API."""

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.actions import forms
from annotation.models import Batch, Membership, Project, Role
from tests.support.actors import token_client
from tests.support.forms_data import make_batch

EXPECTED = Path(__file__).parents[1] / "fixtures" / "form_results_expected.csv"
UTC = dt.UTC


def at(hour, minute, second, micro=0):
    return dt.datetime(2024, 3, 5, hour, minute, second, micro, tzinfo=UTC)


@pytest.fixture
def worked_batch():
    """Ids start at 1 (reset sequences): project 1, users ann=1 and bob=2, batch 1, tasks 1-3, assignments 1-4."""
    project = Project.objects.create(name="alpha")
    users = get_user_model().objects
    ann, bob = users.create_user("ann"), users.create_user("bob")
    for user in (ann, bob):
        Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    batch = make_batch(project, assignments_per_task=2, allotted_seconds=600)
    Batch.objects.filter(pk=batch.pk).update(created_at=at(14, 3, 11))
    batch.refresh_from_db()
    first = forms.do_accept_next(ann, batch, at(15, 0, 0))
    answers = {
        "short": 'Rainy, "wet"',
        "tags": ["a", "c"],
        "level": "low",
        "polarity": "pos",
        "score": "7",
        "long": "line1\r\nline2",
    }
    forms.do_submit(first.pk, answers, at(15, 0, 42, 700_000))
    second = forms.do_accept_next(bob, batch, at(15, 1, 0))
    forms.do_submit(second.pk, {"short": "x", "tags": "b", "polarity": "neg"}, at(15, 3, 5))
    forms.do_return(forms.do_accept_next(ann, batch, at(15, 5, 0)), at(15, 5, 30))
    fourth = forms.do_accept_next(ann, batch, at(15, 6, 0))
    forms.do_submit(fourth.pk, {"short": "ünïcödé", "level": "high"}, at(15, 6, 9))
    return batch, ann


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_results_csv_is_byte_exact(worked_batch):
    batch, _ = worked_batch
    researcher = get_user_model().objects.create_user("res")
    Membership.objects.create(project=batch.project, user=researcher, role=Role.RESEARCHER)
    response = token_client(researcher).get(f"/api/batches/{batch.pk}/results/", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="Project-1_Batch-1-questions_results.csv"'
    assert b"".join(response.streaming_content) == EXPECTED.read_bytes()
    client = Client()
    client.force_login(researcher)
    download = client.get(f"/work/batches/{batch.pk}/results.csv")
    assert b"".join(download.streaming_content) == EXPECTED.read_bytes()


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_batch_statistics_through_the_api(worked_batch):
    batch, ann = worked_batch
    reviewer = get_user_model().objects.create_user("rev")
    Membership.objects.create(project=batch.project, user=reviewer, role=Role.REVIEWER)
    stats = token_client(reviewer).get(f"/api/batches/{batch.pk}/stats/").json()
    assert stats["tasks_total"] == 3
    assert stats["tasks_done"] == 1
    assert stats["assignments"] == {"active": 0, "submitted": 3, "returned": 1, "skipped": 0, "expired": 0}
    assert stats["work_seconds_median"] == 42.7
    ann_stats = next(w for w in stats["workers"] if w["username"] == "ann")
    assert ann_stats["submitted"] == 2
    assert ann_stats["returned"] == 1
    assert ann_stats["work_seconds_total"] == 51.7
    assert token_client(ann).get(f"/api/batches/{batch.pk}/stats/").status_code == 403
    listed = token_client(ann).get("/api/batches/").json()["results"]
    assert [b["tasks_done"] for b in listed] == [1]


def test_an_empty_batch_has_a_results_header_only(alpha, researcher, api_for):
    batch = make_batch(alpha)
    body = b"".join(api_for(researcher).get(f"/api/batches/{batch.pk}/results/").streaming_content)
    assert body.startswith(b'"HITId","HITTypeId","Title"')
    assert body.endswith(b'"RequesterFeedback","Turkle.Username","Approve","Reject"\r\n')


def test_assignments_api_shows_workers_their_own_and_managers_all(alpha, owner, teammate, researcher, api_for):
    batch = make_batch(alpha, assignments_per_task=2)
    mine = forms.do_accept_next(owner, batch)
    forms.do_accept_next(teammate, batch)
    own = api_for(owner).get("/api/assignments/").json()
    assert [a["id"] for a in own["results"]] == [mine.pk]
    everyone = api_for(researcher).get(f"/api/assignments/?task__batch={batch.pk}").json()
    assert everyone["count"] == 2
    assert {a["worker"] for a in everyone["results"]} == {"owner", "teammate"}


def test_managers_change_batch_settings_and_workers_cannot(alpha, owner, researcher, api_for):
    batch = make_batch(alpha)
    url = f"/api/batches/{batch.pk}/"
    assert api_for(owner).patch(url, {"published": False}, format="json").status_code == 403
    changed = api_for(researcher).patch(url, {"published": False, "workers": ["owner"]}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["published"] is False
    assert changed.json()["workers"] == ["owner"]
    assert api_for(owner).get(url).status_code == 404  # unpublished: not among the owner's batches any more
    assert api_for(researcher).patch(url, {"assignments_per_task": 0}, format="json").status_code == 400
    other = make_batch(alpha, name="other")
    clash = api_for(researcher).patch(f"/api/batches/{other.pk}/", {"name": "questions"}, format="json")
    assert clash.status_code == 409


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["text/csv", "*/*"])
def test_a_refused_results_download_is_the_apis_json_error(worked_batch, accept):
    """A worker may not read the results: 403 in the API's JSON error shape, labelled JSON (not text/csv)."""
    batch, ann = worked_batch
    response = token_client(ann).get(f"/api/batches/{batch.pk}/results/", HTTP_ACCEPT=accept)
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "forbidden"
