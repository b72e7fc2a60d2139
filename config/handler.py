"""Django's ASGI handler with its requests' sync work on a fixed set of threads.

Django runs each request's sync code (views, the ORM, middleware that must block) in a thread of its own: a
``ThreadSensitiveContext`` per request, hence a new thread per request, started and joined each time. Under load
that is as many threads as requests in flight, a hundred of them contending for one interpreter lock. Here a
request is pinned, at its first sync call, to the least busy of ``REQUEST_THREADS`` long-lived threads and keeps
that thread to its end (what "thread sensitive" asks: one connection, one transaction). A request that is still
reading its body holds no thread, so slow uploads do not take threads from the others.
"""

import tempfile
from concurrent.futures import Executor, Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler


class RequestThreads:
    """``size`` single-thread executors and how many requests each is pinned to (touched from the event loop's
    thread only: ``run_in_executor`` submits from there)."""

    def __init__(self, size: int):
        self.executors = [ThreadPoolExecutor(1, thread_name_prefix=f"request-{index}") for index in range(size)]
        self.load = [0] * size

    def pin(self) -> int:
        index = min(range(len(self.load)), key=self.load.__getitem__)
        self.load[index] += 1
        return index

    def unpin(self, index: int) -> None:
        self.load[index] -= 1


class PinnedExecutor(Executor):
    """One request's executor: the first call picks a thread of ``threads``, every later call goes to it."""

    def __init__(self, threads: RequestThreads):
        self.threads, self.index = threads, None

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if self.index is None:
            self.index = self.threads.pin()
        return self.threads.executors[self.index].submit(fn, *args, **kwargs)

    def release(self) -> None:
        if self.index is not None:
            self.threads.unpin(self.index)
            self.index = None


class PooledASGIHandler(ASGIHandler):
    """``ASGIHandler`` whose requests share ``threads`` instead of starting a thread each."""

    def __init__(self, threads: int):
        super().__init__()
        self.threads = RequestThreads(threads)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = PinnedExecutor(self.threads)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            executor.release()

    async def read_body(self, receive):
        """The body as Django reads it, kept in memory up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (what a view may read
        whole: a recorder's batch, 16 MiB) instead of ``FILE_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MiB), past which Django
        wrote it to a temporary file from the event loop and the view read it back. Larger bodies still go to disk."""
        size = max(settings.FILE_UPLOAD_MAX_MEMORY_SIZE, settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)
        body = tempfile.SpooledTemporaryFile(max_size=size, mode="w+b")  # noqa: SIM115 (the request closes it)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                body.close()
                raise RequestAborted()
            if "body" in message:
                body.write(message["body"])
            if not message.get("more_body", False):
                break
        body.seek(0)
        return body
