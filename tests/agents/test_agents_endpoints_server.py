"""The review's findings on model endpoints, through the real server (uvicorn, as ``make run`` starts it) and a real
Celery worker, as a team meets them:

- a researcher who did not add an endpoint can neither point it at their own listener nor remove it (API and
  pages); annotators, reviewers and other projects cannot even see it; its owner's new URL removes the stored key
  (the page says so before and after), so a run against the new URL sends no ``Authorization`` header; an admin
  changes and removes it;
- a failed run says the status, never what answered (the listener answers a secret page);
- with private addresses not allowed, a name that resolves to loopback is refused when saved, and when a stored one
  is used the run refuses to connect (nothing reaches the model server).
Every address is on loopback; nothing leaves the machine."""

import html
import time

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection
from rest_framework.authtoken.models import Token

from annotation.models import ModelEndpoint, Role
from devtools.processes import asgi_server, celery_worker, database_url
from devtools.standin_model import standin_model
from tests.support.actors import make_user
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch
from tests.support.loopback import loopback_server
from tests.support.site_client import Client

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
KEY = "sk-owner-ONLY-FOR-THE-MODEL-4242"
SECRET = "INTERNAL-ADMIN-PAGE-SECRET-7070"
ENDPOINTS = "/api/model-endpoints/"
PAGES = "/projects/alpha/agents/endpoints/"
ANSWER = "text:modify_text('name', 'Ann')"


@pytest.fixture
def team(alpha, beta):
    people = {
        "rex": make_user("rex", alpha, Role.RESEARCHER),
        "rita": make_user("rita", alpha, Role.RESEARCHER),
        "ada": make_user("ada", alpha, Role.ADMIN),
        "rev": make_user("rev", alpha, Role.REVIEWER),
        "ann": make_user("ann", alpha, Role.ANNOTATOR),
        "olga": make_user("olga", beta, Role.RESEARCHER),
    }
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    return people


def processes_env(media_storage, tmp_path, allow_private: bool) -> dict:
    return {
        "DATABASE_URL": database_url(connection.settings_dict),
        "MEDIA_ROOT": str(media_storage),
        "EXPORT_TMP_DIR": str(tmp_path / "tmp"),
        "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1" if allow_private else "0",
    }


def signed_in(url: str, team: dict) -> dict[str, Client]:
    """Each person signed in through the sign-in form (their password hashed as the server checks it: the tests'
    fast hasher is this process's only) with an API token."""
    clients, hasher = {}, PBKDF2PasswordHasher()
    for name, user in team.items():
        user.password = hasher.encode(f"{name}-Passw0rd!", hasher.salt())
        user.save(update_fields=["password"])
        client = Client(url, name=name, token=Token.objects.create(user=user).key)
        assert client.sign_in(name, f"{name}-Passw0rd!").status == 302
        clients[name] = client
    return clients


def run_until_ended(client: Client, body: dict, timeout: float = 300) -> dict:
    """Start an agent run over HTTP and read it until it has ended (a condition, polled; never a fixed wait)."""
    started = client.post_json("/api/agent-runs/", body)
    assert started.status == 202, started.text
    path, deadline = f"/api/agent-runs/{started.json()['id']}/", time.monotonic() + timeout
    seen = client.get(path, api=True).json()
    while seen["status"] not in ("done", "failed", "cancelled"):
        assert time.monotonic() < deadline, f"the run never ended: {seen}"
        time.sleep(0.05)
        seen = client.get(path, api=True).json()
    return seen


def test_only_the_owner_or_an_admin_changes_an_endpoint_and_a_new_url_gets_no_key(team, media_storage, tmp_path):
    env = processes_env(media_storage, tmp_path, allow_private=True)
    with (
        standin_model(default=ANSWER) as model,
        loopback_server(lambda request: (404, {"Content-Type": "text/html"}, f"<h1>{SECRET}</h1>".encode())) as there,
        asgi_server(env, tmp_path / "server.log") as url,
        celery_worker(env, tmp_path / "worker.log"),
    ):
        people = signed_in(url, team)
        endpoint = {"project": "alpha", "name": "local", "url": model.url, "model": "m", "key": KEY}
        added = people["rex"].post_json(ENDPOINTS, endpoint)
        assert added.status == 201, added.text
        detail, page = f"{ENDPOINTS}{added.json()['id']}/", f"{PAGES}{added.json()['id']}/"
        listener = {"url": f"{there.url}/v1", "model": "m", "key": ""}

        # Another researcher: reads it (never the key), cannot move or remove it, on the API or the pages.
        rita = people["rita"]
        assert rita.get(detail, api=True).json()["owner"] == "rex"
        assert rita.post_json(detail, {"url": listener["url"]}, method="PATCH").status == 403
        assert rita.request("DELETE", detail, api=True).status == 403
        assert 'id="endpoint-read-only"' in rita.get(page).text
        assert rita.post(page, listener).status == 403
        assert rita.post(f"{page}delete").status == 403
        for who, status in (("rev", 403), ("ann", 403), ("olga", 404)):  # another role: 403; another project: 404
            assert people[who].post_json(detail, {"url": listener["url"]}, method="PATCH").status == status
            assert people[who].request("DELETE", detail, api=True).status == status
            assert people[who].post(page, listener).status == status
        stored = ModelEndpoint.objects.get()
        assert (stored.url, stored.key) == (model.url, KEY)
        # ... and a run of theirs with it sends the owner's key to the owner's URL only.
        llm_run = {
            "project": "alpha",
            "split": "all",
            "solver": "llm",
            "endpoint": "local",
            "instances": 1,
            "browsers": 1,
        }
        done = run_until_ended(rita, llm_run)
        assert done["status"] == "done", done["error"]
        assert {request["authorization"] for request in model.requests} == {f"Bearer {KEY}"}
        assert there.requests == []

        # The owner moves it: the page says the key goes before and that it went after; the API agrees.
        rex = people["rex"]
        assert "Changing the URL removes the stored key unless a new key is given with it." in rex.get(page).text
        moved = rex.post(page, listener)
        assert moved.status == 302
        assert "Its URL changed, so its stored key was removed" in html.unescape(rex.follow(moved).text)
        assert rex.get(detail, api=True).json()["has_key"] is False

        # A run against the new URL: no Authorization header reaches it; the run fails with the status only.
        failed = run_until_ended(rita, llm_run)
        assert failed["status"] == "failed"
        assert failed["error"] == f"the endpoint {there.url}/v1 refused the request (HTTP 404)"
        assert [request.headers.get("Authorization") for request in there.requests] == [None]
        run_page = rita.get(f"/agents/runs/{failed['id']}/").text
        assert "refused the request (HTTP 404)" in run_page
        for text in (run_page, rita.get(f"/api/agent-runs/{failed['id']}/", api=True).text):
            assert SECRET not in text
            assert KEY not in text

        # An admin of the project changes and removes it.
        ada = people["ada"]
        back = ada.post_json(detail, {"url": model.url, "key": "sk-ada-own"}, method="PATCH")
        assert back.status == 200, back.text
        assert back.json()["has_key"] is True
        assert ada.request("DELETE", detail, api=True).status == 204
        assert not ModelEndpoint.objects.exists()
    assert KEY not in (tmp_path / "worker.log").read_text(errors="replace")
    assert SECRET not in (tmp_path / "worker.log").read_text(errors="replace")


def test_without_private_addresses_loopback_is_refused_when_saved_and_when_a_run_connects(
    team, alpha, media_storage, tmp_path
):
    env = processes_env(media_storage, tmp_path, allow_private=False)
    with (
        standin_model(default=ANSWER) as model,
        asgi_server(env, tmp_path / "server.log") as url,
        celery_worker(env, tmp_path / "worker.log"),
    ):
        people = signed_in(url, {"rex": team["rex"]})
        by_name = model.url.replace("127.0.0.1", "localhost")
        for where in (by_name, model.url):
            endpoint = {"project": "alpha", "name": "local", "url": where, "model": "m", "key": KEY}
            refused = people["rex"].post_json(ENDPOINTS, endpoint)
            assert refused.status == 400
            assert refused.json()["errors"][0]["field"] == "url"
            assert "is or resolves to a loopback address" in refused.json()["detail"]
        # One saved before (while allowed, or resolving elsewhere then): the worker checks where it connects.
        ModelEndpoint.objects.create(project=alpha, owner=team["rex"], name="local", url=by_name, model="m", key=KEY)
        llm_run = {
            "project": "alpha",
            "split": "all",
            "solver": "llm",
            "endpoint": "local",
            "instances": 1,
            "browsers": 1,
        }
        failed = run_until_ended(people["rex"], llm_run)
    assert failed["status"] == "failed"
    assert failed["error"] == (
        f"the endpoint {by_name} was not contacted: its host is or resolves to a loopback address, which model "
        "endpoints may not reach here"
    )
    assert model.answered() == 0
