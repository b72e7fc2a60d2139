"""How the platform's ASGI server is started (pure: `make run`, the tests' processes and the benchmarks share it)."""

import sys


def server_command(host: str, port: int, workers: int = 1) -> list[str]:
    """uvicorn serving HTTP and WebSocket (``config.asgi``). Not Daphne: Daphne receives a whole request body before
    the application runs, so a size or credential check could only come after a 300 MB upload (docs/limits.md);
    uvicorn hands the body over as it arrives and stops reading while the application does not ask for more.
    ``workers`` > 1: that many processes on the port (production: one per core, docs/deployment.md)."""
    return [
        *(sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", host, "--port", str(port)),
        *("--lifespan", "off", "--ws", "websockets-sansio", "--timeout-graceful-shutdown", "10"),
        *(("--workers", str(workers)) if workers > 1 else ()),
    ]
