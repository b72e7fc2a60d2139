"""The order pytest-xdist hands modules to its processes: the heaviest first, so that they finish together.

With ``--dist loadfile`` a module runs whole in one process, and xdist hands modules out in the collection's order
(``--no-loadscope-reorder``; its default order, most tests first, left the modules with a few long tests, such as
the oracle and the platform starts, to the end, where one process ran them while the others had nothing left).
A module's weight is its seconds in ``tests/module_seconds.json`` (written by ``pytest --record-module-seconds``
from a whole run), or for a module not in it an estimate from what its tests need (``tests/support/markers.py``).
"""

import json
from collections import defaultdict
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "module_seconds.json"

# Estimates for a module the file does not have yet: seconds per test by what it needs, once per module for its
# browser, servers or worker.
ESTIMATE = {"slow": 120.0, "processes": 4.0, "browser": 4.0, "s3": 2.0}
PLAIN = 0.1
SETUP = 15.0


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def module_key(item) -> str:
    return module_of(item.nodeid)


def estimate(items) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    set_up: set[str] = set()
    for item in items:
        key = module_key(item)
        needs = {mark.name for mark in item.iter_markers()} & set(ESTIMATE)
        if needs and key not in set_up:
            set_up.add(key)
            seconds[key] += SETUP
        seconds[key] += sum(ESTIMATE[mark] for mark in needs) or PLAIN
    return seconds


def heaviest_modules_first(items) -> None:
    """Sort ``items`` by their module's weight, heaviest first (stable: a module's tests stay together, in order)."""
    measured = json.loads(FILE.read_text()) if FILE.exists() else {}
    weight = {**estimate(items), **measured}
    items.sort(key=lambda item: -weight[module_key(item)])


class ModuleSeconds:
    """``--record-module-seconds``: sums each module's setup, call and teardown seconds over a run (in the
    controller when the run is parallel) and writes them into ``tests/module_seconds.json`` (whole seconds; the
    modules this run did not take keep their figures, those no longer on disk are dropped)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        if getattr(session.config, "workerinput", None) is not None:
            return  # an xdist process: the controller has every report
        figures = json.loads(FILE.read_text()) if FILE.exists() else {}
        figures.update({module: max(1, round(seconds)) for module, seconds in self.seconds.items()})
        kept = {module: s for module, s in figures.items() if (FILE.parents[1] / module).exists()}
        FILE.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
