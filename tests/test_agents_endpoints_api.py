"""Model endpoints through the API (``/api/model-endpoints/``): researchers and admins of the project add, change,
list and remove them; bad settings answer 400 naming the field; the key is write-only, never shown back."""

import pytest

from annotation.models import ModelEndpoint, Role
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
ENDPOINTS = "/api/model-endpoints/"
KEY = "sk-endpoint-SECRET-987654321"


def body(**changes):
    return {
        "project": "alpha",
        "name": "local",
        "url": "http://127.0.0.1:8151/v1",
        "model": "qwen",
        "key": KEY,
        **changes,
    }


def test_a_researcher_adds_an_endpoint_whose_key_is_never_shown_back(researcher, api_for, alpha):
    client = api_for(researcher)
    created = client.post(ENDPOINTS, body(), format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["has_key"] is True
    assert "key" not in created.json()
    assert KEY not in created.content.decode()
    endpoint_id = created.json()["id"]
    for response in (client.get(ENDPOINTS), client.get(f"{ENDPOINTS}{endpoint_id}/")):
        assert response.status_code == 200
        assert KEY not in response.content.decode()
    assert ModelEndpoint.objects.get(pk=endpoint_id).key == KEY
    changed = client.patch(f"{ENDPOINTS}{endpoint_id}/", {"model": "llama", "key": "sk-new"}, format="json")
    assert changed.status_code == 200
    assert changed.json()["model"] == "llama"
    assert "sk-new" not in changed.content.decode()
    assert ModelEndpoint.objects.get(pk=endpoint_id).key == "sk-new"
    kept = client.patch(f"{ENDPOINTS}{endpoint_id}/", {"vision": True}, format="json")
    assert kept.json()["vision"] is True
    assert ModelEndpoint.objects.get(pk=endpoint_id).key == "sk-new"
    assert client.post(ENDPOINTS, body(), format="json").status_code == 409
    assert client.delete(f"{ENDPOINTS}{endpoint_id}/").status_code == 204
    assert not ModelEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"url": "ftp://127.0.0.1/v1"}, "url", "expected an http:// or https:// URL with a host"),
        ({"url": "http:///v1"}, "url", "expected an http:// or https:// URL with a host"),
        ({"url": "http://user:pw@127.0.0.1/v1"}, "url", "put the key in the key setting"),
        ({"model": ""}, "model", "may not be blank"),
        ({"name": "no spaces"}, "name", "letters, numbers, underscores or hyphens"),
        ({"vision": "maybe"}, "vision", "valid boolean"),
    ],
)
def test_bad_settings_are_a_400_naming_the_field_and_store_nothing(researcher, api_for, alpha, changes, field, message):
    response = api_for(researcher).post(ENDPOINTS, body(**changes), format="json")
    assert response.status_code == 400, response.json()
    assert field in [error["field"] for error in response.json()["errors"]]
    assert message in response.json()["detail"]
    assert KEY not in response.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_annotators_and_other_projects_neither_see_nor_add_endpoints(researcher, api_for, alpha, outsider):
    api_for(researcher).post(ENDPOINTS, body(), format="json")
    annotator = make_user("annotator2", alpha, Role.ANNOTATOR)
    assert api_for(annotator).post(ENDPOINTS, body(name="other"), format="json").status_code == 403
    assert api_for(annotator).get(ENDPOINTS).json()["results"] == []
    assert api_for(outsider).post(ENDPOINTS, body(name="other"), format="json").status_code == 404
    endpoint_id = ModelEndpoint.objects.get().pk
    assert api_for(outsider).get(f"{ENDPOINTS}{endpoint_id}/").status_code == 404
    assert api_for(outsider).delete(f"{ENDPOINTS}{endpoint_id}/").status_code == 404
    assert ModelEndpoint.objects.count() == 1
