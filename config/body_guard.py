"""Checks a request body must pass BEFORE it is read: its declared size, and for API writes, who is sending it.

Django's ASGI handler reads (spools) the whole body before any middleware or view runs, so limits checked there come
too late: a 300 MB upload from anybody would be received first. ``BodyGuard`` wraps the HTTP application and:

1. answers 401 at once to an API write (POST/PUT/PATCH under ``/api/``, sign-in excepted) that carries neither a
   valid ``Authorization: Token`` nor a signed-in session cookie;
2. answers 413 at once when ``Content-Length`` is over the route's limit (``body_limit``: blobs, recorder bundles and
   form-batch uploads have their own; the 413 names the settings that make the route's limit), without reading a
   byte of the body;
3. counts the bytes of a body as they arrive (chunked uploads declare no length) and answers 413 as soon as the
   limit is passed, telling Django the client went away so it stops reading.

This only helps when the server hands the body to the application as it arrives: uvicorn does (and stops reading
from the socket while the application does not ask for more), Daphne does not (Twisted receives the whole body
first). `make run` serves with uvicorn for that reason; see docs/limits.md.
"""

import functools
import json
import re
from importlib import import_module

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import OperationalError

from . import db_pool

BODY_METHODS = {"POST", "PUT", "PATCH"}
OPEN_API_WRITES = ("/api/auth/token/",)  # sign-in: the credentials are the body
BUNDLE_UPLOAD = re.compile(r"^/api/recordings/[^/]+/(bundle|batch)/$")  # batch/: the old path
IMPORT_UPLOAD = re.compile(r"^/api/projects/[^/]+/imports/$")  # a released benchmark's archive
FORM_UPLOAD_SLACK = 1024 * 1024  # the form fields and part headers around a form batch's two files
FORM_UPLOAD_SETTINGS = "FORM_TEMPLATE_MAX_BYTES + FORM_CSV_MAX_BYTES + 1 MiB of form fields"


@functools.cache
def form_upload_paths() -> frozenset[str]:
    """Where a form batch (an HTML template and a CSV of inputs) is uploaded: the API and the web form."""
    from django.urls import reverse

    return frozenset({reverse("batch-list"), reverse("forms-batch-new")})


def body_limit(method: str, path: str) -> tuple[int, str]:
    """The largest body the route takes, and the settings that say so."""
    if method == "PUT" and path.startswith("/api/blobs/"):
        return settings.INGEST_MAX_BLOB_BYTES, "INGEST_MAX_BLOB_BYTES"
    if method == "POST" and BUNDLE_UPLOAD.match(path):
        return settings.INGEST_MAX_UPLOAD_BYTES, "INGEST_MAX_UPLOAD_BYTES"
    if method == "POST" and IMPORT_UPLOAD.match(path):
        return settings.IMPORT_MAX_UPLOAD_BYTES, "IMPORT_MAX_UPLOAD_BYTES"
    if method == "POST" and path in form_upload_paths():
        limit = settings.FORM_TEMPLATE_MAX_BYTES + settings.FORM_CSV_MAX_BYTES + FORM_UPLOAD_SLACK
        return limit, FORM_UPLOAD_SETTINGS
    return settings.INGEST_MAX_BATCH_BYTES, "INGEST_MAX_BATCH_BYTES"


def needs_credentials(method: str, path: str) -> bool:
    return method in BODY_METHODS and path.startswith("/api/") and not path.startswith(OPEN_API_WRITES)


def header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def cookie(scope, name: str) -> str | None:
    for part in (header(scope, b"cookie") or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


CHECKED_TOKEN = "webdemos.checked_token"  # scope key: the Token the guard found, for the API's authentication


def has_credentials(active_token, token: str | None, session_key: str | None):
    """A token of an active user (the ``Token``, its user loaded, as ``active_token(key)`` finds it), or a session of
    a signed-in active user (True); None or False otherwise. The views check roles and CSRF."""
    from django.contrib.auth import SESSION_KEY, get_user_model

    if token:
        return active_token(token)
    if session_key:
        user_id = import_module(settings.SESSION_ENGINE).SessionStore(session_key).get(SESSION_KEY)
        return user_id is not None and get_user_model().objects.filter(pk=user_id, is_active=True).exists()
    return False


def token_of(scope) -> str | None:
    kind, _, key = (header(scope, b"authorization") or "").partition(" ")
    return key.strip() if kind.lower() == "token" and key.strip() else None


async def respond(send, status: int, detail: str, code: str, extra_headers=()) -> None:
    body = json.dumps({"detail": detail, "code": code, "errors": []}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the rest of the body is not read
        *extra_headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def too_large(limit: int, setting: str, declared: int | None = None) -> str:
    size = f" of {declared} bytes" if declared is not None else ""
    return f"request body{size} exceeds the limit of {limit} bytes ({setting})"


class BodyGuard:
    """ASGI middleware for the HTTP application (see the module docstring)."""

    def __init__(self, app, active_token):
        """``active_token(key)``: the ``Token`` of an active user with its user loaded, or None. The entry point
        (``config/asgi.py``) hands in the domain's query, so nothing else in ``config`` imports the domain."""
        self.app, self.active_token = app, active_token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            return await self.app(scope, receive, send)
        limit, setting = body_limit(scope["method"], scope["path"])
        if needs_credentials(scope["method"], scope["path"]):
            # Not thread-sensitive: the checks of concurrent requests need not queue for one thread.
            check = database_sync_to_async(has_credentials, thread_sensitive=False)
            try:
                allowed = await check(self.active_token, token_of(scope), cookie(scope, settings.SESSION_COOKIE_NAME))
            except OperationalError as error:
                if not db_pool.pool_exhausted(error):
                    raise
                retry = [(b"retry-after", str(db_pool.RETRY_AFTER).encode())]
                return await respond(send, 503, db_pool.busy_detail(), db_pool.CODE, retry)
            if not allowed:
                detail = "Authentication credentials were not provided or are not valid."
                return await respond(send, 401, detail, "not_authenticated", [(b"www-authenticate", b"Token")])
            if allowed is not True:  # the API's token authentication takes it from here instead of a second query
                scope = {**scope, CHECKED_TOKEN: allowed}
        declared = header(scope, b"content-length")
        if declared is not None and declared.strip().isdecimal() and int(declared) > limit:
            return await respond(send, 413, too_large(limit, setting, int(declared)), "too_large")
        await self.app(scope, *CountedBody(receive, send, limit, setting).channels())


class CountedBody:
    """``receive``/``send`` for the application that stop the body at ``limit`` bytes with a 413."""

    def __init__(self, receive, send, limit: int, setting: str):
        self.receive, self.send, self.limit, self.setting = receive, send, limit, setting
        self.size, self.refused = 0, False

    def channels(self):
        return self.counted_receive, self.guarded_send

    async def counted_receive(self):
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self.receive()
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.limit:
                self.refused = True
                await respond(self.send, 413, too_large(self.limit, self.setting), "too_large")
                return {"type": "http.disconnect"}  # Django stops reading and answers nothing more
        return message

    async def guarded_send(self, message):
        if not self.refused:
            await self.send(message)
