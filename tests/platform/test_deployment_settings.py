"""Deployment settings: the secret key (`make run` keeps a random one in var/secret_key; with DEBUG off nothing
starts on a known development key) and the cookie settings for TLS deployments."""

import os
import stat
import subprocess
import sys

import pytest
from django.core import checks

from config.checks import check_secret_key
from config.secret_key import DEVELOPMENT_KEY, ensure_key_file, read_key_file
from devtools.processes import ROOT
from tests.support.processes import run_python

WEAK_KEYS = [DEVELOPMENT_KEY, "django-insecure-" + "x" * 50, "short-key"]


@pytest.mark.parametrize("key", WEAK_KEYS)
def test_a_development_key_with_debug_off_is_a_system_check_error(settings, key):
    settings.DEBUG, settings.SECRET_KEY = False, key

    errors = check_secret_key()

    assert [error.id for error in errors] == ["config.E001"]
    assert errors[0].level == checks.ERROR
    assert "SECRET_KEY" in errors[0].msg


def test_a_random_key_or_debug_passes_the_check(settings):
    settings.DEBUG, settings.SECRET_KEY = False, "k" * 16 + "ey-that-is-long-enough-and-private"
    assert check_secret_key() == []
    settings.DEBUG, settings.SECRET_KEY = True, DEVELOPMENT_KEY
    assert check_secret_key() == []


def test_the_key_file_is_created_once_private_and_kept(tmp_path):
    path = tmp_path / "var" / "secret_key"

    key, created = ensure_key_file(path)
    again, created_again = ensure_key_file(path)

    assert (created, created_again) == (True, False)
    assert key == again == read_key_file(path)
    assert len(key) >= 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_the_asgi_server_refuses_to_load_on_a_development_key(tmp_path):
    refused = run_python("import config.asgi", tmp_path, SECRET_KEY=DEVELOPMENT_KEY, DEBUG="0")
    assert refused.returncode != 0
    assert "config.E001" in refused.stderr

    debug = run_python("import config.asgi", tmp_path, SECRET_KEY=DEVELOPMENT_KEY, DEBUG="1")
    assert debug.returncode == 0, debug.stderr


def test_the_settings_read_the_key_make_run_keeps(tmp_path):
    key, _ = ensure_key_file(tmp_path / "secret_key")

    found = run_python("from django.conf import settings; print(settings.SECRET_KEY)", tmp_path, SECRET_KEY=None)

    assert found.stdout.strip() == key


def test_make_run_creates_a_private_random_key_on_its_first_run_and_uses_it(settings, tmp_path, monkeypatch):
    from workers.management.commands.runplatform import Command

    monkeypatch.delenv("SECRET_KEY", raising=False)
    settings.VAR_DIR, settings.SECRET_KEY = tmp_path, DEVELOPMENT_KEY
    command = Command()

    command.ensure_secret_key()
    first = settings.SECRET_KEY
    command.ensure_secret_key()

    assert first == settings.SECRET_KEY == read_key_file(tmp_path / "secret_key")
    assert first != DEVELOPMENT_KEY
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
    assert check_secret_key() == []


@pytest.mark.processes
def test_make_run_refuses_to_start_on_a_development_key(tmp_path):
    environment = {**os.environ, "VAR_DIR": str(tmp_path), "SECRET_KEY": DEVELOPMENT_KEY, "DEBUG": "0"}
    environment.pop("DATABASE_URL", None)
    environment["DJANGO_SETTINGS_MODULE"] = "config.settings"

    done = subprocess.run(
        [sys.executable, "manage.py", "runplatform", "--port", "1"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert "config.E001" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()  # stopped before migrating or serving anything


def test_cookies_are_secure_when_the_deployment_says_it_runs_behind_tls(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )

    plain = run_python(code, tmp_path, SECRET_KEY="x" * 64)
    tls = run_python(code, tmp_path, SECRET_KEY="x" * 64, SESSION_COOKIE_SECURE="1", SECURE_PROXY_SSL_HEADER="1")

    assert plain.stdout.split() == ["False", "False", "None"]
    assert tls.stdout.split()[:2] == ["True", "True"]
    assert "HTTP_X_FORWARDED_PROTO" in tls.stdout


def test_a_secure_session_cookie_is_marked_secure_and_http_only(client, owner, settings):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True

    client.get("/accounts/login/")
    csrf = client.cookies["csrftoken"]
    response = client.post(
        "/accounts/login/", {"username": "owner", "password": "owner-Passw0rd!", "csrfmiddlewaretoken": csrf.value}
    )

    assert response.status_code == 302
    session = response.cookies["sessionid"]
    assert session["secure"]
    assert session["httponly"]
    assert session["samesite"] == "Lax"
    assert csrf["secure"]
