"""Several ASGI server processes on one port, the kernel spreading connections evenly over them.

``python -m config.serve --host 0.0.0.0 --port 8000 --workers N`` (``config.server.server_command`` with
``workers`` > 1). uvicorn's own ``--workers`` shares one listening socket among its processes: whichever process
is awake when connections arrive accepts them, often all that are queued at once, so long-lived keep-alive
connections pile up on one process while the other idles (100 recorders split 81/10 in the ``recorders`` bench,
the busy process answering in 25 s). Here the supervisor binds one socket per process with ``SO_REUSEPORT``
before any process starts, and the kernel hands each new connection to one of them by a hash of its addresses:
an even split whatever the processes are doing (the way nginx's ``reuseport`` works).

Each process is uvicorn's ``Server`` serving ``config.asgi`` with the settings of ``config.server.UVICORN`` on the
socket it inherits. A process that exits unexpectedly is started again on a new socket (connections queued on the
old one are reset, and clients retry); one that could not start (the application failed to load, exit status
``STARTUP_FAILURE``) stops the whole server with an error, as a broken configuration fails every restart alike.
SIGTERM or SIGINT stops every process gracefully (uvicorn's ``timeout_graceful_shutdown``), then kills what is
left. Linux only (``SO_REUSEPORT`` balancing, ``PR_SET_PDEATHSIG`` so no process outlives a killed supervisor)."""

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import traceback

from config.server import APPLICATION, UVICORN

STARTUP_FAILURE = 3  # a server process's exit status when it never served (uvicorn's own code for it)
STOP_SECONDS = UVICORN["timeout_graceful_shutdown"] + 5  # then the processes still running are killed
PR_SET_PDEATHSIG = 1

log = logging.getLogger("config.serve")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port with SO_REUSEPORT, listening, inheritable by a child process."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


class Worker:
    """One server process, serving on ``sock``."""

    def __init__(self, sock: socket.socket, app: str = APPLICATION):
        fd = sock.fileno()
        command = [sys.executable, "-m", "config.serve", "--child-fd", str(fd), "--parent", str(os.getpid())]
        command += ["--app", app] if app != APPLICATION else []
        self.process = subprocess.Popen(command, pass_fds=[fd])
        sock.close()  # the process holds the socket now: it leaves the port's group when the process ends


class Supervisor:
    def __init__(self, host: str, port: int, workers: int, app: str = APPLICATION):
        self.host, self.port, self.count, self.app = host, port, workers, app
        self.workers: list[Worker] = []
        self.stopping = False

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.stop)
        sockets = [listening_socket(self.host, self.port) for _ in range(self.count)]  # all bound before any serves
        self.workers = [Worker(sock, self.app) for sock in sockets]
        log.info("serving on %s:%s with %d processes %s", self.host, self.port, self.count, self.pids())
        status = 0
        while not self.stopping:
            status = self.replace_exited()
            if status:
                break
            time.sleep(0.2)
        self.stop_all()
        return status

    def pids(self) -> list[int]:
        return [worker.process.pid for worker in self.workers]

    def stop(self, signum, frame) -> None:
        self.stopping = True

    def replace_exited(self) -> int:
        """Start again each process that exited; non-zero if one could not start (then the server stops)."""
        for index, worker in enumerate(self.workers):
            code = worker.process.poll()
            if code is None or self.stopping:
                continue
            if code == STARTUP_FAILURE:
                log.error("server process %d could not start: stopping", worker.process.pid)
                return code
            log.warning("server process %d exited with %d: starting another", worker.process.pid, code)
            self.workers[index] = Worker(listening_socket(self.host, self.port), self.app)
        return 0

    def stop_all(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for worker in self.workers:
            try:
                worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()


try:
    PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up once, so a forked child only calls it
except (OSError, AttributeError):  # not Linux
    PRCTL = None


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent ends, however it ends (a SIGKILL included);
    False when ``parent`` is already gone (it died before the request took effect). Safe in a ``preexec_fn``. Linux
    only (``PR_SET_PDEATHSIG``; elsewhere nothing is asked)."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, sig)
    return os.getppid() == parent


def dies_with_this_process(sig: int = signal.SIGTERM, before=None):
    """A ``preexec_fn`` for ``subprocess.Popen``: the child is sent ``sig`` when the process starting it ends (the
    starting thread, in fact: start children from the main thread); ``before`` runs first. `make run`'s children
    use it."""
    parent = os.getpid()

    def preexec():
        if before is not None:
            before()
        if not die_with_parent(parent, sig):
            os._exit(1)  # the parent ended while this process was starting

    return preexec


def serve_socket(fd: int, parent: int, app: str = APPLICATION) -> int:
    """A server process: uvicorn serving ``app`` (``config.asgi``) on the inherited socket ``fd``; ends with its parent.
    Returns ``STARTUP_FAILURE`` if it never served (the application did not load, or its startup failed)."""
    if not die_with_parent(parent):
        return 0
    import uvicorn

    config = uvicorn.Config(app, **UVICORN)
    try:
        config.load()  # imports config.asgi: the settings' and the application's errors come here
    except SystemExit:  # uvicorn logged why
        return STARTUP_FAILURE
    except Exception:
        traceback.print_exc()
        return STARTUP_FAILURE
    server = uvicorn.Server(config)
    server.run(sockets=[socket.socket(fileno=fd)])  # family and type are read from the descriptor
    return 0 if server.started else STARTUP_FAILURE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: one per core)")
    parser.add_argument("--app", default=APPLICATION, help=argparse.SUPPRESS)  # another ASGI app: the benchmarks'
    parser.add_argument("--child-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parent", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child_fd is not None:
        return serve_socket(options.child_fd, options.parent, options.app)
    if options.workers < 1:
        parser.error("--workers must be at least 1")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
    try:
        return Supervisor(options.host, options.port, options.workers, options.app).run()
    except OSError as error:
        log.error("cannot listen on %s:%s: %s", options.host, options.port, error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
