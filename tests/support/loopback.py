"""A real HTTP server on a free loopback port that records every request it receives, for tests that check who
calls what: a service a template's scripts must not reach, an upstream that redirects, the host a redirect points
to. ``answer(request)`` gives ``(status, headers, body)``; by default every request gets an empty 204."""

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    method: str
    path: str
    headers: dict
    body: bytes


@dataclass
class Loopback:
    url: str
    requests: list[Request] = field(default_factory=list)


Answer = Callable[[Request], tuple[int, dict, bytes]]


def empty(request: Request) -> tuple[int, dict, bytes]:
    return 204, {}, b""


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@contextlib.contextmanager
def loopback_server(answer: Answer = empty, host: str = "127.0.0.1") -> Iterator[Loopback]:
    """``host``: the loopback address it listens on (``127.0.0.2``, ``::1`` ...)."""
    server_seen: list[Request] = []

    class Handler(BaseHTTPRequestHandler):
        def handle_one(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
            server_seen.append(request)
            status, headers, body = answer(request)
            self.send_response(status)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_HEAD = do_OPTIONS = handle_one  # noqa: N815 - the http.server hook names

        def log_message(self, *args):
            pass

    server = (_Server6 if ":" in host else ThreadingHTTPServer)((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        shown = f"[{host}]" if ":" in host else host
        yield Loopback(f"http://{shown}:{server.server_port}", server_seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
