"""Shared fixtures: a few named actors reused by every test module, and isolated file storage.

Actors in project ``alpha``: ``owner`` (annotator who records), ``teammate`` (another annotator), ``reviewer``,
``researcher``. ``outsider`` is an annotator of project ``beta`` only.
"""

import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.actions import do_start_recording
from annotation.models import Demonstration, DemoStatus, Membership, Project, Role


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs ~0.5 s per user; tests only need passwords to check, not to resist cracking."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media_storage(settings, tmp_path):
    """Every test writes blobs into its own folder."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media"), "allow_overwrite": True},
        },
    }
    return tmp_path / "media"


def server_password(user, password: str):
    """Give ``user`` a password a server process started by a test can check: the test process hashes with MD5
    (``fast_password_hashing``), which the server's settings do not accept. PBKDF2 with few iterations, to be quick."""
    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(password, hasher.salt(), iterations=1000)
    user.save(update_fields=["password"])
    return user


def make_user(username, project=None, role=None):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-Passw0rd!")
    if project is not None:
        Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def alpha(db):
    return Project.objects.create(name="alpha", title="Alpha")


@pytest.fixture
def beta(db):
    return Project.objects.create(name="beta", title="Beta")


@pytest.fixture
def owner(alpha):
    return make_user("owner", alpha, Role.ANNOTATOR)


@pytest.fixture
def teammate(alpha):
    return make_user("teammate", alpha, Role.ANNOTATOR)


@pytest.fixture
def instructor(alpha):
    return make_user("instructor", alpha, Role.ANNOTATOR)


def start_demo(
    navigator,
    project,
    instructor=None,
    sees_screen=True,
    mode="chat",
    task="Find the weather in Montreal",
    status=DemoStatus.RECORDING,
) -> Demonstration:
    """A demonstration started as the recorder starts one (a new client id each time), then given ``status``."""
    demo, _ = do_start_recording(
        navigator,
        project,
        f"client-{navigator.pk}-{Demonstration.objects.count()}",
        mode=mode,
        instructor=instructor,
        instructor_sees_screen=sees_screen,
        task_description=task,
    )
    if status != DemoStatus.RECORDING:
        Demonstration.objects.filter(pk=demo.pk).update(status=status)
        demo.refresh_from_db()
    return demo


@pytest.fixture
def reviewer(alpha):
    return make_user("reviewer", alpha, Role.REVIEWER)


@pytest.fixture
def researcher(alpha):
    return make_user("researcher", alpha, Role.RESEARCHER)


@pytest.fixture
def outsider(beta):
    return make_user("outsider", beta, Role.ANNOTATOR)


def token_client(user) -> APIClient:
    """An API client authenticated the way the recorder is: ``Authorization: Token <key>``."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api_for():
    return token_client


@pytest.fixture(scope="session")
def platform(tmp_path_factory):
    """The platform as `make run` starts it (server + worker + sample data), shared by the slow tests."""
    from devtools.processes import running_platform

    with running_platform(tmp_path_factory.mktemp("platform-var"), "--sample-demos", "2") as running:
        yield running


def job_ended(body) -> bool:
    return body["status"] in ("done", "failed", "cancelled")


def poll_job(client, url, until=job_ended, timeout=180) -> list:
    """GET a background job's ``url`` until ``until(body)`` (a condition, never a fixed wait); every body seen."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.append(client.get(url).json())
        if until(seen[-1]):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{url} never reached the expected state: {seen[-1]}")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-compatible server (SeaweedFS) on loopback for the whole run; each test takes its own bucket."""
    from devtools.s3server import s3_server as start_s3_server

    with start_s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture
def s3_storage(s3_server, settings):
    """The platform's storage switched to a fresh bucket of the S3 server, as ``AWS_STORAGE_BUCKET_NAME`` does;
    returns the environment that gives a worker or server process the same storage."""
    bucket = s3_server.create_bucket(f"t{uuid.uuid4().hex[:20]}")
    env = s3_server.env(bucket)
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    for name, value in env.items():
        setattr(settings, name, value)
    settings.AWS_S3_ADDRESSING_STYLE, settings.AWS_S3_SIGNATURE_VERSION = "path", "s3v4"
    settings.AWS_DEFAULT_ACL, settings.AWS_S3_FILE_OVERWRITE = None, True
    settings.AWS_QUERYSTRING_EXPIRE = 300
    return env


@pytest.fixture(scope="module")
def servers():
    """The local fixture pages: ``(base URL, cross-origin base URL)``."""
    from tests.support.recorder_harness import fixture_servers

    with fixture_servers() as urls:
        yield urls


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a module's tests (modules that need the extension define their own)."""
    from tests.support.browser import make_driver

    driver = make_driver()
    yield driver
    driver.quit()
