"""An ASGI application under cProfile, every thread of the server process included (the event loop's, the request
threads', the blob checkers'), for finding where a benchmark's server CPU goes: serve
``bench.profiled:application`` (the platform, ``config.asgi``) or ``bench.profiled:bare`` (``bench.bare``) the
way the benchmarks serve theirs (``config.serve --app``). Each process writes ``PROFILE_DIR/<pid>-<n>.prof`` when it
exits, one a thread."""

import atexit
import cProfile
import importlib
import os
import threading
from pathlib import Path

PROFILES: list[cProfile.Profile] = []


def profile_thread(*_) -> None:
    """A new thread's first profiling event: it gets a profile of its own (cProfile profiles one thread)."""
    profile = cProfile.Profile()
    PROFILES.append(profile)
    profile.enable()


def dump() -> None:
    """Each thread's profile to ``PROFILE_DIR/<pid>-<n>.prof`` (``pstats.Stats(*files)`` adds them up)."""
    directory = Path(os.environ.get("PROFILE_DIR") or ".")
    directory.mkdir(parents=True, exist_ok=True)
    for index, profile in enumerate(PROFILES):
        profile.disable()
        profile.dump_stats(directory / f"{os.getpid()}-{index}.prof")


def __getattr__(name: str):
    """``application``: config.asgi's, ``bare``: bench.bare's, loaded with profiling on."""
    modules = {"application": "config.asgi", "bare": "bench.bare"}
    if name not in modules:
        raise AttributeError(name)
    if not PROFILES:
        profile_thread()
        threading.setprofile(profile_thread)
        atexit.register(dump)
    return importlib.import_module(modules[name]).application
