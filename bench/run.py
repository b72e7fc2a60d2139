"""Run the benchmarks: ``python -m bench.run [--only SECTION ...] [--quick]``.

Each section's figures are merged into ``VAR_DIR/bench/latest.json`` (sections not run keep their last figures)
and printed as a table. ``--quick`` runs tiny workloads, to check that the benchmarks work, not to measure.
"""

import argparse
import datetime as dt
import importlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Section name → module with ``run(quick: bool) -> dict``. Later sections (export, live_chat ...) go here too.
SECTIONS = {
    "ingest": "bench.ingest",
    "ingest_parallel": "bench.ingest_parallel",
    "recorders": "bench.recorders",
    "export": "bench.export",
    "export_s3": "bench.export_s3",
    "export_full": "bench.export_full",
    "recorder": "bench.recorder",
    "review": "bench.review",
    "live_chat": "bench.live_chat",
    "form_tasks": "bench.form_tasks",
    "form_tasks_large": "bench.form_tasks_large",
    "agent_eval": "bench.agent_eval",
    "stats": "bench.stats",
    "quality": "bench.quality",
}


def results_path() -> Path:
    """``VAR_DIR/bench/latest.json``, VAR_DIR defaulting to ``./var`` as in the settings."""
    return Path(os.environ.get("VAR_DIR") or ROOT / "var") / "bench" / "latest.json"


def load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def save(path: Path, sections: dict) -> None:
    """Merge ``sections`` into the file, replacing it atomically so a reader never sees half of it."""
    merged = {**load(path), **sections}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)


def machine() -> dict:
    """Facts about the machine a section ran on: its cores, how loaded it was, and how fast one core runs Python
    (``sum(range(10**6))``, best of three: machines of the same kind differ)."""
    probes = []
    for _ in range(3):
        started = time.perf_counter()
        sum(range(10**6))
        probes.append(time.perf_counter() - started)
    return {
        "cores": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "python_sum_ms": round(1000 * min(probes), 1),
    }


def run_section(name: str, quick: bool) -> dict:
    facts = machine()
    started = time.monotonic()
    figures = importlib.import_module(SECTIONS[name]).run(quick=quick)
    measured_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    wall_seconds = round(time.monotonic() - started, 1)
    return {**figures, "machine": facts, "quick": quick, "measured_at": measured_at, "wall_seconds": wall_seconds}


def table(sections: dict) -> str:
    rows = [(name, key, value) for name, figures in sections.items() for key, value in figures.items()]
    width = max(len(f"{name}.{key}") for name, key, _ in rows)
    return "\n".join(f"{f'{name}.{key}':<{width}}  {value}" for name, key, value in rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), help="Run only this section (repeatable).")
    parser.add_argument("--quick", action="store_true", help="Tiny workloads: checks the benchmarks run.")
    args = parser.parse_args(argv)
    path, done = results_path(), {}
    for name in args.only or SECTIONS:
        print(f"bench: running {name}{' (quick)' if args.quick else ''} ...", flush=True)
        done[name] = run_section(name, args.quick)
        save(path, {name: done[name]})  # a later section failing keeps this one's figures
    print(table(done))
    print(f"bench: results merged into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
