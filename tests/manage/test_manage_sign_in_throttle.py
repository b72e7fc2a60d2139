"""Sign-in throttling: 10 failed sign-ins of a username from one address within 5 minutes, and that pair is
refused with 429 and ``Retry-After`` on the sign-in page, the admin's and ``POST /api/auth/token/``, counted in the
real cache (Redis when ``REDIS_URL`` is set). Other addresses and other usernames are unaffected; every spelling of a
name that reaches one account (fullwidth, mathematical letters, another case) counts as that name."""

import contextlib
import json
import time
import urllib.error
import urllib.request

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from annotation.actions.manage.signin import do_forget_sign_in_failures, failure_key, sign_in_name
from devtools.processes import asgi_server, database_url
from tests.support.actors import server_password
from tests.support.site_client import Client as SiteClient

ATTACKER, FRIEND, LOOPBACK = "203.0.113.7", "198.51.100.20", "127.0.0.1"
PASSWORD = "owner-Passw0rd!"


@pytest.fixture(autouse=True)
def forget_failures():
    """The cache outlives a test (Redis): leave no count behind for later tests."""
    yield
    for username in ("owner", "teammate"):
        for address in (ATTACKER, FRIEND, LOOPBACK):
            do_forget_sign_in_failures(username, address)


def sign_in_page(username, password, address=ATTACKER, path="/accounts/login/"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


def token(username, password, address=ATTACKER):
    body = {"username": username, "password": password}
    return APIClient(REMOTE_ADDR=address).post("/api/auth/token/", body, format="json")


def test_the_eleventh_attempt_after_ten_failures_is_refused_even_with_the_right_password(owner, teammate):
    for _ in range(10):
        assert sign_in_page("owner", "wrong").status_code == 200  # the form again, with its error

    refused = sign_in_page("owner", PASSWORD)

    assert refused.status_code == 429
    assert 240 <= int(refused["Retry-After"]) <= 300
    assert "Too many failed sign-ins" in refused.text
    assert "sessionid" not in refused.cookies
    assert token("owner", PASSWORD).status_code == 429
    assert sign_in_page("owner", PASSWORD, path="/admin/login/").status_code == 429
    # Someone else at another address, and another username from the same address, still sign in.
    assert sign_in_page("owner", PASSWORD, address=FRIEND).status_code == 302
    assert sign_in_page("teammate", "teammate-Passw0rd!").status_code == 302


def test_token_sign_in_failures_count_and_the_refusal_says_when_to_retry(owner):
    for _ in range(10):
        assert token("owner", "wrong").status_code == 400

    refused = token("owner", PASSWORD)

    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    assert "try again in" in refused.json()["detail"]
    assert int(refused["Retry-After"]) > 0
    assert sign_in_page("OWNER", PASSWORD).status_code == 429  # the username's case does not matter


def test_a_success_before_the_limit_clears_the_count(owner):
    for _ in range(9):
        sign_in_page("owner", "wrong")
    assert sign_in_page("owner", PASSWORD).status_code == 302

    for _ in range(9):
        sign_in_page("owner", "wrong")

    assert sign_in_page("owner", PASSWORD).status_code == 302


def test_the_refusal_ends_with_the_window(owner, settings):
    # 20 s: eleven sign-ins fit inside it on a loaded machine (5 s did not: under two CPU hogs and three test
    # processes they took 7.5 s, and the window had ended before the eleventh)
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 20
    for _ in range(10):
        token("owner", "wrong")
    assert token("owner", "wrong").status_code == 429

    deadline = time.monotonic() + 60
    while (answer := token("owner", PASSWORD)).status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.1)  # the cache entries expire on their own

    assert answer.status_code == 200


# --- Through the real server: who may say where a request came from -------------------------------------------


def token_over_http(url: str, password: str, forwarded_for: str | None = None, username: str = "owner") -> int:
    """``POST /api/auth/token/`` for ``username`` to the real server from loopback; the status."""
    headers = {"Content-Type": "application/json"}
    if forwarded_for is not None:
        headers["X-Forwarded-For"] = forwarded_for
    body = json.dumps({"username": username, "password": password}).encode()
    request = urllib.request.Request(url + "/api/auth/token/", body, headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def server_with(tmp_path):
    """Start the real ASGI server (as `make run` does) with extra environment; stopped after the test."""
    with contextlib.ExitStack() as stack:

        def start(**env):
            base = {"DATABASE_URL": database_url(connection.settings_dict), **env}
            return stack.enter_context(asgi_server(base, tmp_path / f"server-{len(env)}.log"))

        yield start


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_loopback_client_cannot_choose_its_address_with_x_forwarded_for(owner, server_with):
    """No trusted proxy by default: ten failures, each claiming another address, are ten failures of the
    connection's own address, and the eleventh attempt is refused whatever address it claims."""
    url = server_with()
    for attempt in range(10):
        assert token_over_http(url, "wrong", forwarded_for=f"192.0.2.{attempt + 1}") == 400

    assert token_over_http(url, PASSWORD, forwarded_for=FRIEND) == 429
    assert token_over_http(url, PASSWORD) == 429


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_behind_a_trusted_proxy_the_forwarded_client_address_is_counted(owner, server_with):
    """``TRUSTED_PROXIES=127.0.0.1``: the proxy's ``X-Forwarded-For`` names the client (the rightmost address it
    added; what the client itself put in front is not believed)."""
    url = server_with(TRUSTED_PROXIES=LOOPBACK)
    for _ in range(10):
        assert token_over_http(url, "wrong", forwarded_for=f"{FRIEND}, {ATTACKER}") == 400

    assert token_over_http(url, PASSWORD, forwarded_for=ATTACKER) == 429
    assert token_over_http(url, PASSWORD, forwarded_for=f"192.0.2.1, {ATTACKER}") == 429
    assert token_over_http(url, "wrong", forwarded_for=FRIEND) == 400  # another client: checked, not refused


# --- Every spelling of a name is one name -------------------------------------------------------------------------

# Spellings the sign-in form turns into ``owner`` (NFKC) before it looks the account up, and the case the count ignores.
FULLWIDTH, BOLD, SCRIPT, UPPER = "ｏｗｎｅｒ", "𝐨𝐰𝐧𝐞𝐫", "𝓸𝔀𝓷𝓮𝓻", "OWNER"


@pytest.fixture
def server_owner(owner):
    return server_password(owner, PASSWORD)


def page_over_http(url: str, username: str, password: str) -> int:
    """The sign-in form of the real server, filled as a person does (its CSRF cookie and token); the status."""
    return SiteClient(url).sign_in(username, password).status


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_fullwidth_and_mathematical_spellings_of_a_name_share_its_count(server_owner, server_with):
    """Ten failures spread over ``owner``'s spellings are ten failures of ``owner``: the next attempt in any spelling,
    with the right password, is refused on the sign-in page, the admin's and the API. Each spelling alone signs in
    before (the form finds the account by its NFKC form), so the refusal is the throttle's."""
    url = server_with()
    assert page_over_http(url, FULLWIDTH, PASSWORD) == 302  # the form finds owner by this spelling
    spellings = ["owner", FULLWIDTH, BOLD, SCRIPT, UPPER]
    for attempt in range(10):
        assert page_over_http(url, spellings[attempt % len(spellings)], "wrong") == 200

    for spelling in (FULLWIDTH, BOLD, SCRIPT, UPPER, "owner", f" {FULLWIDTH} "):
        assert page_over_http(url, spelling, PASSWORD) == 429, spelling
    admin = SiteClient(url)
    admin.get("/admin/login/")
    assert admin.post("/admin/login/", {"username": BOLD, "password": PASSWORD}).status == 429
    for spelling in (FULLWIDTH, BOLD, "owner"):
        assert token_over_http(url, PASSWORD, username=spelling) == 429


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_failures_through_the_api_in_another_spelling_throttle_the_sign_in_page(server_owner, server_with):
    url = server_with()
    for attempt in range(10):
        assert token_over_http(url, "wrong", username=(FULLWIDTH, SCRIPT)[attempt % 2]) == 400

    assert page_over_http(url, "owner", PASSWORD) == 429
    assert page_over_http(url, BOLD, PASSWORD) == 429


def test_the_key_is_the_name_the_account_is_found_by():
    assert {failure_key(name, ATTACKER) for name in ("owner", FULLWIDTH, BOLD, SCRIPT, UPPER, " owner ")} == {
        failure_key("owner", ATTACKER)
    }
    assert failure_key("owner", ATTACKER) != failure_key("owners", ATTACKER)
    assert failure_key("owner", ATTACKER) != failure_key("owner", FRIEND)
    assert sign_in_name("x" * 5000) == "x" * 1024  # a huge name is cut before it is normalised
