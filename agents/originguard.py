"""Keeps an agent's browser on the task server's origin: a tiny forward proxy in the harness's process (no Django).

A task template's scripts run in the agent's browser. The frame CSP stops their XHR, fetch, beacons and images, but
not the page navigating itself (``location.href = 'http://127.0.0.1:<port>/'``), opening a window or submitting a
form elsewhere, and a solver reads (and the ``llm`` solver sends to a model endpoint) whatever page the browser then
shows. So ``agents.browser.make_driver()`` starts Chromium with ``--proxy-server`` pointing at an ``OriginGuard``
and ``--proxy-bypass-list=<-loopback>`` (loopback goes through the proxy too): every request the browser makes
(pages, scripts, navigations, windows, forms, for every host and port, ``localhost``, ``[::1]``, ``127.0.0.2``
included) reaches the guard, which forwards it only to an allowed origin (scheme, host, port) and answers everything
else with a 403 of its own, so the other server receives nothing. The harness allows the origin of each instance's
URL before loading it (``allow_only``).

With ``public=True`` (``make_driver(allow_network=True)``: templates loading their libraries from the CDNs), the
guard also forwards to hosts whose every address is global (``agents.netguard``), connecting to the very address it
checked; loopback, private and link-local hosts stay refused.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import select
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import netguard

log = logging.getLogger(__name__)

BYPASS_NONE = "<-loopback>"  # Chromium's proxy bypass rule that sends loopback through the proxy as well
REFUSED = b"Refused by the agent browser's origin guard: only the task server's origin may be loaded.\n"
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}
CONNECT_TIMEOUT = 10
REPLY_TIMEOUT = 300  # a page the task server takes longer over is cut (the browser's page load gives up at 60 s)
DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]


def origin_of(url: str) -> Origin | None:
    """``(scheme, host, port)`` of an http(s) URL (the host lower-cased, IPv6 without brackets), None otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    return scheme, host, port or DEFAULT_PORTS[scheme]


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that says nothing when a client goes away mid-answer (a browser ended or killed at a
    limit, a cancel or an interrupt): only other errors are printed, as ``socketserver`` does."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # broken pipe, reset, aborted
            log.debug("a client of %s went away mid-answer", self.server_address)
            return
        super().handle_error(request, client_address)


class OriginGuard:
    """The proxy (see the module docstring): ``start()`` listens on a free loopback port (``address``), ``stop()``
    ends it. ``refused`` lists what it refused (``"GET http://127.0.0.1:8001/secret"``), for tests and logs."""

    def __init__(self, public: bool = False):
        self.public = public
        self.allowed: frozenset[Origin] = frozenset()
        self.refused: collections.deque[str] = collections.deque(maxlen=1000)  # the latest
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def allow_only(self, *urls: str) -> None:
        """From now on forward only to the origins of ``urls`` (and public hosts with ``public``)."""
        self.allowed = frozenset(origin for origin in map(origin_of, urls) if origin)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def chrome_flags(self) -> tuple[str, ...]:
        return (f"--proxy-server=http://{self.address}", f"--proxy-bypass-list={BYPASS_NONE}")

    def start(self) -> OriginGuard:
        self._server = QuietServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="agents-origin-guard", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None

    def target(self, origin: Origin | None) -> str | None:
        """The address to connect to for ``origin``, None when it is refused."""
        if origin is None:
            return None
        if origin in self.allowed:
            return origin[1]
        if not self.public:
            return None
        try:
            addresses = netguard.resolve_host(origin[1], origin[2])
        except netguard.Unresolvable:
            return None
        return addresses[0] if netguard.refused_kind(addresses) is None else None


def _handler(guard: OriginGuard):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_CONNECT(self):  # noqa: N802 - the http.server hook name
            host, _, port = self.path.rpartition(":")
            origin = ("https", host.strip("[]").lower(), int(port)) if port.isdecimal() else None
            address = guard.target(origin)
            if address is None:
                return self._refuse()
            try:
                upstream = socket.create_connection((address, origin[2]), timeout=CONNECT_TIMEOUT)
            except OSError:
                return self._fail()
            self.send_response(200, "Connection Established")
            self.end_headers()
            self.close_connection = True
            with upstream:
                _relay(self.connection, upstream)

        def forward(self):
            origin = origin_of(self.path)
            address = guard.target(origin) if origin and origin[0] == "http" else None
            if address is None:
                return self._refuse()
            if "transfer-encoding" in {name.lower() for name in self.headers}:
                return self._fail(411, b"The origin guard forwards request bodies with a Content-Length only.\n")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = urllib.parse.urlsplit(self.path)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            lines = [f"{self.command} {target} HTTP/1.1"]
            lines += [f"{k}: {v}" for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
            lines.append("Connection: close")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            try:
                upstream = socket.create_connection((address, origin[2]), timeout=CONNECT_TIMEOUT)
            except OSError:
                return self._fail()
            self.close_connection = True
            with upstream:
                upstream.sendall(head + body)
                upstream.settimeout(REPLY_TIMEOUT)
                while chunk := upstream.recv(65536):  # the reply as it comes (it ends when the server closes)
                    self.wfile.write(chunk)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = forward  # noqa: N815

        def _refuse(self):
            guard.refused.append(f"{self.command} {self.path}")
            self._fail(403, REFUSED)

        def _fail(self, status: int = 502, body: bytes = b"The origin guard could not reach the server.\n"):
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, *args):  # quiet: one line per request would drown the logs
            pass

    return Handler


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes (a CONNECT tunnel)."""
    sockets = [client, upstream]
    with contextlib.suppress(OSError):
        while True:
            readable, _, _ = select.select(sockets, [], [], 60)
            if not readable:
                return
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
