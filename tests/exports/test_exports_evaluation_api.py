"""Creating evaluations through the API: validation and permissions (scoring itself: test_export_worker)."""

import pytest

from annotation.models import Evaluation


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


def post(client, **fields):
    body = {
        "project": "alpha",
        "format": "weblinx",
        "split": "test_iid",
        "predictions": [{"demo_name": "abcdefg", "turn_index": 1, "output_predicted": 'click(uid="u")'}],
    }
    return client.post("/api/evaluations/", {**body, **fields}, format="json")


def test_an_evaluation_is_queued_and_enqueued_after_commit(client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post(client)

    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    assert len(callbacks) == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"format": "rouge"}, "format"),
        ({"split": "test_task"}, "split"),  # a Mind2Web split asked of the WebLINX format
        ({"predictions": []}, "predictions"),
        ({"predictions": {"demo_name": "x"}}, "predictions"),
    ],
)
def test_bad_evaluation_requests_name_the_field(client, fields, field):
    response = post(client, **fields)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert not Evaluation.objects.exists()


def test_only_researchers_and_admins_evaluate(owner, outsider, api_for):
    assert post(api_for(owner)).status_code == 403
    assert post(api_for(outsider)).status_code == 404


def test_a_split_filter_no_evaluation_of_yours_can_have_is_a_400_naming_it(client):
    assert post(client).status_code == 202
    assert client.get("/api/evaluations/", {"split": "test_iid"}).json()["count"] == 1
    assert client.get("/api/evaluations/", {"split": "test_website"}).json()["count"] == 0
    assert client.get("/api/evaluations/", {"split": "all"}).status_code == 200  # a form-task split of the project
    refused = client.get("/api/evaluations/", {"split": "zzz"})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "split"
    assert "'zzz'" in refused.json()["detail"]
    assert "test_iid" in refused.json()["detail"]
