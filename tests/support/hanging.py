"""A model endpoint that never answers: a loopback HTTP server (on a free port) that reads each request and
then holds it until the client gives up (closes its connection), counting the requests it got (``started``) and the
ones their client closed (``closed``); so a test sees whether a stopped run sends anything more, and when every
request it sent has ended."""

import contextlib
import select
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from devtools.standin_model import serving


class HangingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler):
        super().__init__(address, handler)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.started = self.closed = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def note(self, what: str) -> None:
        with self.lock:
            setattr(self, what, getattr(self, what) + 1)

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.started, self.closed


class Hang(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 - the http.server hook name
        server: HangingServer = self.server
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.note("started")
        self.close_connection = True
        while not server.stopping.is_set():  # no answer: wait for the client to close its end
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(65536):
                server.note("closed")
                return

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def hanging_server() -> Iterator[HangingServer]:
    with serving(HangingServer(("127.0.0.1", 0), Hang), "hanging-model") as server:
        yield server
