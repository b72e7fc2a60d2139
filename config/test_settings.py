"""Settings for the test suite: the real settings, with all local data in a fresh folder per test run.

The SQLite test database is a file there (not in memory), so real processes started by tests — a Celery
worker, the ASGI server — can open the same database as the test.
"""

import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

# `make test` runs the suite in several processes (pytest-xdist). Each is a test run of its own: its own VAR_DIR (not
# the one it inherits from the process that started it), its own Redis database (the broker's queues and the channel
# layer's groups have no key prefix), and its own test database (pytest-django adds the worker's name). The processes
# a test starts inherit the worker's name: they keep the VAR_DIR and Redis database they are given.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER and os.environ.get("WEBDEMOS_TEST_WORKER") != WORKER:
    os.environ["WEBDEMOS_TEST_WORKER"] = WORKER
    os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix=f"webdemos-test-{WORKER}-")
    os.environ.pop("CACHE_KEY_PREFIX", None)
    if os.environ.get("REDIS_URL"):
        parts = urlsplit(os.environ["REDIS_URL"])
        database = (int(parts.path.strip("/") or 0) + 1 + int(WORKER.removeprefix("gw"))) % 16
        os.environ["REDIS_URL"] = parts._replace(path=f"/{database}").geturl()
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="webdemos-test-"))
# Cache keys of one run (and of the servers it starts, which inherit VAR_DIR) never meet another run's in Redis.
os.environ.setdefault("CACHE_KEY_PREFIX", "test-" + os.path.basename(os.environ["VAR_DIR"]))

from .secret_key import FILE_NAME, ensure_key_file  # noqa: E402

# A random key per run, kept in the run's VAR_DIR as `make run` keeps one (the servers the tests start share it).
ensure_key_file(Path(os.environ["VAR_DIR"]) / FILE_NAME)

from .settings import *  # noqa: E402, F403
from .settings import DATABASES, MIDDLEWARE, VAR_DIR  # noqa: E402

# Requests being answered are counted (tests/support/inflight.py): a live-server test's teardown waits for them
# before the database is emptied (tests/conftest.py, pages_left_before_the_flush).
MIDDLEWARE = ["tests.support.inflight.InFlight", *MIDDLEWARE]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
