"""Several server processes on one port (``config.serve``): connections spread over them, a process that dies is
replaced while the others keep answering, SIGTERM stops them all, and a server that cannot start says so and
exits instead of restarting forever. Real processes on a real port; which process holds a connection is read
from /proc."""

import http.client
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from config import serve
from config.secret_key import DEVELOPMENT_KEY
from devtools.processes import ROOT, asgi_process, database_url, free_port
from tests.support.waits import wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

CONNECTIONS = 128


@pytest.fixture
def env(media_storage):
    return {"DATABASE_URL": database_url(connection.settings_dict), "MEDIA_ROOT": str(media_storage)}


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # ended meanwhile
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return sorted(found)


def established_on(port: int) -> set[str]:
    """Socket inodes of the established TCP connections whose local end is ``port``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(fields[9])
    return inodes


def sockets_of(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def healthy(port: int) -> int:
    """Status of a GET /healthz on a new connection."""
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        client.request("GET", "/healthz")
        response = client.getresponse()
        response.read()
        return response.status
    finally:
        client.close()


def test_keep_alive_connections_spread_over_the_processes(env, tmp_path):
    with asgi_process(env, tmp_path / "server.log", workers=2) as (url, supervisor):
        port = int(url.rsplit(":", 1)[1])
        clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for _ in range(CONNECTIONS)]
        for client in clients:  # one after another, as the recorders bench opens them
            client.request("GET", "/healthz")
            response = client.getresponse()
            response.read()
            assert response.status == 200
        established = established_on(port)
        per_process = {pid: len(sockets_of(pid) & established) for pid in children(supervisor.pid)}
        for client in clients:
            client.close()

    assert len(per_process) == 2, per_process
    assert sum(per_process.values()) == CONNECTIONS, per_process
    # The kernel picks a socket by a hash of each connection's addresses: 64 each on average, fewer than 32 a
    # chance of about one in 10**8. uvicorn's --workers split the same connections 13/51 (of 64) in one try here.
    assert min(per_process.values()) >= CONNECTIONS // 4, per_process


def test_a_process_that_dies_is_replaced_and_the_other_keeps_answering(env, tmp_path):
    log = tmp_path / "server.log"
    with asgi_process(env, log, workers=2) as (url, supervisor):
        port = int(url.rsplit(":", 1)[1])
        first, second = children(supervisor.pid)
        os.kill(first, signal.SIGKILL)

        def replaced():
            pids = children(supervisor.pid)
            return pids if len(pids) == 2 and first not in pids else None

        replaced = wait_until(replaced, 60, 0.2, "a new server process in place of the killed one")
        assert second in replaced
        assert [healthy(port) for _ in range(20)] == [200] * 20  # new connections reach both, the new one too
        assert supervisor.poll() is None
    assert f"server process {first} exited with -9: starting another" in log.read_text()


def test_sigterm_stops_every_process(env, tmp_path):
    with asgi_process(env, tmp_path / "server.log", workers=2) as (_, supervisor):
        pids = children(supervisor.pid)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=60) == 0
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "(Z)" in Path(f"/proc/{pid}/stat").read_text()


def run_serve(port: int, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "config.serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_a_server_that_cannot_start_exits_with_the_reason(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path)}
    env.update(SECRET_KEY=DEVELOPMENT_KEY, DEBUG="0")  # the settings refuse to load (config.E001)

    done = run_serve(free_port(), env)

    assert done.returncode == serve.STARTUP_FAILURE
    assert "config.E001" in done.stderr
    assert "could not start: stopping" in done.stderr


def test_a_port_in_use_is_refused_by_name(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        done = run_serve(port, {**os.environ, "VAR_DIR": str(tmp_path)})

    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
