"""Agent evaluation benchmark: the oracle and do-nothing baselines over test_easy, 3 instances per task, and the
``llm`` solver against the stand-in model server (``devtools.standin_model``, run in another process so that its
CPU is not counted) answering gold.

Runs the ``agents`` harness on the task directories of ``TURKINGBENCH_DATA`` (served on loopback) in headless
Chromium: both baselines on the same seeded sample in one browser. ``instances_per_min`` counts both runs'
instances over the wall time of the two runs (browser start excluded). ``harness_share`` is the share of that wall
time spent outside the WebDriver commands themselves (Python: reading batch.csv, scoring, the loopback page
server's rendering is inside page loads); target <= 0.25. ``oracle_score`` / ``do_nothing_score``: the overall
official score (mean over tasks).

The llm solver (``agents.llm_solver``): ``llm_score`` on the same sample (2 browsers; the stand-in answers at
once); ``llm_harness_cpu_ms_per_call``: this process's CPU per model call (building the prompt from the page,
the request and its answer through the ``openai`` client, parsing the calls), target <= 10; then the first
``SPEED_TASKS`` tasks with 1 and with 2 browsers, the stand-in taking ``MODEL_DELAY`` seconds per answer as a
model does: ``llm_instances_per_min_1`` / ``_2`` (browser start excluded) and ``speedup_2_browsers`` (target >=
1.6). ``speedup_2_browsers_oracle`` is the same ratio for the oracle (no model to wait for: the browsers' own
CPU, so it shows how loaded the machine is). ``--quick``: two tasks, one instance each.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.browser import WebDriverClock, make_driver
from agents.harness import run as run_solver
from agents.harness import sample_instances
from agents.llm import ChatClient, Endpoint
from agents.llm_solver import LLMSolver
from agents.parallel import Item, run_parallel
from agents.server import serve
from agents.solvers import DoNothing, Oracle
from agents.turkle import Dataset
from devtools.standin_model import gold_book

FULL = {"per_task": 3, "tasks": None, "speed_tasks": 6, "speed_per_task": 2}
QUICK = {"per_task": 1, "tasks": 2, "speed_tasks": 2, "speed_per_task": 1}
SEED = 0
MODEL_DELAY = 2.0  # seconds per answer in the speed runs: a page-long prompt on a small local model


def standin_process(book: list[dict], folder: Path, delay: float):
    """The stand-in model server in its own process; returns (process, base URL)."""
    path = folder / "book.json"
    path.write_text(json.dumps(book))
    command = [sys.executable, "-m", "devtools.standin_model", "--book", str(path), "--delay", str(delay)]
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True)  # noqa: S603
    line = process.stdout.readline()
    if not line.startswith("port "):
        process.kill()
        raise RuntimeError(f"the stand-in model server did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def parallel(items, browsers, make_solver) -> tuple[list, float]:
    """Run ``items`` on ``browsers`` browsers; (results, wall seconds after the browsers started)."""
    started, results = None, []
    drivers_ready = []

    def driver():
        made = make_driver()
        drivers_ready.append(time.perf_counter())
        return made

    for finished in run_parallel(items, browsers, driver, make_solver):
        if finished is not None:
            results.append(finished[1])
    started = min(drivers_ready)  # from the first browser: the second one's start counts against it
    return results, time.perf_counter() - started


def overall(results, metric="official") -> float:
    from agents.harness import RunResult

    return RunResult(metric=metric, instances=results).as_dict()["overall"]


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
    figures = {
        "instances": instances,
        "instances_per_min": round(instances / wall * 60, 1),
        "oracle_score": round(oracle.as_dict()["overall"], 4),
        "do_nothing_score": round(nothing.as_dict()["overall"], 4),
        "harness_share": round((wall - in_webdriver) / wall, 3),
    }
    figures.update(llm_figures(dataset, tasks, spec))
    return figures


def llm_figures(dataset: Dataset, tasks: list, spec: dict) -> dict:
    sampled = sample_instances(tasks, spec["per_task"], SEED)
    speed_tasks = tasks[: spec["speed_tasks"]]
    speed_sampled = sample_instances(speed_tasks, spec["speed_per_task"], SEED + 1)
    book = gold_book(tasks, {t.name: list(range(len(t))) for t in tasks})
    figures = {}
    with tempfile.TemporaryDirectory(prefix="agent-eval-") as folder, serve(dataset) as pages:
        for delay in (0.0, MODEL_DELAY):
            process, url = standin_process(book, Path(folder), delay)
            try:
                client = ChatClient(Endpoint(url, "stand-in", "bench-key", in_flight=2))
                solvers: list[LLMSolver] = []

                def make_solver(client=client, solvers=solvers):
                    solvers.append(LLMSolver(client))
                    return solvers[-1]

                if delay == 0.0:
                    items = [Item(t, i, pages.url(t.name, i)) for t in tasks for i in sampled[t.name]]
                    results, _ = parallel(items, 2, make_solver)
                    calls = sum(s.calls for s in solvers)
                    figures["llm_instances"] = len(results)
                    figures["llm_score"] = round(overall(results), 4)
                    figures["llm_harness_cpu_ms_per_call"] = round(
                        sum(s.cpu_seconds for s in solvers) / calls * 1000, 2
                    )
                else:
                    items = [Item(t, i, pages.url(t.name, i)) for t in speed_tasks for i in speed_sampled[t.name]]
                    rates = {}
                    for browsers in (1, 2):
                        results, wall = parallel(items, browsers, make_solver)
                        rates[browsers] = len(results) / wall * 60
                    figures["model_delay_s"] = MODEL_DELAY
                    figures["llm_instances_per_min_1"] = round(rates[1], 1)
                    figures["llm_instances_per_min_2"] = round(rates[2], 1)
                    figures["speedup_2_browsers"] = round(rates[2] / rates[1], 2)
            finally:
                process.terminate()
                process.wait(timeout=30)
        oracle_rates = {}
        for browsers in (1, 2):
            items = [Item(t, i, pages.url(t.name, i)) for t in speed_tasks for i in speed_sampled[t.name]]
            results, wall = parallel(items, browsers, lambda: Oracle(SEED))
            oracle_rates[browsers] = len(results) / wall * 60
        figures["speedup_2_browsers_oracle"] = round(oracle_rates[2] / oracle_rates[1], 2)
    return figures
