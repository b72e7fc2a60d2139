"""Renamed pages and API paths keep their old paths for one release: pages answer 308 to the new path (query string,
method and body kept, so an old bookmark or an open form still works), and the API's old paths are the same endpoints
with the same checks."""

import pytest
from django.utils import timezone

from annotation.actions import forms
from annotation.models import Assignment
from tests.support.actors import make_user
from tests.support.forms_data import make_batch


@pytest.fixture
def worked(alpha, owner, teammate):
    batch = make_batch(alpha, assignments_per_task=2)
    for worker in (owner, teammate):
        assignment = forms.do_accept_next(worker, batch)
        forms.do_submit(assignment.pk, {"short": worker.username}, timezone.now())
    return batch


def test_the_old_decisions_page_redirects_with_its_query_string(client, worked, researcher):
    client.force_login(researcher)

    old = client.get(f"/work/batches/{worked.pk}/review/", {"review": "pending"})
    page = client.get(f"/work/batches/{worked.pk}/review/", {"review": "pending"}, follow=True)

    assert old.status_code == 308
    assert old["Location"] == f"/work/batches/{worked.pk}/decisions/?review=pending"
    assert page.status_code == 200
    assert "Decisions on" in page.content.decode()


def test_a_decision_posted_to_the_old_path_is_posted_again_to_the_new_one(client, worked, researcher):
    client.force_login(researcher)
    first = Assignment.objects.filter(task__batch=worked).order_by("pk").first()

    answer = client.post(
        f"/work/batches/{worked.pk}/review/decide", {"decision": "approve", "assignment": [first.pk]}, follow=True
    )

    assert answer.redirect_chain[0] == (f"/work/batches/{worked.pk}/decisions/decide", 308)
    first.refresh_from_db()
    assert first.review == "approved"


def test_old_page_paths_lead_to_the_same_checks(client, worked, alpha):
    outsider = make_user("outsider")
    client.force_login(outsider)

    for old, new in [
        (f"/work/batches/{worked.pk}/review/", f"/work/batches/{worked.pk}/decisions/"),
        ("/projects/alpha/quality/agreement/", "/projects/alpha/quality/reviewers/"),
        ("/mind2web/projects/alpha/review/", "/mind2web/projects/alpha/screening/"),
    ]:
        moved = client.get(old)
        assert (moved.status_code, moved["Location"]) == (308, new)
        assert client.get(old, follow=True).status_code == client.get(new).status_code == 404


def test_the_old_decisions_api_path_is_the_same_endpoint(worked, researcher, api_for):
    api = api_for(researcher)
    stranger = api_for(make_user("stranger"))

    old, new = api.get("/api/reviews/"), api.get("/api/decisions/")

    assert old.status_code == new.status_code == 200
    assert old.json() == new.json()
    assert old.json()["count"] == 2
    assert stranger.get("/api/reviews/").json()["count"] == stranger.get("/api/decisions/").json()["count"] == 0
    first = new.json()["results"][0]["id"]
    assert stranger.get(f"/api/reviews/{first}/").status_code == stranger.get(f"/api/decisions/{first}/").status_code
