"""CPU time of a process and every process under it, read from /proc (Linux): what a server spent, workers
included, between two readings. Children that already ended count only once reaped, so read while they run."""

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system seconds) of one process; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces: fields start after its ")"
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root`` and all its descendants now running."""
    parents, seconds = {}, {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)], seconds[int(entry.name)] = stat
    total = 0.0
    for pid, cpu in seconds.items():
        ancestor = pid
        while ancestor and ancestor != root:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root:
            total += cpu
    return total
