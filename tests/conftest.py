"""Fixtures every area shares: a few named actors, isolated file storage, a real Celery worker, the platform, the
S3 server, a headless Chromium and the fixture pages; helpers live in ``tests/support``. A fixture that brings a
browser, processes or S3 is tagged ``needs(...)`` and marks the tests that use it (``pytest_collection_modifyitems``).

Actors in project ``alpha``: ``owner`` (annotator who records), ``teammate`` (another annotator), ``reviewer``,
``researcher``. ``outsider`` is an annotator of project ``beta`` only.
"""

import contextlib
import uuid

import pytest

from annotation.models import Project, Role
from tests.support.actors import make_user, token_client
from tests.support.markers import marks_from_fixtures, needs
from tests.support.schedule import ModuleSeconds, heaviest_modules_first


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs ~0.5 s per user; tests only need passwords to check, not to resist cracking."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def pages_left_before_the_flush(request):
    """After a test on the live server, each browser it used leaves its page before the database is emptied. A page
    still loading screenshots held table locks that deadlocked with a transactional test's TRUNCATE; PostgreSQL
    aborted the TRUNCATE, and the test's rows stayed for the next tests in that process; so did a request the test
    left in flight. So the pages are left and the live server's requests waited for (``tests/support/inflight.py``).
    The database is requested here, so it is emptied after this fixture's teardown."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")
    yield
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.remote.webdriver import WebDriver

    from tests.support.inflight import wait_idle

    for value in list(request.node.funcargs.values()):
        if isinstance(value, WebDriver):
            with contextlib.suppress(WebDriverException):
                value.get("about:blank")
    assert wait_idle(), "the live server was still answering a request 30 s after the test"


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


@pytest.fixture
def reviewer(alpha):
    return make_user("reviewer", alpha, Role.REVIEWER)


@pytest.fixture
def researcher(alpha):
    return make_user("researcher", alpha, Role.RESEARCHER)


@pytest.fixture
def outsider(beta):
    return make_user("outsider", beta, Role.ANNOTATOR)


@pytest.fixture
def api_for():
    return token_client


@pytest.fixture(scope="session")
@needs("processes")
def platform(tmp_path_factory):
    """The platform as `make run` starts it (server + worker + sample data), shared by the slow tests."""
    from devtools.processes import running_platform

    with running_platform(tmp_path_factory.mktemp("platform-var"), "--sample-demos", "2") as running:
        yield running


@pytest.fixture
def worker_env(media_storage, tmp_path, settings):
    """A Celery worker's settings: this test's database, files and export work folder (a module that needs more
    overrides this fixture and adds to it)."""
    from django.db import connection

    from devtools.processes import database_url

    settings.EXPORT_TMP_DIR = tmp_path / "exports-tmp"
    return {
        "DATABASE_URL": database_url(connection.settings_dict),
        "MEDIA_ROOT": str(media_storage),
        "EXPORT_TMP_DIR": str(settings.EXPORT_TMP_DIR),
    }


@pytest.fixture
@needs("processes")
def worker(worker_env, tmp_path):
    """A real Celery worker process on ``worker_env`` for the length of the test, on an empty queue: tasks that earlier
    tests in this process enqueued with no worker to take them (every review page asks for thumbnails) would come
    first, and at load hundreds of them kept a test's own task waiting past its time."""
    from config.celery import app
    from devtools.processes import celery_worker

    app.control.purge()
    with celery_worker(worker_env, tmp_path / "worker.log") as process:
        yield process


@pytest.fixture(scope="session")
@needs("processes", "s3")
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
@needs("browser")
def browser():
    """One headless Chromium for a module's tests (modules that need the extension define their own)."""
    from tests.support.browser import make_driver

    driver = make_driver()
    yield driver
    driver.quit()


def pytest_addoption(parser):
    parser.addoption(
        "--record-module-seconds",
        action="store_true",
        help="write each module's seconds in this run to tests/module_seconds.json (the order modules run in)",
    )


def pytest_configure(config):
    if config.getoption("--record-module-seconds"):
        config.pluginmanager.register(ModuleSeconds(), "module-seconds")


def pytest_collection_modifyitems(items):
    """Each test gets the markers of what its fixtures bring (``tests/support/markers.py``); then the modules are
    ordered heaviest first, so that parallel processes finish together (``tests/support/schedule.py``)."""
    for item in items:
        for mark in sorted(marks_from_fixtures(item)):
            item.add_marker(mark)
    heaviest_modules_first(items)


@pytest.fixture
def admin(alpha):
    """An admin of project ``alpha`` (user ``boss``)."""
    return make_user("boss", alpha, Role.ADMIN)


@pytest.fixture
def boss(admin):
    """The project's admin, by the name some tests give it."""
    return admin
