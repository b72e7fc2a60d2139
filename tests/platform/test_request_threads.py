"""The ASGI handler runs requests' sync work on a fixed set of long-lived threads (config/handler.py): no thread
per request, one thread for the whole of a request, concurrent requests on different threads."""

import asyncio
import threading

import pytest
from django.http import HttpResponse
from django.urls import path

from config.handler import PooledASGIHandler

SEEN = []  # (request id, where, thread name)
BARRIER = threading.Barrier(2)


class Recorded(HttpResponse):
    """Its ``close()``, which Django calls after sending it in a sync call of its own, records its thread."""

    def close(self):
        SEEN.append((self.request_id, "close", threading.current_thread().name))
        super().close()


def where(request, name):
    SEEN.append((request.GET.get("id"), "view", threading.current_thread().name))
    if name == "together":
        BARRIER.wait(timeout=10)  # returns only when a second request is in the view at the same time
    response = Recorded("ok")
    response.request_id = request.GET.get("id")
    return response


urlpatterns = [path("<str:name>/", where)]


@pytest.fixture
def handler(settings):
    settings.ROOT_URLCONF = __name__
    SEEN.clear()
    BARRIER.reset()
    return PooledASGIHandler(2)


async def call(app, path: str, request_id: str) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": f"id={request_id}".encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    sent, received = [], asyncio.Event()

    async def receive():
        if not received.is_set():
            received.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"]


def view_threads() -> set:
    return {name for _, step, name in SEEN if step == "view"}


def test_requests_reuse_the_handlers_threads_instead_of_starting_one_each(handler):
    async def requests():
        return [await call(handler, "/alone/", str(index)) for index in range(6)]

    before = threading.active_count()
    assert asyncio.run(requests()) == [200] * 6

    assert view_threads() <= {"request-0_0", "request-1_0"}
    assert threading.active_count() <= before + 2  # at most the two, whatever the number of requests
    assert handler.threads.load == [0, 0]  # every request let its thread go


def test_concurrent_requests_run_on_different_threads(handler):
    async def requests():
        return await asyncio.gather(call(handler, "/together/", "a"), call(handler, "/together/", "b"))

    assert asyncio.run(requests()) == [200, 200]  # on one thread the barrier would time out (a 500)
    assert view_threads() == {"request-0_0", "request-1_0"}
    assert handler.threads.load == [0, 0]


def test_a_request_keeps_its_thread_from_its_first_sync_call_to_its_last(handler):
    """Thread sensitive: a request's connection and transaction live on one thread."""

    async def requests():
        return await asyncio.gather(*(call(handler, "/alone/", str(index)) for index in range(6)))

    assert asyncio.run(requests()) == [200] * 6
    steps = {(request_id, step): name for request_id, step, name in SEEN}
    assert len(steps) == 12
    assert all(steps[(str(index), "view")] == steps[(str(index), "close")] for index in range(6))
    assert view_threads() == {"request-0_0", "request-1_0"}  # six at once: spread over both


def body_messages(size: int, chunk: int = 65536) -> list[dict]:
    data = bytes(size)
    pieces = [data[start : start + chunk] for start in range(0, size, chunk)]
    return [{"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1} for i, piece in enumerate(pieces)]


def read_body(handler, messages: list[dict]):
    queue = iter(messages)

    async def receive():
        return next(queue)

    return asyncio.run(handler.read_body(receive))


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 12 * 1024 * 1024])
def test_a_body_a_view_may_read_whole_is_kept_in_memory(handler, settings, size):
    """Django spools a body past FILE_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) to a temporary file, written from the event
    loop; up to DATA_UPLOAD_MAX_MEMORY_SIZE (what a recorder's batch may be) it stays in memory here."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024

    body = read_body(handler, body_messages(size))

    assert not body._rolled
    assert body.read() == bytes(size)


def test_a_body_past_what_a_view_may_read_whole_goes_to_disk(handler, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

    body = read_body(handler, body_messages(3 * 1024 * 1024))

    assert body._rolled
    assert len(body.read()) == 3 * 1024 * 1024


def test_a_client_gone_while_sending_its_body_aborts_the_request(handler):
    from django.core.exceptions import RequestAborted

    with pytest.raises(RequestAborted):
        read_body(handler, [*body_messages(200_000)[:2], {"type": "http.disconnect"}])
