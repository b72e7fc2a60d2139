"""A tiny HTTP server on loopback that serves the preview pages of a TurkingBench directory.

For tests, benchmarks and offline evaluation: ``GET /tasks/<quoted task name>/<instance>/`` answers the page
``TaskDir.render_page`` builds (Turkle's preview iframe). ``serve_pages`` serves any page function: the platform's
agent runs serve its own preview pages of form tasks with it, with the headers of the web app's task frames
(``headers``: the sandboxing CSP, so a template's scripts cannot reach loopback services from the agent's browser).
The harness only needs a URL per instance. ``GET /static/vendor/<file>`` answers the vendored template libraries
(``agents.vendor``), at the same path as the web app, so a page's rewritten script URLs load here too.
"""

from __future__ import annotations

import contextlib
import mimetypes
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import vendor
from .originguard import QuietServer
from .turkle import Dataset


def instance_path(task: str, instance: int) -> str:
    return f"/tasks/{urllib.parse.quote(task, safe='')}/{instance}/"


class TaskPages:
    """The running server: ``url(task, instance)`` gives an instance's page."""

    def __init__(self, server: ThreadingHTTPServer, dataset: Dataset | None = None):
        self.dataset = dataset  # what ``serve`` serves (None for ``serve_pages``)
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}"

    def url(self, task: str, instance: int) -> str:
        return self.base_url + instance_path(task, instance)


def _handler(page_for: Callable[[str, int], str], page_headers: Mapping[str, str]):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server hook name
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            if path.startswith(vendor.VENDOR_URL):
                return self._send_vendored(path)
            parts = urllib.parse.urlsplit(self.path).path.strip("/").split("/")
            if len(parts) != 3 or parts[0] != "tasks" or not parts[2].isdecimal():
                return self._send(404, "not found")
            try:
                page = page_for(urllib.parse.unquote(parts[1]), int(parts[2]))
            except (KeyError, IndexError) as error:
                return self._send(404, str(error))
            return self._send(200, page, "text/html; charset=utf-8", page_headers)

        def _send_vendored(self, path: str):
            file = vendor.vendored_file(path)
            if file is None:
                return self._send(404, "not found")
            media = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            if media.startswith("text/") or media.endswith("javascript"):
                media += "; charset=utf-8"
            data = file.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Access-Control-Allow-Origin", "*")  # fonts, from the pages' opaque origins
            self.end_headers()
            self.wfile.write(data)

        def _send(self, status: int, body: str, media: str = "text/plain; charset=utf-8", headers=None):
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            for name, value in {"Cache-Control": "no-store", **(headers or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet: one line per page would drown the test output
            pass

    return Handler


def serve(dataset: Dataset, scripts: str = vendor.VENDORED):
    """Serve ``dataset``'s pages on a free loopback port for the duration of the block; ``scripts``: ``vendored``
    (the templates' CDN libraries from ``/static/vendor/``) or ``original`` (the CDN URLs as written)."""
    return serve_pages(lambda task, instance: dataset.task(task).render_page(instance, scripts=scripts), dataset)


@contextlib.contextmanager
def serve_pages(
    page_for: Callable[[str, int], str], dataset: Dataset | None = None, headers: Mapping[str, str] | None = None
) -> Iterator[TaskPages]:
    """Serve ``page_for(task, instance)`` (KeyError/IndexError → 404) on a free loopback port for the block, each
    page with ``headers``."""
    server = QuietServer(("127.0.0.1", 0), _handler(page_for, dict(headers or {})))
    thread = threading.Thread(target=server.serve_forever, name="turkingbench-pages", daemon=True)
    thread.start()
    try:
        yield TaskPages(server, dataset)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
