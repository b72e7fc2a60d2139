"""Model endpoints confined to public addresses (``MODEL_ENDPOINTS_ALLOW_PRIVATE`` off, the default): a URL whose host
is, or resolves to, a loopback, private, link-local, unspecified, multicast, reserved or other non-global address is
a 400 naming ``url`` and the class of address when an endpoint is added or changed, through the API and the pages,
and nothing is stored; with the setting on they are allowed. Only literals and ``localhost`` (resolved from the
hosts file): nothing leaves the machine."""

import pytest
from django.test import Client

from annotation.models import ModelEndpoint, Role
from tests.support.actors import make_user

pytestmark = pytest.mark.django_db
ENDPOINTS = "/api/model-endpoints/"
PAGES = "/projects/alpha/agents/endpoints/"
KEY = "sk-address-SECRET-1"

REFUSED = [
    ("http://127.0.0.1:8000/v1", "a loopback address"),
    ("http://[::1]:8000/v1", "a loopback address"),
    ("http://localhost:8000/v1", "a loopback address"),
    ("http://LocalHost:8000/v1", "a loopback address"),
    ("http://[::ffff:127.0.0.1]/v1", "a loopback address"),
    ("http://[2002:7f00:1::]/v1", "a loopback address"),
    ("http://[2002:a9fe:a9fe::]/v1", "a link-local address"),
    ("http://2130706433/v1", "a loopback address"),
    ("http://0177.0.0.1/v1", "a loopback address"),
    ("http://0x7f000001/v1", "a loopback address"),
    ("http://127.1/v1", "a loopback address"),
    ("http://10.0.0.5/v1", "a private address"),
    ("http://172.16.3.4/v1", "a private address"),
    ("http://192.168.0.10:8000/v1", "a private address"),
    ("https://[fc00::1]/v1", "a private address"),
    ("http://169.254.169.254/latest", "a link-local address"),
    ("http://[fe80::1]/v1", "a link-local address"),
    ("http://0.0.0.0:8000/v1", "an unspecified address"),
    ("http://[::]/v1", "an unspecified address"),
    ("http://224.0.0.1/v1", "a multicast address"),
    ("http://240.0.0.1/v1", "a reserved address"),
    ("http://100.64.0.1/v1", "a special-purpose (non-global) address"),
]


@pytest.fixture
def team(alpha):
    return {"rex": make_user("rex", alpha, Role.RESEARCHER), "ada": make_user("ada", alpha, Role.ADMIN)}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_a_non_global_address_is_refused_when_an_endpoint_is_added_naming_its_class(team, api_for, url, kind):
    body = {"project": "alpha", "name": "local", "url": url, "model": "m", "key": KEY}
    response = api_for(team["rex"]).post(ENDPOINTS, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"][0]["field"] == "url"
    message = response.json()["errors"][0]["message"]
    assert f"is or resolves to {kind}; model endpoints may only reach public addresses here" in message
    assert "MODEL_ENDPOINTS_ALLOW_PRIVATE" in message
    page = browser(team["rex"]).post(PAGES, {"name": "local", "url": url, "model": "m", "key": KEY})
    assert page.status_code == 400
    errors = page.content.decode().split('id="id_url"', 1)[1].split("</label>", 1)[0]
    assert kind in errors
    assert KEY not in page.content.decode()
    assert not ModelEndpoint.objects.exists()


@pytest.mark.parametrize(("url", "kind"), REFUSED[::3])
def test_a_non_global_address_is_refused_when_an_endpoint_is_changed(team, alpha, api_for, url, kind):
    # saved while private addresses were allowed, and changed now that they are not
    endpoint = ModelEndpoint.objects.create(
        project=alpha, owner=team["rex"], name="e", url="http://127.0.0.1:1/v1", model="m", key=KEY
    )
    for who in ("rex", "ada"):
        response = api_for(team[who]).patch(f"{ENDPOINTS}{endpoint.pk}/", {"url": url}, format="json")
        assert response.status_code == 400, response.json()
        assert kind in response.json()["errors"][0]["message"]
        page = browser(team[who]).post(f"{PAGES}{endpoint.pk}/", {"url": url, "model": "m"})
        assert page.status_code == 400
        assert kind in page.content.decode().split('id="id_url"', 1)[1].split("</label>", 1)[0]
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.key) == ("http://127.0.0.1:1/v1", KEY)  # the refused change changed nothing


@pytest.mark.parametrize(("url", "kind"), REFUSED[::2])
def test_with_the_setting_on_local_addresses_are_allowed(team, api_for, settings, url, kind):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True
    body = {"project": "alpha", "name": "local", "url": url, "model": "m", "key": KEY}
    assert api_for(team["rex"]).post(ENDPOINTS, body, format="json").status_code == 201
    assert browser(team["ada"]).post(PAGES, {**body, "name": "page"}).status_code == 302
    assert ModelEndpoint.objects.count() == 2
