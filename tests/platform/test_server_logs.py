"""What the real server logs about requests (``config/logs.py``): no capability token in any line, and an ordinary
refusal (403, 404, an API refusal, a CSRF failure) in one line without a traceback, while a 500 keeps its traceback.

Each test starts the server as `make run` does (uvicorn's command line, and ``config.serve`` with two processes),
asks the URLs that carry tokens (invitation links, task frames' work, preview and read-only URLs, a password-reset
link, the live session's invitation, ``?token=`` / ``?key=`` on any path) and reads the server's log file."""

import contextlib
import secrets
import time
import urllib.error
import urllib.request

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.db import connection
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.authtoken.models import Token

from annotation.actions import forms, manage
from annotation.actions.forms import frames
from annotation.models import Role
from config.logs import redact
from devtools.processes import asgi_process, database_url
from tests.support.actors import make_user, server_password
from tests.support.forms_data import make_batch
from tests.support.site_client import Client
from tests.support.url_patterns import all_patterns

PASSWORD = "Log-Passw0rd!"


def fetch(url: str, method: str = "GET") -> int:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def logged(log, *lines: str, timeout: float = 60) -> str:
    """The log once every one of ``lines`` is in it (a response is on its way before its line is written)."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace")
        if all(line in text for line in lines) or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


@contextlib.contextmanager
def empty_database():
    """A database without tables beside the test database (dropped afterwards): its URL."""
    if connection.vendor != "postgresql":
        pytest.fail("this test makes an empty PostgreSQL database beside the test database (DATABASE_URL)")
    name = f"{connection.settings_dict['NAME']}_empty_{secrets.token_hex(4)}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url({**connection.settings_dict, "NAME": name})
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def server(tmp_path):
    """Start the real server with extra environment (``workers`` processes); stopped after the test."""
    with contextlib.ExitStack() as stack:

        def start(workers=1, **env):
            env = {"DATABASE_URL": database_url(connection.settings_dict), **env}
            log = tmp_path / f"server-{workers}.log"
            url, _ = stack.enter_context(asgi_process(env, log, workers=workers))
            return url, log

        yield start


@pytest.fixture
def capabilities(alpha, owner, teammate):
    """A URL of every kind that carries a secret, each with the secret it must not leave in the log."""
    boss = make_user("boss", alpha, Role.ADMIN)
    _, invitation = manage.do_create_invitation(alpha, boss, Role.ANNOTATOR)
    batch = make_batch(alpha, assignments_per_task=2)
    working = forms.do_accept_next(owner, batch)
    done = forms.do_submit(forms.do_accept_next(teammate, batch).pk, {"short": "x"})
    view = frames.view_url(done)
    preview_token = frames.preview_token(working.task)
    reset_token = default_token_generator.make_token(owner)
    uid = urlsafe_base64_encode(force_bytes(owner.pk))
    live_code, query_token, query_key = (secrets.token_urlsafe(24) for _ in range(3))
    return {
        "invitation": (f"/join/{invitation}/", invitation),
        "unknown invitation": (f"/join/{secrets.token_urlsafe(32)}/", None),
        "work frame": (frames.work_frame_url(working), working.token),
        "preview frame": (frames.preview_url(working.task, preview_token), preview_token),
        "read-only frame": (view, view.split("token=")[1]),
        "password reset": (f"/accounts/reset/{uid}/{reset_token}/", reset_token),
        "live invitation": (f"/sessions/join/{live_code}", live_code),
        "query token": (f"/api/projects/?token={query_token}&page=1", query_token),
        "query key": (f"/work/?api_key={query_key}", query_key),
    }


@pytest.mark.parametrize("workers", [1, 2], ids=["uvicorn", "config.serve"])
@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_no_capability_token_reaches_the_servers_log(server, capabilities, workers):
    url, log = server(workers, EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend")
    secrets_sent = []
    for name, (path, secret) in capabilities.items():
        status = fetch(url + path)
        assert status < 500, (name, status)
        if secret is None:  # a made-up one: its own segment is the secret
            secret = path.split("/")[2]
        secrets_sent.append(secret)
    assert fetch(url + capabilities["invitation"][0], "POST") == 403  # no CSRF cookie: Django's security log

    text = logged(log, '"GET /work/?api_key=[redacted] HTTP/1.1"', "CSRF")

    for secret in secrets_sent:
        assert secret not in text
    invitation = capabilities["invitation"][0]
    frame_id = capabilities["work frame"][0].split("/")[3]
    uid = capabilities["password reset"][0].split("/")[3]
    for line in (
        '"GET /join/[redacted]/ HTTP/1.1" 200',
        '"GET /join/[redacted]/ HTTP/1.1" 404',
        f'"GET /forms/assignments/{frame_id}/[redacted]/?assignmentId={frame_id}&',
        "/iframe/?token=[redacted]&assignmentId=",
        "/view/?token=[redacted] HTTP/1.1",
        f'"GET /accounts/reset/{uid}/[redacted]/ HTTP/1.1" 302',
        '"GET /sessions/join/[redacted] HTTP/1.1" 302',  # to the sign-in page, which gets it in next=
        '"GET /accounts/login/?next=/sessions/join/[redacted] HTTP/1.1" 200',
        '"GET /accounts/login/?next=/work/%3Fapi_key%3D[redacted] HTTP/1.1" 200',
        '"GET /api/projects/?token=[redacted]&page=1 HTTP/1.1"',
        '"POST /join/[redacted]/ HTTP/1.1" 403',
        "Forbidden (CSRF cookie not set.): POST /join/[redacted]/ 403 user=",
        "Not Found: GET /join/[redacted]/ 404 user=",
    ):
        assert line in text, line
    assert redact(invitation) == "/join/[redacted]/"


@pytest.mark.parametrize("workers", [1, 2], ids=["uvicorn", "config.serve"])
@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_refusal_is_one_line_and_an_error_keeps_its_traceback(server, alpha, owner, researcher, workers):
    """403 and 404 pages, the API's 403 and 404: one line each with the method, the path, the status and who asked;
    no traceback anywhere in the log."""
    server_password(owner, PASSWORD)
    batch = make_batch(alpha)
    url, log = server(workers)
    person = Client(url)
    assert person.sign_in("owner", PASSWORD).status == 302
    assert person.get("/projects/alpha/settings/").status == 403  # PermissionDenied: Django logs its traceback
    assert person.get("/projects/alpha/nothing-here/").status == 404
    assert person.get(f"/work/batches/{batch.pk}/results.csv").status == 403
    api = Client(url, token=Token.objects.create(user=owner).key)
    assert api.get(f"/api/batches/{batch.pk}/results/", api=True).status == 403
    assert api.get("/api/batches/999999/", api=True).status == 404

    lines = [
        f"Forbidden (Permission denied): GET /projects/alpha/settings/ 403 user={owner.pk}",
        f"Not Found: GET /projects/alpha/nothing-here/ 404 user={owner.pk}",
        f"Forbidden (Permission denied): GET /work/batches/{batch.pk}/results.csv 403 user={owner.pk}",
        f"Forbidden: GET /api/batches/{batch.pk}/results/ 403 user={owner.pk}",
        f"Not Found: GET /api/batches/999999/ 404 user={owner.pk}",
    ]
    text = logged(log, *lines)

    for line in lines:
        assert text.count(line) == 1, line
    assert "Traceback" not in text
    assert "raise PermissionDenied" not in text


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_server_error_keeps_its_traceback_without_the_token(server, tmp_path):
    """A real 500: the server on a database without tables (its health check needs none). The error is logged
    with its traceback, and its line with the path's token redacted."""
    with empty_database() as empty:
        url, log = server(1, DATABASE_URL=empty)
        secret = secrets.token_urlsafe(32)
        assert fetch(f"{url}/join/{secret}/") == 500

        text = logged(log, "Internal Server Error: GET /join/[redacted]/ 500 user=")

    assert "Internal Server Error: GET /join/[redacted]/ 500 user=" in text
    assert "Traceback (most recent call last)" in text
    assert "annotation_projectinvitation" in text  # the error itself: the table is missing
    assert secret not in text


# --- The one redaction function -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logged_text", "expected"),
    [
        ('"GET /join/Ab_-9x/ HTTP/1.1" 200', '"GET /join/[redacted]/ HTTP/1.1" 200'),
        ("/sessions/join/c0de", "/sessions/join/[redacted]"),
        (
            "/forms/assignments/12/f00d/?assignmentId=12&hitId=3",
            "/forms/assignments/12/[redacted]/?assignmentId=12&hitId=3",
        ),
        ("/forms/assignments/12/view/?token=a:b:c", "/forms/assignments/12/view/?token=[redacted]"),
        ("/forms/assignments/12/viewer/", "/forms/assignments/12/[redacted]/"),
        ("/forms/tasks/3/iframe/?token=a%3Ab&hitId=3", "/forms/tasks/3/iframe/?token=[redacted]&hitId=3"),
        ("/accounts/reset/MQ/c0f-abc/", "/accounts/reset/MQ/[redacted]/"),
        ("/accounts/reset/MQ/set-password/", "/accounts/reset/MQ/set-password/"),
        ("/api/x/?api_key=1&keyword=2&Token=3&page=4", "/api/x/?api_key=[redacted]&keyword=2&Token=[redacted]&page=4"),
        # a URL inside a sign-in redirect's next=, percent-encoded
        ("/accounts/login/?next=/join/S3cr3t/", "/accounts/login/?next=/join/[redacted]/"),
        ("/accounts/login/?next=%2Fjoin%2FS3cr3t%2F", "/accounts/login/?next=%2Fjoin%2F[redacted]%2F"),
        (
            "/accounts/login/?next=/work/%3Fkey%3DS3cr3t%26page%3D2",
            "/accounts/login/?next=/work/%3Fkey%3D[redacted]%26page%3D2",
        ),
        ("/projects/alpha/members/?page=2", "/projects/alpha/members/?page=2"),
        ("/review/demo-1/turns/4/page", "/review/demo-1/turns/4/page"),
    ],
)
def test_redact_takes_out_every_kind_of_capability(logged_text, expected):
    assert redact(logged_text) == expected
    assert redact(expected) == expected


def test_every_url_pattern_with_a_secret_in_its_path_is_redacted():
    """A new route whose path carries a token or code (a ``<token>``, ``<code>`` parameter) is redacted, or this
    test names it. (``<key>`` names a statistics table, not a secret.)"""
    secret = "S3cr3tValue"
    missed = []
    for pattern in all_patterns():
        if not {"token", "code"} & set(pattern.params):
            continue
        values = {name: (secret if name != "uidb64" else "MQ") for name in pattern.params}
        values.update({name: "7" for name in pattern.params if name.endswith("_id")})
        url = pattern.url(values)
        if secret in redact(url):
            missed.append(f"{pattern.route} ({url})")
    assert not missed, f"routes whose secret reaches the log: {missed}"
