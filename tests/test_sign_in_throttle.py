"""Sign-in throttling: 10 failed sign-ins of a username from one address within 5 minutes, and that pair is
refused with 429 and ``Retry-After`` on the sign-in page, the admin's and ``POST /api/auth/token/``, counted in the
real cache (Redis when ``REDIS_URL`` is set). Other addresses and other usernames are unaffected."""

import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.actions.signin import do_forget_sign_in_failures

ATTACKER, FRIEND = "203.0.113.7", "198.51.100.20"
PASSWORD = "owner-Passw0rd!"


@pytest.fixture(autouse=True)
def forget_failures():
    """The cache outlives a test (Redis): leave no count behind for later tests."""
    yield
    for username in ("owner", "teammate"):
        for address in (ATTACKER, FRIEND):
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
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 1
    for _ in range(10):
        token("owner", "wrong")
    assert token("owner", "wrong").status_code == 429

    deadline = time.monotonic() + 10
    while (answer := token("owner", PASSWORD)).status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.1)  # the cache entries expire on their own

    assert answer.status_code == 200
