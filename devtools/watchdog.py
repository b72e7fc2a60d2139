"""``python -m devtools.watchdog <pgid>``: kill the process group ``pgid`` once this process's stdin closes.

``devtools.processes.spawn`` starts one beside every server it starts, holding the write end of the pipe on the
watchdog's stdin. Once the test has stopped the server itself, ``release`` writes a byte and closes the pipe: the
watchdog leaves. If the pipe closes with nothing written, the test process ended without stopping the server,
however it ended (SIGTERM, SIGKILL, whichever of its threads started the server): the watchdog then sends SIGKILL
to the whole group, so the server and every process it started go with it. In its own session, it does not get
the signals sent to the test run's process group.

A group whose leader is still the process that was started is killed; if a different process now has the
leader's pid, the number was reused and nothing is killed. While any member of the group lives, the kernel does
not give its number to a new process.
"""

import contextlib
import os
import signal
import sys
from pathlib import Path


def started_at(pid: int) -> str | None:
    """The process's start time (``/proc/<pid>/stat`` field 22), None when no process has this pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def main() -> int:
    pgid = int(sys.argv[1])
    leader = started_at(pgid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the test run, which then lets go
    if sys.stdin.buffer.read():  # returns at end of file: the server was released (a byte) or its starter ended
        return 0
    now = started_at(pgid)
    if now is None or now == leader:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
