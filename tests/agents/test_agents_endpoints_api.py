"""Model endpoints through the API (``/api/model-endpoints/``): researchers and admins of the project add, list and
use them; only the one who added an endpoint or a project admin changes or removes it (another researcher gets 403,
other roles and projects 404); a new URL removes the stored key unless a key comes with it; bad settings answer 400
naming the field; the key is write-only, never shown back. These endpoints are on loopback, which the platform
allows only with ``MODEL_ENDPOINTS_ALLOW_PRIVATE`` (on here; refusals: ``test_agents_endpoint_addresses.py``)."""

import pytest

from annotation.models import AgentRun, ModelEndpoint, Role
from tests.support.actors import make_user
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch

pytestmark = pytest.mark.django_db
ENDPOINTS = "/api/model-endpoints/"
KEY = "sk-endpoint-SECRET-987654321"


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True


def body(**changes):
    return {
        "project": "alpha",
        "name": "local",
        "url": "http://127.0.0.1:8151/v1",
        "model": "qwen",
        "key": KEY,
        **changes,
    }


@pytest.fixture
def team(alpha, beta):
    """Two researchers (rex adds the endpoints), an admin, a reviewer and an annotator of alpha, someone of beta."""
    return {
        "rex": make_user("rex", alpha, Role.RESEARCHER),
        "rita": make_user("rita", alpha, Role.RESEARCHER),
        "ada": make_user("ada", alpha, Role.ADMIN),
        "rev": make_user("rev", alpha, Role.REVIEWER),
        "ann": make_user("ann", alpha, Role.ANNOTATOR),
        "olga": make_user("olga", beta, Role.RESEARCHER),
    }


def add(api, **changes) -> dict:
    created = api.post(ENDPOINTS, body(**changes), format="json")
    assert created.status_code == 201, created.json()
    return created.json()


def test_a_researcher_adds_an_endpoint_whose_key_is_never_shown_back(researcher, api_for, alpha):
    client = api_for(researcher)
    created = client.post(ENDPOINTS, body(), format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["has_key"] is True
    assert created.json()["owner"] == "researcher"
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


def test_another_researcher_reads_and_uses_an_endpoint_but_cannot_change_or_remove_it(
    team, alpha, api_for, django_capture_on_commit_callbacks
):
    """The review's finding: a researcher who does not own an endpoint pointed it at their own listener and started
    a run, so the stored key went there; or removed it."""
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS))
    rex, rita = api_for(team["rex"]), api_for(team["rita"])
    endpoint = add(rex)
    detail = f"{ENDPOINTS}{endpoint['id']}/"
    assert rita.get(detail).json()["owner"] == "rex"
    assert KEY not in rita.get(ENDPOINTS).content.decode()
    for change in ({"url": "http://127.0.0.1:9999/v1"}, {"model": "other"}, {"key": "sk-rita"}, {"vision": True}):
        refused = rita.patch(detail, change, format="json")
        assert refused.status_code == 403, refused.json()
        assert "only the one who added model endpoint 'local' (rex) or an admin" in refused.json()["detail"]
    assert rita.patch(detail, {"url": "not a url"}, format="json").status_code == 403  # refused before reading it
    assert rita.delete(detail).status_code == 403
    stored = ModelEndpoint.objects.get()
    assert (stored.url, stored.model, stored.key, stored.vision) == ("http://127.0.0.1:8151/v1", "qwen", KEY, False)
    # Using it is every researcher's: a run of rita's with rex's endpoint.
    run = {"project": "alpha", "split": "all", "solver": "llm", "endpoint": "local", "instances": 1}
    with django_capture_on_commit_callbacks(execute=False):
        started = rita.post("/api/agent-runs/", run, format="json")
    assert started.status_code == 202, started.json()
    assert AgentRun.objects.get().owner == team["rita"]


def test_an_admin_of_the_project_changes_and_removes_anyones_endpoint(team, api_for):
    rex, ada = api_for(team["rex"]), api_for(team["ada"])
    first, second = add(rex), add(rex, name="second")
    changed = ada.patch(f"{ENDPOINTS}{first['id']}/", {"model": "llama", "key": "sk-admin"}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["owner"] == "rex"  # the owner stays
    assert ModelEndpoint.objects.get(pk=first["id"]).key == "sk-admin"
    assert ada.delete(f"{ENDPOINTS}{second['id']}/").status_code == 204
    assert list(ModelEndpoint.objects.values_list("name", flat=True)) == ["local"]


@pytest.mark.parametrize("who", ["rev", "ann", "olga"])
def test_reviewers_annotators_and_other_projects_neither_see_change_nor_remove_an_endpoint(team, api_for, who):
    endpoint = add(api_for(team["rex"]))
    other = api_for(team[who])
    detail = f"{ENDPOINTS}{endpoint['id']}/"
    assert other.get(ENDPOINTS).json()["results"] == []
    refused = 404 if who == "olga" else 403  # another role of the project is told who may (docs/api.md)
    assert other.get(detail).status_code == refused
    assert other.patch(detail, {"url": "http://127.0.0.1:9999/v1"}, format="json").status_code == refused
    assert other.delete(detail).status_code == refused
    assert other.post(ENDPOINTS, body(name="mine"), format="json").status_code == refused
    assert "sk-" not in other.get(detail).content.decode()
    stored = ModelEndpoint.objects.get()
    assert (stored.url, stored.key) == ("http://127.0.0.1:8151/v1", KEY)


@pytest.mark.parametrize("who", ["rex", "ada"])
def test_a_new_url_removes_the_stored_key_unless_a_key_comes_with_it(team, api_for, who):
    client = api_for(team[who])
    endpoint = add(api_for(team["rex"]))
    detail = f"{ENDPOINTS}{endpoint['id']}/"
    same = client.patch(detail, {"url": "http://127.0.0.1:8151/v1", "model": "m2"}, format="json")
    assert same.json()["has_key"] is True  # the same URL: the key stays
    moved = client.patch(detail, {"url": "http://127.0.0.1:8152/v1"}, format="json")
    assert moved.status_code == 200
    assert moved.json()["has_key"] is False
    assert ModelEndpoint.objects.get().key == ""
    again = client.patch(detail, {"url": "http://127.0.0.1:8153/v1", "key": "sk-for-8153"}, format="json")
    assert again.json()["has_key"] is True
    assert ModelEndpoint.objects.get().key == "sk-for-8153"
    schema = client.get("/api/schema/", {"format": "json"}).json()
    change = schema["components"]["schemas"]["PatchedModelEndpointChangeRequest"]["properties"]["url"]
    assert "Changing the URL removes the stored key unless a new key is given with it." in change["description"]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"url": "ftp://127.0.0.1/v1"}, "url", "expected an http:// or https:// URL with a host"),
        ({"url": "http:///v1"}, "url", "expected an http:// or https:// URL with a host"),
        ({"url": "http://user:pw@127.0.0.1/v1"}, "url", "put the key in the key setting"),
        ({"url": "http://127.0.0.1/v1?api_key=TOPSECRET"}, "url", "not in the URL (its 'api_key' parameter)"),
        ({"url": "http://127.0.0.1/v1#access_token=TOPSECRET"}, "url", "not in the URL (its 'access_token' parameter)"),
        ({"url": "http://127.0.0.1:99999/v1"}, "url", "the port must be a number from 0 to 65535"),
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


def test_an_unknown_field_is_a_400_naming_it_so_a_mistyped_key_never_quietly_stores_none(researcher, api_for, alpha):
    client = api_for(researcher)
    typo = {**body(), "kee": "typo-key-12345678"}
    del typo["key"]
    refused = client.post(ENDPOINTS, typo, format="json")
    assert refused.status_code == 400, refused.json()
    assert refused.json()["errors"] == [{"field": "kee", "message": "unknown field; allowed: " + ALLOWED}]
    assert not ModelEndpoint.objects.exists()
    endpoint = add(client)
    changed = client.patch(f"{ENDPOINTS}{endpoint['id']}/", {"kee": "typo", "vision": "maybe"}, format="json")
    assert changed.status_code == 400
    assert sorted(error["field"] for error in changed.json()["errors"]) == ["kee", "vision"]
    assert ModelEndpoint.objects.get().key == KEY


ALLOWED = "key, model, name, project, url, vision"


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://]x/v1", "http://[fe80::1%25eth0/v1"])
def test_a_url_that_cannot_be_read_is_a_400_naming_it(researcher, api_for, url):
    client = api_for(researcher)
    created = client.post(ENDPOINTS, body(url=url), format="json")
    assert created.status_code == 400
    assert created.json()["errors"][0]["field"] == "url"
    endpoint = add(client)
    changed = client.patch(f"{ENDPOINTS}{endpoint['id']}/", {"url": url}, format="json")
    assert changed.status_code == 400
    assert changed.json()["errors"][0]["field"] == "url"
