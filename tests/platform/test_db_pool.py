"""The ASGI server pools its PostgreSQL connections (``DB_POOL_SIZE``, turned on by config/asgi.py): requests reuse
the server's connections instead of opening one each (and the body guard's credential check another). On
PostgreSQL, parameters are bound by the server and statements a connection repeats are prepared
(``DB_PREPARE_THRESHOLD``)."""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from annotation.models import ProjectBlob
from annotation.store import hotsql
from devtools.processes import asgi_process, database_url

PRINT_DATABASE = """
import json, os
{before}
from django.conf import settings
default = settings.DATABASES["default"]
seen = {{"engine": default["ENGINE"], "max_age": default["CONN_MAX_AGE"], "options": default.get("OPTIONS", {{}})}}
print(json.dumps(seen))
"""
POSTGRES = "postgres://someone@db.example:5432/webdemos"


def database_settings(env: dict, before: str = "") -> dict:
    """settings.DATABASES["default"] as a fresh process with ``env`` sees it (no connection is opened)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "DB_"))}
    environ.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1", VAR_DIR=env.pop("VAR_DIR"), **env)
    code = PRINT_DATABASE.format(before=before)
    done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=environ, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def test_the_pool_is_for_postgresql_and_replaces_persistent_connections(tmp_path):
    var = str(tmp_path)
    pooled = database_settings({"VAR_DIR": var, "DATABASE_URL": POSTGRES, "DB_POOL_SIZE": "7", "DB_CONN_MAX_AGE": "60"})
    assert pooled["options"]["pool"] == {"min_size": 1, "max_size": 7, "timeout": 60}
    assert pooled["options"]["application_name"].startswith("webdemos-server-")
    assert pooled["max_age"] == 0  # Django refuses persistent connections with a pool
    plain = database_settings({"VAR_DIR": var, "DATABASE_URL": POSTGRES, "DB_CONN_MAX_AGE": "60"})
    assert "pool" not in plain["options"]
    assert plain["max_age"] == 60
    sqlite = database_settings({"VAR_DIR": var, "DB_POOL_SIZE": "7"})
    assert sqlite["engine"].endswith("sqlite3")
    assert "pool" not in sqlite["options"]


def test_the_asgi_entry_point_pools_and_leaves_a_set_size_alone(tmp_path):
    entry = "import django.core.asgi, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')"
    entry += "\nexec(open('config/asgi.py').read().split('django_asgi_app =')[0])"  # asgi.py up to Django's setup
    server = database_settings({"VAR_DIR": str(tmp_path), "DATABASE_URL": POSTGRES}, before=entry)
    assert server["options"]["pool"]["max_size"] == 10
    sized = database_settings({"VAR_DIR": str(tmp_path), "DATABASE_URL": POSTGRES, "DB_POOL_SIZE": "3"}, before=entry)
    assert sized["options"]["pool"]["max_size"] == 3


def test_postgresql_binds_on_the_server_and_prepares_what_a_connection_repeats(tmp_path):
    var = str(tmp_path)
    default = database_settings({"VAR_DIR": var, "DATABASE_URL": POSTGRES})["options"]
    assert (default["server_side_binding"], default["prepare_threshold"]) == (True, 5)
    sooner = database_settings({"VAR_DIR": var, "DATABASE_URL": POSTGRES, "DB_PREPARE_THRESHOLD": "2"})["options"]
    assert sooner["prepare_threshold"] == 2
    off = database_settings({"VAR_DIR": var, "DATABASE_URL": POSTGRES, "DB_PREPARE_THRESHOLD": "0"})["options"]
    assert (off["server_side_binding"], off["prepare_threshold"]) == (True, None)  # None: psycopg never prepares
    sqlite = database_settings({"VAR_DIR": var})["options"]
    assert not {"server_side_binding", "prepare_threshold"} & sqlite.keys()


@pytest.mark.django_db
def test_a_statement_the_connection_repeats_is_planned_once(alpha):
    needs_postgresql("prepared statements are PostgreSQL's")

    def prepared() -> set:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return {row[0] for row in cursor.fetchall()}

    before, sha = prepared(), "0" * 64
    for _ in range(settings.DATABASES["default"]["OPTIONS"]["prepare_threshold"] + 1):
        assert hotsql.known_blobs(alpha.pk, [sha]) == {}
    new = prepared() - before
    assert any(hotsql.table(ProjectBlob) in statement and "$2" in statement for statement in new), new


def server_backends(pid: int) -> set:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [f"webdemos-server-{pid}"])
        return {row[0] for row in cursor.fetchall()}


def needs_postgresql(what: str = "the connection pool is for PostgreSQL"):
    if connection.vendor != "postgresql":
        # SQLite has no pool and no prepared statements: skipped on a bare `make test`, saying why; CI (.ci/run)
        # sets DATABASE_URL, and there it always runs.
        pytest.skip(f"{what}: needs DATABASE_URL, as .ci/run sets it")


def call(url: str, token: str, method: str = "GET", body: bytes | None = None) -> tuple:
    """(status, headers, JSON body) of an API request, errors included."""
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.load(error)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_the_servers_requests_share_its_pooled_connections(owner, media_storage, tmp_path):
    needs_postgresql()
    token = Token.objects.create(user=owner).key
    env = {"DATABASE_URL": database_url(connection.settings_dict), "MEDIA_ROOT": str(media_storage)}
    with asgi_process(env, tmp_path / "server.log") as (url, process):

        def projects() -> list:
            status, _, body = call(url + "/api/projects/", token)
            assert status == 200, body
            return body["results"]

        assert [project["name"] for project in projects()] == ["alpha"]
        first = server_backends(process.pid)
        assert 1 <= len(first) <= 10  # the connection that served it stays open, in the pool
        for _ in range(30):  # one at a time: one connection serves them all
            projects()
        assert first & server_backends(process.pid)
        assert len(server_backends(process.pid)) <= 10


def lock_waiters(pid: int) -> int:
    with connection.cursor() as cursor:
        query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'"
        cursor.execute(query, [f"webdemos-server-{pid}"])
        return cursor.fetchone()[0]


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_request_that_finds_no_free_connection_is_told_to_retry(owner, alpha, media_storage, tmp_path):
    """One pooled connection, held by a request blocked on a table lock: the next requests wait DB_POOL_TIMEOUT
    and are answered 503 with Retry-After (API view and the body guard's credential check), then all is well."""
    needs_postgresql()
    token = Token.objects.create(user=owner).key
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "MEDIA_ROOT": str(media_storage),
        "DB_POOL_SIZE": "1",
        "DB_POOL_TIMEOUT": "1",
    }
    with asgi_process(env, tmp_path / "server.log") as (url, process):
        assert call(url + "/api/projects/", token)[0] == 200
        blocked = {}
        locker = psycopg.connect(database_url(connection.settings_dict))
        try:
            locker.execute("LOCK TABLE annotation_project IN ACCESS EXCLUSIVE MODE")
            holder = threading.Thread(target=lambda: blocked.update(answer=call(url + "/api/projects/", token)))
            holder.start()
            deadline = time.monotonic() + 60
            while lock_waiters(process.pid) == 0:  # the request holds the only connection, waiting for the lock
                assert time.monotonic() < deadline, "the request never reached the locked table"
                time.sleep(0.05)
            for method, path, body in (("GET", "/api/projects/", None), ("POST", "/api/recordings/", b"{}")):
                status, headers, answer = call(url + path, token, method, body)
                assert status == 503, (method, path, answer)
                assert headers["Retry-After"] == "5"
                assert answer["code"] == "busy"
                assert "DB_POOL_TIMEOUT" in answer["detail"]
        finally:
            locker.rollback()
            locker.close()
        holder.join(timeout=60)
        assert blocked["answer"][0] == 200
        assert call(url + "/api/projects/", token)[0] == 200
