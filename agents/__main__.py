"""``python -m agents``: run a baseline on a TurkingBench directory, without the platform.

    python -m agents --data DIR --solver oracle --split test_easy --per-task 3 --seed 0 --out scores.json \\
        [--actions gold_actions.json] [--metric paper] [--tasks NAME ...] [--scripts vendored|original]

Serves the directory's pages on loopback, runs the solver in headless Chromium, writes the scores (the
evaluation output of ``docs/agents.md`` plus ``solver``, ``seed``, ``sampled``) and, with ``--actions``, the calls
made per field: for the oracle, the gold action sequences.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from .browser import make_driver
from .harness import run
from .scoring import METRICS
from .server import serve
from .solvers import BASELINES, Oracle
from .turkle import Dataset
from .vendor import MODES, VENDORED


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="TurkingBench directory (tasks/, splits/).")
    parser.add_argument("--solver", required=True, choices=sorted(BASELINES))
    parser.add_argument("--split", default="test_easy", help="test_easy, test_hard, subjective_test, train or all.")
    parser.add_argument("--tasks", nargs="*", help="Only these tasks (instead of the split).")
    parser.add_argument("--per-task", type=int, default=None, help="Instances per task (default: all).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", choices=METRICS, default="official")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--actions", type=Path, help="Write the calls made per field (the oracle's gold actions).")
    parser.add_argument(
        "--scripts",
        choices=MODES,
        default=VENDORED,
        help="Templates' CDN libraries from the vendored copies (default) or the original URLs (needs Internet).",
    )
    args = parser.parse_args(argv)
    try:
        dataset = Dataset(args.data)
        tasks = [dataset.task(name) for name in (args.tasks or dataset.split(args.split))]
    except (FileNotFoundError, KeyError) as error:
        parser.error(str(error))
    solver = Oracle(args.seed) if args.solver == "oracle" else BASELINES[args.solver]()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that a killed run still quits its browser
    driver = make_driver(allow_network=args.scripts != VENDORED)
    try:
        with serve(dataset, args.scripts) as pages:
            result = run(
                driver,
                solver,
                tasks,
                pages.url,
                per_task=args.per_task,
                seed=args.seed,
                metric=args.metric,
                progress=lambda done, total: print(f"{done}/{total} instances", file=sys.stderr),
            )
    finally:
        driver.quit()
    scores = result.as_dict()
    args.out.write_text(json.dumps(scores, indent=2) + "\n")
    if args.actions:
        args.actions.write_text(json.dumps(result.action_sequences(), indent=2) + "\n")
    summary = scores["summary"]
    print(
        f"{solver.name}: overall {scores['overall']} over {summary['tasks_scored']} of {summary['tasks']} tasks, "
        f"{summary['instance_mean']} over {summary['instances']} instances ({scores['metric']} metric)"
    )
    for row in summary["tasks_unscorable"]:
        print(f"  left out of the task mean: {row['task']}: {row['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
