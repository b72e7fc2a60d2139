"""Agent evaluation benchmark: the oracle and do-nothing baselines over test_easy, 3 instances per task.

Runs the ``agents`` harness on the task directories of ``TURKINGBENCH_DATA`` (served on loopback) in one headless
Chromium: both solvers on the same seeded sample. ``instances_per_min`` counts both runs' instances over the
wall time of the two runs (browser start excluded). ``harness_share`` is the share of that wall time spent
outside the WebDriver commands themselves (Python: reading batch.csv, scoring, the loopback page server's
rendering is inside page loads); target <= 0.25. ``oracle_score`` / ``do_nothing_score``: the overall official
score (mean over tasks). ``--quick``: two tasks, one instance each.
"""

import os
import time

from agents.browser import WebDriverClock, make_driver
from agents.harness import run as run_solver
from agents.server import serve
from agents.solvers import DoNothing, Oracle
from agents.turkle import Dataset

FULL = {"per_task": 3, "tasks": None}
QUICK = {"per_task": 1, "tasks": 2}
SEED = 0


def run(quick: bool = False) -> dict:
    spec = QUICK if quick else FULL
    path = os.environ.get("TURKINGBENCH_DATA")
    if not path:
        raise SystemExit("agent_eval needs TURKINGBENCH_DATA: the directory of real TurkingBench tasks")
    dataset = Dataset(path)
    tasks = [dataset.task(name) for name in dataset.split("test_easy")[: spec["tasks"]]]
    driver = make_driver()
    try:
        clock = WebDriverClock(driver)
        with serve(dataset) as pages:
            started = time.perf_counter()
            oracle = run_solver(driver, Oracle(SEED), tasks, pages.url, per_task=spec["per_task"], seed=SEED)
            nothing = run_solver(driver, DoNothing(), tasks, pages.url, per_task=spec["per_task"], seed=SEED)
            wall = time.perf_counter() - started
            in_webdriver = clock.seconds  # before quit(), which is a WebDriver command too
    finally:
        driver.quit()
    instances = len(oracle.instances) + len(nothing.instances)
    return {
        "instances": instances,
        "instances_per_min": round(instances / wall * 60, 1),
        "oracle_score": round(oracle.as_dict()["overall"], 4),
        "do_nothing_score": round(nothing.as_dict()["overall"], 4),
        "harness_share": round((wall - in_webdriver) / wall, 3),
    }
