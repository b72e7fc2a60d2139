"""The ``recorders`` benchmark's baseline server: a bare ASGI application that takes the recorder's batches
(``POST /api/recordings/<name>/bundle/``, token-authenticated) and does only the work a batch needs, with no
framework request stack (no Django handler, middleware, DRF view, throttles or response rendering).

Per batch, on one of ``REQUEST_THREADS`` long-lived threads (through ``sync_to_async``, as Django runs a view), each
with its own database connection, kept open: the token looked up (``hotsql.active_token``, one query), the
recording and the uploader's role read with the platform's access check (``actions.check_demo_for_bundle``, one
query), then the platform's own action, ``actions.do_ingest_bundle``: inflate, every blob's sha256 and content (PNG,
bboxes, HTML) checked and the turns validated, files written and fsynced, blob and turn rows inserted in one
transaction, the live session told. The answer is the action's JSON. Served by ``config.serve`` with ``--app
bench.bare:application``: the same uvicorn settings and process count as the platform
(``bench.ingest.asgi_server_process``)."""

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor

import django
from asgiref.sync import sync_to_async

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402
from django.db import close_old_connections  # noqa: E402

from annotation import actions  # noqa: E402
from annotation.store import hotsql  # noqa: E402

BUNDLE_PATH = re.compile(r"^/api/recordings/([^/]+)/(?:bundle|batch)/$")
THREADS = ThreadPoolExecutor(max(1, settings.REQUEST_THREADS), thread_name_prefix="bare")


def ingest(name: str, authorization: str, content_type: str, encoding: str | None, body: bytes) -> tuple[int, dict]:
    """One batch: (status, JSON answer)."""
    scheme, _, key = authorization.partition(" ")
    token = hotsql.active_token(key) if scheme == "Token" and key else None
    if token is None:
        return 401, {"detail": "a valid API token is required", "code": "not_authenticated", "errors": []}
    try:
        demo = actions.check_demo_for_bundle(token.user, name)
        result = actions.do_ingest_bundle(demo, body, content_type, encoding, token.user)
    except actions.ActionError as error:
        return error.status, error.as_dict()
    except Exception as error:  # a broken connection must not stay in this thread for the next batch
        close_old_connections()
        return 500, {"detail": f"{type(error).__name__}: {error}", "code": "error", "errors": []}
    return (201 if result.created else 200), result.as_dict()


async def read_body(receive, limit: int) -> bytes | None:
    """The whole body, or None past ``limit`` bytes or when the client went away."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if size > limit:
            return None
        if not message.get("more_body", False):
            return b"".join(parts)


async def application(scope, receive, send):
    if scope["type"] != "http":
        return
    found = BUNDLE_PATH.match(scope["path"])
    if scope["method"] != "POST" or found is None:
        return await answer(send, 404, {"detail": "only POST /api/recordings/<name>/bundle/", "code": "not_found"})
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
    body = await read_body(receive, settings.INGEST_MAX_UPLOAD_BYTES)
    if body is None:
        return await answer(send, 413, {"detail": "body exceeds INGEST_MAX_UPLOAD_BYTES", "code": "too_large"})
    args = (found[1], headers.get("authorization", ""), headers.get("content-type", ""))
    # through asgiref, as Django runs a view: the live notification's ``async_to_sync`` then runs on this event loop
    # (a plain executor thread would start an event loop, and a Redis connection, per batch)
    status, data = await sync_to_async(ingest, thread_sensitive=False, executor=THREADS)(
        *args, headers.get("content-encoding"), body
    )
    await answer(send, status, data)


async def answer(send, status: int, data: dict) -> None:
    body = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
