"""API authentication: token sign-in for the recorder, and 401 for anonymous or badly authenticated calls."""

import pytest
from rest_framework.test import APIClient

from tests.support.payloads import sha
from tests.support.recorder import blob_url, recordings_url


@pytest.fixture
def anonymous():
    return APIClient()


def test_signing_in_with_username_and_password_returns_a_token_that_works(owner, anonymous):
    response = anonymous.post("/api/auth/token/", {"username": "owner", "password": "owner-Passw0rd!"}, format="json")

    assert response.status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    projects = client.get("/api/projects/")
    assert projects.status_code == 200
    assert [p["name"] for p in projects.json()["results"]] == ["alpha"]


def test_signing_in_twice_returns_the_same_token(owner, anonymous):
    body = {"username": "owner", "password": "owner-Passw0rd!"}

    first = anonymous.post("/api/auth/token/", body, format="json").json()["token"]
    second = anonymous.post("/api/auth/token/", body, format="json").json()["token"]

    assert first == second


def test_signing_in_with_a_wrong_password_is_refused_without_a_token(owner, anonymous):
    response = anonymous.post("/api/auth/token/", {"username": "owner", "password": "nope"}, format="json")

    assert response.status_code == 400
    assert "token" not in response.json()


def test_a_token_says_whose_it_is_and_a_wrong_one_is_401(owner, teammate, anonymous):
    for user in (owner, teammate):
        body = {"username": user.username, "password": f"{user.username}-Passw0rd!"}
        token = anonymous.post("/api/auth/token/", body, format="json").json()["token"]
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        assert client.get("/api/auth/token/").json() == {"username": user.username}

    anonymous.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    wrong = anonymous.get("/api/auth/token/")
    assert wrong.status_code == 401
    assert "username" not in wrong.json()


ENDPOINTS = [
    pytest.param("get", "/api/projects/", id="list-projects"),
    pytest.param("get", "/api/recordings/", id="list-recordings"),
    pytest.param("post", "/api/recordings/", id="start-recording"),
    pytest.param("get", recordings_url("abcdefg"), id="read-recording"),
    pytest.param("post", recordings_url("abcdefg", "turns"), id="post-turns"),
    pytest.param("post", recordings_url("abcdefg", "finish"), id="finish"),
    pytest.param("head", blob_url(sha(b"x")), id="head-blob"),
    pytest.param("put", blob_url(sha(b"x")), id="put-blob"),
]


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_an_anonymous_call_is_401_with_a_token_challenge(db, anonymous, method, url):
    response = getattr(anonymous, method)(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_a_call_with_an_unknown_token_is_401(db, anonymous, method, url):
    anonymous.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")

    response = getattr(anonymous, method)(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_401_says_why_in_the_api_error_shape(db, anonymous):
    anonymous.credentials(HTTP_AUTHORIZATION="Token nope")

    response = anonymous.get("/api/recordings/")

    assert response.json() == {"detail": "Invalid token.", "code": "authentication_failed", "errors": []}


def test_a_token_of_a_deactivated_user_is_401(owner, api_for):
    client = api_for(owner)
    owner.is_active = False
    owner.save()

    assert client.get("/api/recordings/").status_code == 401
