"""How the platform's ASGI server is started (pure: `make run`, the tests' processes and the benchmarks share it)."""

import sys

APPLICATION = "config.asgi:application"
# uvicorn's settings, as ``uvicorn.Config`` keywords; the command line below and ``config.serve`` both use them.
# ``proxy_headers`` off: uvicorn would otherwise believe ``X-Forwarded-For`` from any loopback client (its default
# ``FORWARDED_ALLOW_IPS``), so anything on the host could pick the address the sign-in throttle counts. Forwarded
# headers are read by the application instead, from the proxies ``TRUSTED_PROXIES`` names (config/asgi.py).
# ``loop`` and ``http``: libuv's event loop and the C HTTP parser (requirements.txt), named so that a missing one
# fails at start instead of falling back to asyncio's loop and h11 (~10 % more CPU a recorder upload).
UVICORN = {
    "lifespan": "off",
    "loop": "uvloop",
    "http": "httptools",
    "ws": "websockets-sansio",
    "timeout_graceful_shutdown": 10,
    "proxy_headers": False,
}


def option(key: str, value) -> list[str]:
    """One ``uvicorn.Config`` keyword as uvicorn's command-line option (booleans are ``--x`` / ``--no-x``)."""
    name = key.replace("_", "-")
    if isinstance(value, bool):
        return [f"--{name}" if value else f"--no-{name}"]
    return [f"--{name}", str(value)]


def uvicorn_options() -> list[str]:
    """``UVICORN`` as uvicorn's command-line options."""
    return [part for key, value in UVICORN.items() for part in option(key, value)]


def server_command(host: str, port: int, workers: int = 1, app: str = APPLICATION) -> list[str]:
    """uvicorn serving HTTP and WebSocket (``config.asgi``). Not Daphne: Daphne receives a whole request body before
    the application runs, so a size or credential check could only come after a 300 MB upload (docs/limits.md);
    uvicorn hands the body over as it arrives and stops reading while the application does not ask for more.
    ``workers`` > 1: that many processes on the port, each with its own listening socket so that connections spread
    evenly (``config.serve``; production: one per core, docs/deployment.md). ``app``: another ASGI application
    served the same way (the benchmarks' baselines)."""
    if workers > 1:
        command = [sys.executable, "-m", "config.serve", "--host", host, "--port", str(port), "--workers", str(workers)]
        return command + (["--app", app] if app != APPLICATION else [])
    return [sys.executable, "-m", "uvicorn", app, "--host", host, "--port", str(port)] + uvicorn_options()
