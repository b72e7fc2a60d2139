"""Errors that tell the caller what to do: another Authorization scheme than ``Token``, filter values that can
match nothing (a typo), and the app's styled 403 / 404 / 500 pages (JSON under /api/)."""

import pytest
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.request import Request
from rest_framework.test import APIClient

from annotation.models import ExportJob
from annotation.views import errors as error_views
from api.auth import TokenAuthentication
from config.body_guard import CHECKED_TOKEN
from tests.support.actors import make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("header", ["Bearer abc123", "Basic b3duZXI6cHc=", "token-without-scheme"])
def test_another_authorization_scheme_is_a_401_naming_the_right_one(owner, header):
    response = APIClient(HTTP_AUTHORIZATION=header).get("/api/projects/")
    assert response.status_code == 401
    assert "use `Authorization: Token <key>`" in response.json()["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_the_token_the_body_guard_checked_is_not_read_again(owner, django_assert_num_queries):
    """The ASGI body guard found the token (with its active user) for this request: the API takes it from the scope
    instead of a second query; a scope holding another key is ignored."""
    token = Token.objects.create(user=owner)
    other = Token.objects.create(user=make_user("other"))
    auth = TokenAuthentication()

    def request_with(checked):
        django_request = RequestFactory().post("/api/recordings/", HTTP_AUTHORIZATION=f"Token {token.key}")
        django_request.scope = {CHECKED_TOKEN: checked}
        return Request(django_request)

    with django_assert_num_queries(0):
        assert auth.authenticate(request_with(token)) == (owner, token)
    with django_assert_num_queries(1):
        user, found = auth.authenticate(request_with(other))
    assert (user, found) == (owner, token)


def test_a_wrong_token_still_says_the_token_is_invalid(owner):
    response = APIClient(HTTP_AUTHORIZATION="Token nope").get("/api/projects/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/demonstrations/?split=tset", "split"),
        ("/api/demonstrations/?scheme=mind2web&split=valid", "split"),  # a WebLINX split under Mind2Web
        ("/api/demonstrations/?project__name=sampel", "project__name"),
        ("/api/recordings/?project__name=sampel", "project__name"),
        ("/api/exports/?project__name=beta", "project__name"),  # exists, but not one of yours
        ("/api/demonstrations/?status=bogus", "status"),
        ("/api/recordings/?status=bogus", "status"),
        ("/api/exports/?status=bogus", "status"),
        ("/api/demonstrations/?project__name=Z%00Q&status=validated", "project__name"),  # NUL: 400, not a 500
        ("/api/recordings/?split=a%00", "split"),
    ],
)
def test_unknown_filter_values_are_a_400_naming_the_parameter(researcher, beta, api_for, path, field):
    response = api_for(researcher).get(path)
    assert response.status_code == 400, response.content
    assert [error["field"] for error in response.json()["errors"]] == [field]


def test_known_filter_values_still_filter(researcher, alpha, api_for):
    ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    listed = api_for(researcher).get("/api/exports/?project__name=alpha&status=queued")
    assert listed.status_code == 200
    assert listed.json()["count"] == 1
    assert api_for(researcher).get("/api/demonstrations/?split=train").status_code == 200


def list_paths() -> list[str]:
    from api.urls import router

    return [f"/api/{prefix}/" for prefix, _, _ in router.registry]


@pytest.mark.parametrize("path", list_paths())
def test_every_list_answers_the_browsable_apis_own_format_links(researcher, alpha, api_for, path):
    """``?format=json`` and ``?format=api`` are the links the browsable API shows on every page: they choose the
    answer's format and are never read as a filter (the job's format filter is ``job_format``)."""
    ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    client = api_for(researcher)
    as_json = client.get(f"{path}?format=json")
    assert as_json.status_code == 200, as_json.content
    assert as_json["Content-Type"] == "application/json"
    browsable = client.get(f"{path}?format=api")
    assert browsable.status_code == 200, browsable.content[:500]
    assert browsable["Content-Type"].startswith("text/html")


def test_jobs_are_filtered_by_their_format_as_job_format(researcher, alpha, api_for):
    ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    client = api_for(researcher)
    assert client.get("/api/exports/?job_format=weblinx").json()["count"] == 1
    assert client.get("/api/exports/?job_format=mind2web&format=json").json()["count"] == 0
    refused = client.get("/api/evaluations/?job_format=rouge")
    assert refused.status_code == 400
    assert [error["field"] for error in refused.json()["errors"]] == ["job_format"]


def test_a_403_page_is_the_apps_styled_page(owner, alpha):
    client = Client()
    client.force_login(owner)
    response = client.get("/projects/alpha/members/")
    assert response.status_code == 403
    assert 'data-status="403"' in response.text
    assert "needs admin" in response.text


def test_the_500_page_renders_without_a_request_context():
    request = RequestFactory().get("/review/")
    response = error_views.server_error(request)
    assert response.status_code == 500
    assert 'data-status="500"' in response.content.decode()
    api = error_views.server_error(RequestFactory().get("/api/projects/"))
    assert (api.status_code, api["Content-Type"]) == (500, "application/json")


@pytest.mark.parametrize(
    "path",
    ["/api/projects/alpha/splits.json", "/api/projects/alpha.json", "/api/exports.json", "/api/batches/1/stats.api"],
)
def test_a_format_suffix_is_no_route_of_the_api(owner, api_for, path):
    """``.json`` after a path is not a way to ask for a renderer (it made every ``@action`` a 500): an unknown path."""
    response = api_for(owner).get(path)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "module",
    ["api.errors", "api.parsers", "api.auth", "api.filters", "api.pagination", "api.schema", "api.serializers"],
)
def test_each_module_the_rest_framework_settings_name_imports_first_in_a_fresh_process(module, tmp_path):
    """DRF imports these by name when its ``APIView`` is defined, which the import-linter contracts cannot see: a
    module importing ``api.errors`` before anything else failed (errors → DRF views → the parser setting → errors)."""
    from tests.support.processes import run_python

    imported = run_python(f"import django; django.setup(); import {module}", tmp_path, DEBUG="1")

    assert imported.returncode == 0, imported.stderr


def test_nested_field_errors_are_named_by_their_path_not_printed_as_python():
    from rest_framework.exceptions import ErrorDetail

    from api.errors import field_errors

    nested = {
        "workers": {0: [ErrorDetail("Ensure this field has no more than 150 characters.", "max_length")]},
        "filter": {"batch": [ErrorDetail("This field is required.", "required")]},
        "name": [ErrorDetail("bad", "invalid")],
    }

    assert field_errors(nested) == [
        {"field": "workers[0]", "message": "Ensure this field has no more than 150 characters."},
        {"field": "filter.batch", "message": "This field is required."},
        {"field": "name", "message": "bad"},
    ]
