"""What an agent-run job does on the worker (``docs/agents.md``, "Runs on the platform").

1. The split's form batches are written as a TurkingBench directory holding their imported gold rows (the
   TurkingBench exporter's own ``write_batch``), and read back with ``agents.turkle``: the gold values are then
   the same pandas objects the official scorer compares.
2. The instances are drawn with the run's seed (``agents.harness.sample_instances``) and recorded on the run; a
   resumed run skips the instances it already stored.
3. Each instance's preview page, rendered by the platform's form-task code (``task_page(..., mode="preview")``),
   is served on loopback to the run's headless Chromium browsers (``browsers``, default the worker's cores; each
   its own profile, one thread each, ``agents.parallel.run_parallel``), with the headers of the web app's task
   frames (``frame_headers``: sandboxed, no network access from its scripts); each browser loads nothing but that
   server's origin (``agents.originguard``), and an instance whose page left it is stored unscored, without a
   screenshot;
   the templates' CDN libraries come from the vendored copies the same server answers (``TEMPLATE_SCRIPTS``; with
   ``original`` the browsers may reach the Internet).
4. ``agents.harness.Harness`` orders the fields (spec §4.1), calls the solver per field (a solver that raises
   leaves its field untouched), reads the page (§4.3) and scores. Every field's value, gold, score and (llm) model
   cost is stored as the run goes, with a full-page screenshot per instance; the run's scores (the evaluation
   output format, over every stored instance) are written when it is done.
5. Work is bounded (``run_limits``: ``AGENT_FIELD_SECONDS``, ``AGENT_INSTANCE_SECONDS``, ``AGENT_TEXT_MAX_CHARS``): a
   field past its time is that field's error, an instance past its time has its browser ended and is stored
   unscored with why (``ended``); each heartbeat records where the run is (``activity``: instances done of the
   total, each browser's task, instance, field and seconds). A cancel is noticed at the next heartbeat and ends the
   browsers, even one stuck in a command (a model request in flight runs out its ``timeout``; no retry follows).

The ``llm`` solver asks the run's model endpoint through ``agents.llm.ChatClient`` with the run's settings, its
budget counted from what the run already asked, and its answers cached in ``AgentModelAnswer`` rows: a resumed run
never asks again for what was answered. An endpoint that cannot be used fails the run with the reason; a spent
budget ends it as done with what it scored (``results["stopped"]``).
"""

import contextlib
import functools
import logging
import os
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.models import Sum

from agents import scoring, vendor
from agents.actions import full_page_png
from agents.browser import make_driver
from agents.harness import (
    FieldResult,
    Harness,
    InstanceResult,
    Limits,
    RunResult,
    StopRun,
    on_origin,
    sample_instances,
)
from agents.llm import Budget, ChatClient
from agents.llm_solver import LLMSolver
from agents.parallel import Item, run_parallel
from agents.server import serve_pages
from agents.solvers import load_solver
from annotation.actions import agents as agent_actions
from annotation.actions.endpoints import chat_endpoint, model_limits
from annotation.actions.forms import split_tasks
from annotation.actions.forms.frames import frame_headers
from annotation.actions.forms.render import task_page
from annotation.models import (
    AgentModelAnswer,
    AgentRun,
    AgentRunInstance,
    Batch,
    BatchKind,
    JobStatus,
    Task,
)

from ..exports.form_dataset import gold_directory
from ..runners import Progress, finish_clean, run_job

log = logging.getLogger(__name__)
LLM = "llm"


class RunProgress(Progress):
    """``Progress`` that also knows how many instances are done, so a beat between instances keeps the fraction, and
    records where each browser is (``activity``)."""

    def __init__(self, job, total: int, done: int = 0):
        super().__init__(job, 0.0, 1.0)
        self.total, self.done = max(1, total), done
        self.harnesses: list[Harness] = []  # filled by run_parallel, one per browser thread

    def beat(self, force: bool = False) -> None:
        self(self.done / self.total, force)

    def fields(self) -> dict:
        return {"activity": activity(self.done, self.total, self.harnesses)}


def activity(done: int, total: int, harnesses: list[Harness]) -> dict:
    """Instances done of the total, and what each browser works on (task, instance, field, seconds so far)."""
    now, browsers = time.monotonic(), []
    for harness in list(harnesses):
        current = harness.current
        if current is not None:
            where = {key: current[key] for key in ("task", "instance", "field")}
            browsers.append({**where, "seconds": round(now - current["started"], 1)})
    return {"done": done, "total": total, "browsers": browsers}


def run_limits() -> Limits:
    """The bounds of a run's work in its browsers (``docs/configuration.md``)."""
    return Limits(settings.AGENT_FIELD_SECONDS, settings.AGENT_INSTANCE_SECONDS, settings.AGENT_TEXT_MAX_CHARS)


class RunAnswers:
    """The llm run's answer cache (``agents.llm``'s dict-like protocol) in ``AgentModelAnswer`` rows. Used from the
    run's browser threads: each thread has its own database connection (closed when the thread ends)."""

    def __init__(self, run: AgentRun):
        self.run_id = run.pk

    def get(self, key: str, default=None):
        row = AgentModelAnswer.objects.filter(run_id=self.run_id, key=key).first()
        if row is None:
            return default
        return {"text": row.text, "tokens_in": row.tokens_in, "tokens_out": row.tokens_out, "seconds": row.seconds}

    def __setitem__(self, key: str, value: dict) -> None:
        agent_actions.do_store_model_answer(self.run_id, key, value)

    def spent(self) -> tuple[int, int]:
        """(requests, tokens) the run has asked so far: what its budget starts from."""
        rows = AgentModelAnswer.objects.filter(run_id=self.run_id)
        totals = rows.aggregate(i=Sum("tokens_in"), o=Sum("tokens_out"))
        return rows.count(), (totals["i"] or 0) + (totals["o"] or 0)


def browser_count(run: AgentRun) -> int:
    """The run's browsers; by default the worker's cores, for an llm run within the project's model limits."""
    if run.browsers:
        return run.browsers
    cores = os.cpu_count() or 1
    return min(cores, model_limits(run.project).max_browsers) if run.solver == LLM else cores


def llm_client(run: AgentRun, stop: threading.Event) -> ChatClient:
    """The run's chat client: its endpoint and settings, the budget left, the answers it has, a wait between tries
    that a stopping run cuts short (``wait_or_stop``)."""
    if run.endpoint is None:
        raise StopRun("the run's model endpoint was removed; add one and start a new run")
    endpoint = chat_endpoint(
        run.endpoint,
        temperature=run.temperature,
        max_tokens=run.max_tokens,
        timeout=run.timeout,
        in_flight=run.in_flight or min(browser_count(run), model_limits(run.project).max_in_flight),
    )
    answers = RunAnswers(run)
    requests, tokens = answers.spent()
    budget = Budget(run.budget_requests, run.budget_tokens, requests=requests, tokens=tokens)
    return ChatClient(endpoint, cache=answers, budget=budget, sleep=functools.partial(wait_or_stop, stop), stop=stop)


def wait_or_stop(stop: threading.Event, seconds: float) -> None:
    """The client's wait before asking again, cut short by a stopping run, which then asks no more."""
    if stop.wait(seconds):
        raise StopRun("the run is stopping")


def preview_pages(batches: dict[str, Batch], sampled: dict[str, list[int]]) -> tuple[dict, dict]:
    """The platform's preview page of every sampled instance, and its ``Task`` row, by (task name, index)."""
    pages, rows = {}, {}
    for name, indices in sampled.items():
        batch = batches[name]
        for task in Task.objects.filter(batch=batch, index__in=indices):
            pages[(name, task.index)] = task_page(batch, task, action="#", mode="preview")
            rows[(name, task.index)] = task
    return pages, rows


def json_gold(values: list) -> list:
    return [None if scoring.is_nan(value) else value for value in values]


def store_instance(run: AgentRun, task: Task | None, result: InstanceResult, gold: dict, png: bytes | None) -> None:
    """The instance's row, its fields and screenshot, and its model cost added to the run's sums."""
    row = {
        "task_name": result.task,
        "instance": result.instance,
        "score": scoring.json_number(result.score),
        "answer": result.answer or "",
        "unapplied": result.unapplied,
        "ended": result.ended or "",
        "ceiling": scoring.json_number(result.ceiling),
    }
    fields = [
        {
            "name": f.field,
            "type": f.type,
            "value": f.prediction,
            "gold": json_gold(gold.get(f.field, [])),
            "score": scoring.json_number(f.score) if f.score is not None else None,
            "skipped": f.skipped or "",
            "error": f.error or "",
            "calls": f.calls,
            "ceiling": scoring.json_number(f.ceiling),
            "shortfall": f.shortfall or "",
            "tokens_in": (f.usage or {}).get("tokens_in", 0),
            "tokens_out": (f.usage or {}).get("tokens_out", 0),
            "model_seconds": (f.usage or {}).get("model_seconds", 0.0),
        }
        for f in result.fields
    ]
    usages = [f.usage for f in result.fields if f.usage]
    agent_actions.do_store_instance(run, task, row, fields, usages, png)


def screenshot_on_origin(driver, result: InstanceResult) -> bytes | None:
    """The whole page after the solver; none when the page left the task server's origin (never another page's)."""
    if result.ended or not on_origin(driver, result.url):
        return None
    png = full_page_png(driver)
    return png if on_origin(driver, result.url) else None


def rows_in_order(run: AgentRun) -> list[AgentRunInstance]:
    """The run's stored instances (with their fields) in the order sampled, whichever browser finished first."""
    order = {pair: n for n, pair in enumerate((name, i) for name, indices in run.sampled.items() for i in indices)}
    rows = run.instances.prefetch_related("fields")
    return sorted(rows, key=lambda row: (order.get((row.task_name, row.instance), len(order)), row.pk))


def stored_result(run: AgentRun) -> RunResult:
    """The run's result over every instance it stored (a resumed run's included), in the order sampled."""
    result = RunResult(metric=run.metric, solver=run.solver, seed=run.seed, sampled=run.sampled)
    for row in rows_in_order(run):
        fields = [
            FieldResult(
                row.task_name,
                row.instance,
                f.name,
                f.type,
                score=float("nan") if f.score is None and not f.skipped else f.score,
                prediction=f.value,
                skipped=f.skipped or None,
                error=f.error or None,
                calls=f.calls,
                ceiling=nan_if_none(f.ceiling) if not f.skipped else None,
                shortfall=f.shortfall or None,
            )
            for f in row.fields.all()
        ]
        instance = InstanceResult(
            row.task_name, row.instance, "", run.metric, fields, ended=row.ended or None, unapplied=row.unapplied
        )
        instance.ceiling = row.ceiling
        result.instances.append(instance)
    return result


def nan_if_none(value: float | None) -> float:
    """A stored score: JSON null was a NaN (a range field with a blank gold)."""
    return float("nan") if value is None else value


def execute(run: AgentRun, workdir: Path) -> None:
    """The whole run (see the module docstring); ends with the run marked done and its scores stored."""
    names = split_tasks(run.project, run.split)
    by_name = {b.name: b for b in Batch.objects.filter(project=run.project, kind=BatchKind.FORM, name__in=names)}
    batches = [by_name[name] for name in names]
    dataset = gold_directory(batches, workdir / "data")
    tasks = [dataset.task(batch.name) for batch in batches]
    sampled = run.sampled or sample_instances(tasks, run.instances_per_task, run.seed)
    if not run.sampled:
        agent_actions.do_record_sample(run, sampled)
    done = set(run.instances.values_list("task_name", "instance"))
    todo = [(name, index) for name, indices in sampled.items() for index in indices if (name, index) not in done]
    progress = RunProgress(run, sum(len(indices) for indices in sampled.values()), len(done))
    stop = threading.Event()
    if run.solver == LLM:
        try:
            client = llm_client(run, stop)
        except StopRun as stopped:
            finish_clean(run, workdir, JobStatus.FAILED, error=stopped.reason)
            return
        vision = run.endpoint.vision

        def make_solver():
            return LLMSolver(client, run.prompt_template, vision=vision)
    else:

        def make_solver():
            return load_solver(run.solver, run.seed)

    pages, rows = preview_pages(by_name, {name: [i for n, i in todo if n == name] for name in sampled})
    stopped = None
    with serve_pages(lambda name, index: pages[(name, index)], headers=frame_headers()) as server:
        items = [Item(dataset.task(name), index, server.url(name, index)) for name, index in todo]
        running = run_parallel(
            items,
            browser_count(run),
            functools.partial(make_driver, allow_network=settings.TEMPLATE_SCRIPTS == vendor.ORIGINAL),
            make_solver,
            metric=run.metric,
            after=screenshot_on_origin,
            stop=stop,
            thread_exit=close_old_connections_of_thread,
            limits=run_limits(),
            harnesses=progress.harnesses,
        )
        try:
            with contextlib.closing(running):
                for finished in running:
                    progress.beat(force=finished is not None)
                    if finished is None:
                        continue
                    item, instance, png = finished
                    task_row = rows.get((item.task.name, item.instance))
                    store_instance(run, task_row, instance, item.task.gold(item.instance), png)
                    progress.done += 1
        except StopRun as error:
            if not error.budget:
                finish_clean(run, workdir, JobStatus.FAILED, error=error.reason)
                return
            stopped = error.reason
    progress.beat(force=True)
    results = stored_result(run).as_dict()
    if stopped:
        results["stopped"] = f"{stopped}: {progress.done} of {progress.total} instances scored"
    finish_clean(run, workdir, JobStatus.DONE, results=results)


def close_old_connections_of_thread() -> None:
    """A browser thread's database connection (the llm answer cache) is closed when the thread ends."""
    connection.close()


def run_agent(run_id: int) -> None:
    run_job(AgentRun, run_id, execute)


def action_sequences(run: AgentRun) -> list[dict]:
    """Per instance, the calls made on each field (the oracle's: the gold action sequences)."""
    return [
        {
            "task": row.task_name,
            "instance": row.instance,
            "fields": [{"name": f.name, "type": f.type, "calls": f.calls} for f in row.fields.all() if f.calls],
        }
        for row in rows_in_order(run)
    ]
