"""Agent runs on form tasks: checking a request, creating the run and enqueueing it (the worker runs it).

A run takes a split of the project's form tasks (``annotation.actions.forms.splits``). Solvers: ``oracle``,
``do-nothing``, or ``python:module:Class`` (a subclass of ``agents.harness.Solver``); through the API only modules
under ``settings.AGENT_SOLVER_MODULES`` (code the worker already has installed), from the command line any.
"""

import contextlib

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Sum

from agents.solvers import SolverSpecError, solver_class, spec_parts

from ..lib.schema import MAX_COUNT
from ..models import (
    AgentFieldResult,
    AgentMetric,
    AgentModelAnswer,
    AgentRun,
    AgentRunInstance,
    BatchKind,
    JobStatus,
    Project,
    Task,
)
from . import queue
from .endpoints import (
    capped_default,
    chat_endpoint,
    check_endpoint_for_project,
    check_not_other_role,
    check_within_limit,
    model_limits,
)
from .errors import Conflict, NotFound, invalid
from .exports.jobs import EXPORT_ROLES, check_job_cancellable, enqueue
from .forms.splits import split_names, split_tasks

MAX_INSTANCES_PER_TASK = 100_000
MAX_SEED = MAX_COUNT  # the run's seed column is a 32-bit integer: a larger seed would not be stored as given


LLM = "llm"
MAX_BROWSERS = 16
MAX_BUDGET = 2**31 - 1
RUN_MODEL_SETTINGS = (
    "endpoint",
    "temperature",
    "max_tokens",
    "in_flight",
    "timeout",
    "prompt_template",
    "budget_requests",
    "budget_tokens",
)


def check_solver(solver, from_api: bool) -> None:
    """The spec names a ``Solver`` class the worker can load: checked here, so a run that could only fail on the
    worker is never queued. Through the API the module must be under ``AGENT_SOLVER_MODULES`` before it is
    imported at all."""
    if not isinstance(solver, str) or not solver:
        raise invalid("solver", "expected oracle, do-nothing, llm or python:module:Class")
    if solver == LLM:
        return
    try:
        parts = spec_parts(solver)
        if parts is not None and from_api:
            module, allowed = parts[0], settings.AGENT_SOLVER_MODULES
            if not any(module == prefix or module.startswith(prefix + ".") for prefix in allowed):
                shown = ", ".join(allowed) or "none"
                message = f"module {module!r} is not among the solver modules this platform allows ({shown})"
                raise invalid("solver", message)
        solver_class(solver)
    except SolverSpecError as error:
        raise invalid("solver", str(error)) from None


def run_splits(project) -> list[tuple[str, int]]:
    """The splits a run may take in ``project`` that have form batches: ``[(split, batches)]``, sorted by name."""
    sizes = [(split, len(split_tasks(project, split))) for split in split_names(project)]
    return [(split, size) for split, size in sizes if size]


def default_split(project, splits: list[tuple[str, int]] | None = None) -> str:
    """The split a run takes when none is given: ``test_easy`` (the benchmark's) when the project has it, else
    ``all`` (batches uploaded from the web are in no split list)."""
    names = [name for name, _ in (run_splits(project) if splits is None else splits)]
    return "test_easy" if "test_easy" in names else "all"


def check_agent_run(project, split, solver, instances_per_task, seed, metric, from_api=True) -> list[str]:
    """Validate a run request; returns the split's task names."""
    check_solver(solver, from_api)
    if metric not in AgentMetric.values:
        raise invalid("metric", f"expected one of: {', '.join(AgentMetric.values)}")
    if instances_per_task is not None and not (
        isinstance(instances_per_task, int) and 1 <= instances_per_task <= MAX_INSTANCES_PER_TASK
    ):
        raise invalid("instances", f"expected a whole number from 1 to {MAX_INSTANCES_PER_TASK}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise invalid("seed", f"expected a whole number from 0 to {MAX_SEED}")
    tasks = split_tasks(project, split)
    if not tasks:
        if not run_splits(project):
            raise invalid("split", f"project {project.name!r} has no form batches yet: upload or import one first")
        raise invalid("split", f"split {split!r} has no form batches in project {project.name!r}")
    return tasks


def _whole(field, value, low, high) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high):
        raise invalid(field, f"expected a whole number from {low} to {high}")


def run_instances_count(project, tasks: list[str], instances_per_task: int | None) -> int:
    """How many instances a run opens: per task its instances, or ``instances_per_task`` of them when fewer."""
    counts = (
        Task.objects.filter(batch__project=project, batch__kind=BatchKind.FORM, batch__name__in=tasks)
        .values("batch__name")
        .annotate(n=Count("pk"))
    )
    return sum(min(row["n"], instances_per_task or row["n"]) for row in counts)


def check_model_settings(project, solver, browsers=None, *, tasks=(), instances_per_task=None, **model) -> dict:
    """The llm settings of a run, checked (400 naming the setting) against their ranges and the project's model
    limits (``ModelLimits``; the run's instances too), and with the endpoint row: ``{field: value}`` for
    ``AgentRun``. Other solvers take none of them (only ``browsers``)."""
    from agents.llm_solver import check_template

    _whole("browsers", browsers, 1, MAX_BROWSERS)
    given = {name: value for name, value in model.items() if value is not None and value != ""}
    if solver != LLM:
        if given:
            raise invalid(next(iter(given)), "only the llm solver takes model settings")
        return {"browsers": browsers}
    endpoint = check_endpoint_for_project(project, model.get("endpoint"))
    limits = model_limits(project)
    settings_ = {
        "browsers": browsers,
        "endpoint": endpoint,
        "temperature": model.get("temperature", 0.0) if model.get("temperature") is not None else 0.0,
        "max_tokens": given.get("max_tokens", capped_default(limits, "max_tokens", 1024)),
        "in_flight": model.get("in_flight"),
        "timeout": given.get("timeout", capped_default(limits, "max_timeout", 60.0)),
        "prompt_template": model.get("prompt_template") or "",
        "budget_requests": model.get("budget_requests"),
        "budget_tokens": model.get("budget_tokens"),
    }
    try:
        chat_endpoint(
            endpoint,
            settings_["temperature"],
            settings_["max_tokens"],
            settings_["timeout"],
            1 if settings_["in_flight"] is None else settings_["in_flight"],
        )
    except ValueError as error:
        name, _, message = str(error).partition(": ")
        raise invalid("endpoint" if name in ("url", "model") else name, message) from None
    for limit, value in (
        ("max_tokens", settings_["max_tokens"]),
        ("max_in_flight", settings_["in_flight"]),
        ("max_browsers", browsers),
        ("max_timeout", settings_["timeout"]),
    ):
        check_within_limit(limits, limit, value)
    opened = run_instances_count(project, list(tasks), instances_per_task)
    if opened > limits.max_instances:
        raise invalid(
            "instances",
            f"this run would open {opened} instances; at most {limits.max_instances} per run in project "
            f"{project.name!r} (its model limits): ask for fewer instances per task or a smaller split",
        )
    if message := check_template(settings_["prompt_template"]):
        raise invalid("prompt_template", message)
    _whole("budget_requests", settings_["budget_requests"], 1, MAX_BUDGET)
    _whole("budget_tokens", settings_["budget_tokens"], 1, 2**62)
    return settings_


def do_create_agent_run(
    user,
    project,
    split,
    solver,
    instances_per_task=None,
    seed=0,
    metric="official",
    from_api=True,
    send=True,
    browsers=None,
    **model,
) -> AgentRun:
    """Create a run; with ``send`` it is enqueued for a worker (``manage.py run_agent`` runs it in-process).
    ``split`` None or empty: ``default_split``. ``model``: the llm solver's settings (``RUN_MODEL_SETTINGS``;
    ``endpoint`` is the name of a project endpoint)."""
    split = split or default_split(project)
    tasks = check_agent_run(project, split, solver, instances_per_task, seed, metric, from_api)
    extra = check_model_settings(project, solver, browsers, tasks=tasks, instances_per_task=instances_per_task, **model)
    with transaction.atomic():
        run = AgentRun.objects.create(
            project=project,
            owner=user,
            split=split,
            solver=solver,
            instances_per_task=instances_per_task,
            seed=seed,
            metric=metric,
            **extra,
        )
        if send:
            enqueue(queue.AGENT_RUN, run)
    return run


def may_resume(run: AgentRun) -> bool:
    """A failed or cancelled run, or one its budget stopped, can go on where it stopped."""
    stopped_by_budget = run.status == JobStatus.DONE and bool((run.results or {}).get("stopped"))
    return run.status in (JobStatus.FAILED, JobStatus.CANCELLED) or stopped_by_budget


def do_resume_agent_run(user, run: AgentRun, budget_requests=None, budget_tokens=None) -> AgentRun:
    """Queue a failed, cancelled or budget-stopped run again (its owner or a project admin): the worker skips the
    instances it stored and answers from the run's cache what the model already answered. A new budget may be
    given (it counts what the run already asked). Its model settings must be within the project's model limits as
    they are now (a 400 naming the setting: start a new run within them)."""
    check_job_cancellable(user, run)
    _whole("budget_requests", budget_requests, 1, MAX_BUDGET)
    _whole("budget_tokens", budget_tokens, 1, 2**62)
    if not may_resume(run):
        raise Conflict(f"run {run.pk} is {run.status}; only failed, cancelled or budget-stopped runs can resume")
    if run.solver == LLM:  # the project's model limits as they are now, lowered since the run started or not
        limits = model_limits(run.project)
        for limit, value in (
            ("max_tokens", run.max_tokens),
            ("max_in_flight", run.in_flight),
            ("max_browsers", run.browsers),
            ("max_timeout", run.timeout),
        ):
            check_within_limit(limits, limit, value)
    changes = {"status": JobStatus.QUEUED, "error": "", "finished_at": None, "results": {}}
    if budget_requests is not None:
        changes["budget_requests"] = budget_requests
    if budget_tokens is not None:
        changes["budget_tokens"] = budget_tokens
    with transaction.atomic():
        updated = AgentRun.objects.filter(pk=run.pk, status=run.status).update(**changes)
        if not updated:
            raise Conflict(f"run {run.pk} changed meanwhile; look again")
        run.refresh_from_db()
        enqueue(queue.AGENT_RUN, run)
    return run


# --- Reading results (the web app's pages) ---------------------------------------------------------------


def runs_readable_by(user):
    """Runs of the projects where ``user`` is a researcher or admin (who may start them)."""
    return AgentRun.objects.filter(project__in=Project.objects.for_user(user, EXPORT_ROLES)).select_related(
        "project", "owner"
    )


def check_split_filter(user, split: str | None) -> None:
    """``?split=`` of the run list must be a split a run of yours may take or took (a 400 naming it otherwise,
    docs/api.md: a filter that can match nothing)."""
    if not split:
        return
    projects = Project.objects.for_user(user, EXPORT_ROLES)
    known = {name for project in projects for name in split_names(project)}
    known |= set(runs_readable_by(user).values_list("split", flat=True).distinct())
    if split not in known:
        raise invalid("split", f"no run of yours can have split {split!r}; expected one of: {', '.join(sorted(known))}")


def check_solver_filter(solver: str | None) -> None:
    """``?solver=`` of the run list must be a solver name a run can have: ``llm``, a baseline or a
    ``python:module:Class`` spec (a 400 naming it otherwise, as for ``?split=``)."""
    if not solver or solver == LLM:
        return
    try:
        spec_parts(solver)
    except SolverSpecError as error:
        raise invalid("solver", f"{error}, or llm") from error


def check_run_readable(user, run_id) -> AgentRun:
    """The run; Forbidden for its project's other roles, NotFound outside it (nothing is revealed)."""
    run = runs_readable_by(user).filter(pk=run_id).first()
    if run is None:
        check_not_other_role(user, AgentRun.objects, run_id)
        raise NotFound(f"no agent run {run_id} among yours")
    return run


def check_instance_readable(user, run_id, row_id) -> AgentRunInstance:
    run = check_run_readable(user, run_id)
    row = AgentRunInstance.objects.filter(run=run, pk=row_id).select_related("run", "task").first()
    if row is None:
        raise NotFound(f"no instance {row_id} in agent run {run_id}")
    return row


def run_instances(run: AgentRun):
    """The run's instances in the order stored, each with its model cost (``tokens_in``, ``tokens_out``,
    ``model_seconds``: the sums over its fields)."""
    return run.instances.order_by("task_name", "instance").annotate(
        tokens_in=Sum("fields__tokens_in"),
        tokens_out=Sum("fields__tokens_out"),
        model_seconds=Sum("fields__model_seconds"),
    )


def score_table(run: AgentRun) -> dict:
    """The run's scores from its stored fields (so a running or cancelled run shows what it has):
    ``{"types": [...], "tasks": {task: {"all": x, type: y}}, "rows": [{"task", "cells": [all, *types], "ceiling"}],
    "overall": z, "instances": n, "summary": {...}, "ceiling": {...}, "shortfalls": n}``: every task of the run has
    a row (one with nothing scorable an empty one, named in ``summary["tasks_unscorable"]``), ``summary`` holds the
    instance mean beside the task mean (``agents.scoring.summary``), ``ceiling`` the human ceiling of the same
    fields (``agents.ceiling.table``) and ``shortfalls`` how many fields scored below theirs with a reason."""
    from agents import ceiling, scoring

    nan = float("nan")
    rows = [
        {"task": task, "type": kind, "score": nan if score is None else score, "ceiling": nan if top is None else top}
        for task, kind, score, top in AgentFieldResult.objects.filter(row__run=run, skipped="").values_list(
            "row__task_name", "type", "score", "ceiling"
        )
    ]
    tasks = scoring.task_table(rows)
    types = sorted({row["type"] for row in rows})
    instances = list(run.instances.order_by("pk").values_list("task_name", "score", "ceiling"))
    names = sorted({name for name, _, _ in instances} | set(tasks))
    summary = scoring.summary(names, tasks, [0.0 if score is None else score for _, score, _ in instances])
    every_task = {name: tasks.get(name, {"all": nan}) for name in names}
    tables = {name: {k: scoring.json_number(v) for k, v in table.items()} for name, table in every_task.items()}
    ceilings = ceiling.table(rows, [top for _, _, top in instances])
    return {
        "types": types,
        "tasks": tables,
        "rows": [
            {"task": name, "cells": [table.get(k) for k in ["all", *types]], "ceiling": ceilings["tasks"].get(name)}
            for name, table in tables.items()
        ],
        "overall": summary["task_mean"],
        "instances": len(instances),
        "summary": summary,
        "ceiling": ceilings,
        "shortfalls": AgentFieldResult.objects.filter(row__run=run).exclude(shortfall="").count(),
    }


def compare_tables(first: dict, second: dict) -> dict:
    """Two score tables side by side: per task and column (``all`` then the types), both values and the change."""
    types = sorted(set(first["types"]) | set(second["types"]))
    rows = []
    for task in sorted(set(first["tasks"]) | set(second["tasks"])):
        a, b = first["tasks"].get(task, {}), second["tasks"].get(task, {})
        cells = [pair(a.get(key), b.get(key)) for key in ["all", *types]]
        ceilings = pair(first["ceiling"]["tasks"].get(task), second["ceiling"]["tasks"].get(task))
        rows.append({"task": task, "cells": cells, "ceiling": ceilings})
    return {
        "columns": ["all", *types],
        "rows": rows,
        "overall": pair(first["overall"], second["overall"]),
        "ceiling": pair(first["ceiling"]["overall"], second["ceiling"]["overall"]),
        "ceiling_instances": pair(first["ceiling"]["overall_instances"], second["ceiling"]["overall_instances"]),
        "instance_mean": pair(first["summary"]["instance_mean"], second["summary"]["instance_mean"]),
        "unscorable": (
            [row["task"] for row in first["summary"]["tasks_unscorable"]],
            [row["task"] for row in second["summary"]["tasks_unscorable"]],
        ),
    }


def sample_differences(first: AgentRun, second: AgentRun) -> dict:
    """Whether two runs scored different instances, for compare's warning: ``{"what": [...], "tasks": [...]}``,
    ``what`` naming the settings that differ (project, split, seed, instances per task, tasks, or just the
    instances drawn), ``tasks`` those whose drawn instances differ (their B − A compares different instances).
    Runs that drew the same instances (e.g. all of them, whatever the seed) have nothing to name."""
    a, b = first.sampled or {}, second.sampled or {}
    tasks = sorted(t for t in set(a) | set(b) if sorted(a.get(t, [])) != sorted(b.get(t, []))) if a and b else []
    if a and b and not tasks:
        return {"what": [], "tasks": []}
    settings_of = {
        "project": lambda run: run.project.name,
        "split": lambda run: run.split,
        "seed": lambda run: run.seed,
        "instances per task": lambda run: run.instances_per_task or "all",
    }
    what = [f"{name} ({get(first)}, {get(second)})" for name, get in settings_of.items() if get(first) != get(second)]
    if a and b and set(a) != set(b):
        what.append("tasks")
    if tasks and not what:
        what.append("the instances drawn")
    return {"what": what, "tasks": tasks}


def pair(a, b) -> dict:
    return {"a": a, "b": b, "change": None if a is None or b is None else b - a}


# --- What the worker stores as a run goes (``workers/agents/runs.py``) ---------------------------------------------


def do_record_sample(run: AgentRun, sampled: dict) -> None:
    """The instances drawn for the run (task → indices), kept so a resumed run goes on with the same ones."""
    run.sampled = sampled
    AgentRun.objects.filter(pk=run.pk).update(sampled=sampled)


def do_store_model_answer(run_id: int, key: str, answer: dict) -> None:
    """An llm answer cached for the run (``text``, ``tokens_in``, ``tokens_out``, ``seconds``); when another browser
    thread stored ``key`` first, its answer is kept."""
    fields = {name: answer[name] for name in ("text", "tokens_in", "tokens_out", "seconds")}
    with contextlib.suppress(IntegrityError), transaction.atomic():
        AgentModelAnswer.objects.create(run_id=run_id, key=key, **fields)


def do_store_instance(run: AgentRun, task: Task | None, row: dict, fields: list[dict], usages: list[dict], png=None):
    """An instance's row (``row``: its ``AgentRunInstance`` fields), its field results, the model cost of its fields
    (``usages``) added to the run's sums, and its screenshot (PNG bytes, or None)."""
    with transaction.atomic():
        instance = AgentRunInstance.objects.create(run=run, task=task, **row)
        AgentFieldResult.objects.bulk_create([AgentFieldResult(row=instance, **field) for field in fields])
        if usages:
            AgentRun.objects.filter(pk=run.pk).update(
                model_calls=F("model_calls") + len(usages),
                cached_calls=F("cached_calls") + sum(1 for u in usages if u.get("cached")),
                tokens_in=F("tokens_in") + sum(u.get("tokens_in", 0) for u in usages),
                tokens_out=F("tokens_out") + sum(u.get("tokens_out", 0) for u in usages),
                model_seconds=F("model_seconds") + sum(u.get("model_seconds", 0.0) for u in usages),
            )
    if png:
        instance.screenshot.save(f"agent-runs/{run.pk}/{instance.pk}.png", ContentFile(png), save=True)
    return instance
