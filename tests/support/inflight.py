"""Requests the test process's live server is still answering (``InFlight``, outermost in the test settings'
middleware): a test's teardown waits until none is left before the database is emptied, as a request still
querying deadlocked with the flush's TRUNCATE (PostgreSQL then aborted the flush and the rows stayed)."""

import contextlib
import threading
import time

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

_lock = threading.Lock()
_count = 0


@contextlib.contextmanager
def counted():
    global _count
    with _lock:
        _count += 1
    try:
        yield
    finally:
        with _lock:
            _count -= 1


def wait_idle(timeout: float = 30) -> bool:
    """Wait until no request is being answered in this process; False when some still are after ``timeout``."""
    deadline = time.monotonic() + timeout
    while _count and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _count


class InFlight:
    """Counts the requests being answered (sync and async)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self._answer(request)
        with counted():
            return self.get_response(request)

    async def _answer(self, request):
        with counted():
            return await self.get_response(request)
