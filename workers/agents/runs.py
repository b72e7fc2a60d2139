"""What an agent-run job does on the worker (``docs/agents.md``, "Runs on the platform").

1. The split's form batches are written as a TurkingBench directory holding their imported gold rows (the
   TurkingBench exporter's own ``write_batch``), and read back with ``agents.turkle``: the gold values are then
   the same pandas objects the official scorer compares.
2. The instances are drawn with the run's seed (``agents.harness.sample_instances``) and recorded on the run.
3. Each instance's preview page, rendered by the platform's form-task code (``task_page(..., mode="preview")``),
   is served on loopback to this worker's own headless Chromium (one per job: more workers, more browsers), with
   the headers of the web app's task frames (``frame_headers``: sandboxed, no network access from its scripts);
   the templates' CDN libraries come from the vendored copies the same server answers (``TEMPLATE_SCRIPTS``; with
   ``original`` the browser may reach the Internet).
4. ``agents.harness.Harness`` orders the fields (spec §4.1), calls the solver per field (a solver that raises
   leaves its field untouched), reads the page (§4.3) and scores. Every field's value, gold and score is stored
   as the run goes, with a full-page screenshot per instance; the run's scores (the evaluation output format)
   are written when it is done. A cancel is noticed within one field.
"""

import logging
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile

from agents import scoring, vendor
from agents.actions import full_page_png
from agents.browser import make_driver
from agents.harness import Harness, InstanceResult, RunResult, Solver, sample_instances
from agents.server import serve_pages
from agents.solvers import load_solver
from annotation.actions.forms import split_tasks
from annotation.actions.forms.frames import frame_headers
from annotation.actions.forms.render import task_page
from annotation.models import AgentFieldResult, AgentRun, AgentRunInstance, Batch, BatchKind, JobStatus, Task

from ..exports.form_dataset import gold_directory
from ..runners import JobStopped, Progress, finish_clean, run_job

log = logging.getLogger(__name__)


class Beating(Solver):
    """The run's solver, with a heartbeat before each field; a cancel is remembered, never raised inside the
    solver (the harness would count it as the solver's error)."""

    def __init__(self, inner: Solver, progress: Progress):
        self.inner, self.progress, self.stopped = inner, progress, False
        self.name, self.uses_gold = inner.name, inner.uses_gold

    def begin_instance(self, task, instance: int) -> None:
        self.inner.begin_instance(task, instance)

    def solve(self, request) -> None:
        try:
            self.progress.beat()
        except JobStopped:
            self.stopped = True
        if not self.stopped:
            self.inner.solve(request)


class RunProgress(Progress):
    """``Progress`` that also knows how many instances are done, so a per-field beat keeps the same fraction."""

    def __init__(self, job, total: int):
        super().__init__(job, 0.0, 1.0)
        self.total, self.done = max(1, total), 0

    def beat(self, force: bool = False) -> None:
        self(self.done / self.total, force)


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


def store_instance(run: AgentRun, task: Task | None, result: InstanceResult, gold: dict, png: bytes) -> None:
    row = AgentRunInstance.objects.create(
        run=run,
        task=task,
        task_name=result.task,
        instance=result.instance,
        score=scoring.json_number(result.score),
    )
    row.screenshot.save(f"agent-runs/{run.pk}/{row.pk}.png", ContentFile(png), save=True)
    AgentFieldResult.objects.bulk_create(
        AgentFieldResult(
            row=row,
            name=f.field,
            type=f.type,
            value=f.prediction,
            gold=json_gold(gold.get(f.field, [])),
            score=scoring.json_number(f.score) if f.score is not None else None,
            skipped=f.skipped or "",
            error=f.error or "",
            calls=f.calls,
        )
        for f in result.fields
    )


def execute(run: AgentRun, workdir: Path) -> None:
    """The whole run (see the module docstring); ends with the run marked done and its scores stored."""
    names = split_tasks(run.project, run.split)
    by_name = {b.name: b for b in Batch.objects.filter(project=run.project, kind=BatchKind.FORM, name__in=names)}
    batches = [by_name[name] for name in names]
    dataset = gold_directory(batches, workdir / "data")
    tasks = [dataset.task(batch.name) for batch in batches]
    sampled = sample_instances(tasks, run.instances_per_task, run.seed)
    AgentRun.objects.filter(pk=run.pk).update(sampled=sampled)
    solver = load_solver(run.solver, run.seed)
    progress = RunProgress(run, sum(len(indices) for indices in sampled.values()))
    beating = Beating(solver, progress)
    pages, rows = preview_pages(by_name, sampled)
    result = RunResult(metric=run.metric, solver=solver.name, seed=run.seed, sampled=sampled)
    driver = make_driver(allow_network=settings.TEMPLATE_SCRIPTS == vendor.ORIGINAL)
    try:
        harness = Harness(driver, beating, run.metric)
        with serve_pages(lambda name, index: pages[(name, index)], headers=frame_headers()) as server:
            for name, indices in sampled.items():
                task = dataset.task(name)
                for index in indices:
                    progress.beat(force=True)
                    instance = harness.run_instance(task, index, server.url(name, index))
                    if beating.stopped:
                        raise JobStopped(f"run {run.pk} is no longer running")
                    progress.beat(force=True)  # a cancel during the instance: nothing of it is stored
                    store_instance(run, rows.get((name, index)), instance, task.gold(index), full_page_png(driver))
                    result.instances.append(instance)
                    progress.done += 1
    finally:
        driver.quit()
    progress.beat(force=True)
    finish_clean(run, workdir, JobStatus.DONE, results=result.as_dict())


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
        for row in run.instances.prefetch_related("fields")
    ]
