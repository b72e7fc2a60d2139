"""A model endpoint that never answers: a loopback HTTP server (on a port of 8850–8899) that reads each request and
then holds it until the client gives up (closes its connection), counting the requests it got (``started``) and the
ones their client closed (``closed``); so a test sees whether a stopped run sends anything more, and when every
request it sent has ended."""

import contextlib
import select
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORTS = range(8850, 8900)


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
    for port in PORTS:
        try:
            server = HangingServer(("127.0.0.1", port), Hang)
            break
        except OSError:
            continue
    else:
        raise RuntimeError(f"no free port in {PORTS.start}–{PORTS.stop - 1}")
    thread = threading.Thread(target=server.serve_forever, name="hanging-model", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
