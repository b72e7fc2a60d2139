"""Real processes for tests: a Python child with given settings, and a server with small body limits."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

from django.db import connection

from devtools.processes import ROOT, asgi_server, database_url


def default_signals() -> None:
    """A child's ``preexec_fn``: it starts with default SIGINT and SIGTERM handling, as from a shell, whatever this
    process has (a test run started as a script's background job inherits SIGINT ignored, and so would its
    children, which then never see the Ctrl-C a test sends them)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_python(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    """``python -c code`` with the real settings (not the test settings), a fresh VAR_DIR and ``env``."""
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path), **env}
    for name in [name for name, value in env.items() if value is None]:
        environment.pop(name)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


@contextlib.contextmanager
def limited_server(media_storage, log, **limits):
    """The real server on the test's database and files, with these limit settings; yields its URL."""
    env = {"DATABASE_URL": database_url(connection.settings_dict), "MEDIA_ROOT": str(media_storage)}
    with asgi_server({**env, **{name: str(value) for name, value in limits.items()}}, log) as url:
        yield url


class Upload:
    """A raw HTTP request whose body a thread keeps sending (up to ``total`` bytes) while the test reads the answer;
    ``sent`` says how much of the body had left when the answer was complete."""

    def __init__(self, port: int, head: str, total: int, chunked: bool = False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        self.sock.sendall(head.encode() + b"\r\n")
        self.total, self.chunked, self.sent, self.stopped = total, chunked, 0, threading.Event()
        self.thread = threading.Thread(target=self.send_body, daemon=True)
        self.thread.start()

    def send_body(self):
        piece = b"x" * 65536
        frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if self.chunked else piece
        try:
            while self.sent < self.total and not self.stopped.is_set():
                self.sock.sendall(frame)
                self.sent += len(piece)
        except OSError:  # the server closed the connection: it read no more
            pass

    def answer(self) -> tuple[int, bytes, int]:
        """``(status, body, bytes of the body sent by then)``."""
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + content_length(data):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            data += chunk
        sent = self.sent
        self.stopped.set()
        self.sock.close()
        self.thread.join(timeout=30)
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split()[1]), body, sent


def content_length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0
