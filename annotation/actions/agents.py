"""Agent runs on form tasks: checking a request, creating the run and enqueueing it (the worker runs it).

A run takes a split of the project's form tasks (``annotation.actions.forms.splits``). Solvers: ``oracle``,
``do-nothing``, or ``python:module:Class`` (a subclass of ``agents.harness.Solver``); through the API only modules
under ``settings.AGENT_SOLVER_MODULES`` (code the worker already has installed), from the command line any.
"""

from django.conf import settings
from django.db import IntegrityError, transaction

from agents import llm
from agents.solvers import SolverSpecError, solver_class, spec_parts

from ..lib.schema import MAX_COUNT
from ..models import AgentFieldResult, AgentMetric, AgentRun, AgentRunInstance, ModelEndpoint, Project
from . import queue
from .errors import Conflict, NotFound, invalid
from .exports.jobs import EXPORT_ROLES, enqueue
from .forms.splits import split_tasks

MAX_INSTANCES_PER_TASK = 100_000
MAX_SEED = MAX_COUNT  # the run's seed column is a 32-bit integer: a larger seed would not be stored as given


def check_solver(solver, from_api: bool) -> None:
    """The spec names a ``Solver`` class the worker can load: checked here, so a run that could only fail on the
    worker is never queued. Through the API the module must be under ``AGENT_SOLVER_MODULES`` before it is
    imported at all."""
    if not isinstance(solver, str) or not solver:
        raise invalid("solver", "expected oracle, do-nothing or python:module:Class")
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
        raise invalid("split", f"split {split!r} has no form batches in project {project.name!r}")
    return tasks


def do_create_agent_run(
    user, project, split, solver, instances_per_task=None, seed=0, metric="official", from_api=True, send=True
) -> AgentRun:
    """Create a run; with ``send`` it is enqueued for a worker (``manage.py run_agent`` runs it in-process)."""
    check_agent_run(project, split, solver, instances_per_task, seed, metric, from_api)
    with transaction.atomic():
        run = AgentRun.objects.create(
            project=project,
            owner=user,
            split=split,
            solver=solver,
            instances_per_task=instances_per_task,
            seed=seed,
            metric=metric,
        )
        if send:
            enqueue(queue.AGENT_RUN, run)
    return run


# --- Model endpoints (the llm solver, predict) ----------------------------------------------------------

ENDPOINT_FIELDS = ("url", "model", "key", "vision")
MAX_KEY_LENGTH = 4096


def check_endpoint_fields(url=None, model=None, key=None, vision=None, required=True) -> None:
    """400 naming the field: an http(s) URL with a host, a model name, a key that is text, vision a boolean.
    ``required=False`` (a change) checks only what is given (not None)."""
    if url is not None or required:
        if message := llm.check_url(url):
            raise invalid("url", message)
        if len(url) > 500:
            raise invalid("url", "at most 500 characters")
    if (model is not None or required) and (not isinstance(model, str) or not model.strip() or len(model) > 200):
        raise invalid("model", "expected the model's name (at most 200 characters)")
    if key is not None and (not isinstance(key, str) or len(key) > MAX_KEY_LENGTH or "\n" in key):
        raise invalid("key", f"expected the key as one line of at most {MAX_KEY_LENGTH} characters")
    if vision is not None and not isinstance(vision, bool):
        raise invalid("vision", "expected true or false")


def do_create_model_endpoint(user, project, name, url, model, key="", vision=False) -> ModelEndpoint:
    """A project's model endpoint (409 when the name is taken). The key is stored, never shown back."""
    check_endpoint_fields(url, model, key, vision)
    try:
        with transaction.atomic():
            return ModelEndpoint.objects.create(
                project=project, owner=user, name=name, url=url, model=model, key=key or "", vision=bool(vision)
            )
    except IntegrityError:
        raise Conflict(f"project {project.name!r} already has a model endpoint {name!r}") from None


def do_change_model_endpoint(endpoint: ModelEndpoint, **changes) -> ModelEndpoint:
    """Change the given fields (a key given replaces the stored one; ``""`` removes it; absent keeps it)."""
    changes = {name: value for name, value in changes.items() if name in ENDPOINT_FIELDS and value is not None}
    check_endpoint_fields(**changes, required=False)
    for name, value in changes.items():
        setattr(endpoint, name, value)
    endpoint.save(update_fields=list(changes) or None)
    return endpoint


def endpoints_readable_by(user):
    """Endpoints of the projects where ``user`` is a researcher or admin (who may use them)."""
    return ModelEndpoint.objects.filter(project__in=Project.objects.for_user(user, EXPORT_ROLES)).select_related(
        "project", "owner"
    )


def check_endpoint_for_project(project, name) -> ModelEndpoint:
    """The project's endpoint named ``name``; 400 naming ``endpoint`` otherwise."""
    if not isinstance(name, str) or not name:
        raise invalid("endpoint", "the llm solver needs a model endpoint of the project (its name)")
    endpoint = ModelEndpoint.objects.filter(project=project, name=name).first()
    if endpoint is None:
        raise invalid("endpoint", f"project {project.name!r} has no model endpoint {name!r}")
    return endpoint


def chat_endpoint(endpoint: ModelEndpoint, temperature=0.0, max_tokens=1024, timeout=60.0, in_flight=1):
    """The ``agents.llm.Endpoint`` of a stored endpoint with a run's sampling settings (``ValueError`` naming the
    setting when one is out of range)."""
    return llm.Endpoint(
        endpoint.url,
        endpoint.model,
        endpoint.key,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        in_flight=in_flight,
    )


# --- Reading results (the web app's pages) ---------------------------------------------------------------


def runs_readable_by(user):
    """Runs of the projects where ``user`` is a researcher or admin (who may start them)."""
    return AgentRun.objects.filter(project__in=Project.objects.for_user(user, EXPORT_ROLES)).select_related(
        "project", "owner"
    )


def check_run_readable(user, run_id) -> AgentRun:
    """The run, or NotFound for anyone who is not a researcher or admin of its project (nothing is revealed)."""
    run = runs_readable_by(user).filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"no agent run {run_id} among yours")
    return run


def check_instance_readable(user, run_id, row_id) -> AgentRunInstance:
    run = check_run_readable(user, run_id)
    row = AgentRunInstance.objects.filter(run=run, pk=row_id).select_related("run", "task").first()
    if row is None:
        raise NotFound(f"no instance {row_id} in agent run {run_id}")
    return row


def score_table(run: AgentRun) -> dict:
    """The run's scores from its stored fields (so a running or cancelled run shows what it has):
    ``{"types": [...], "tasks": {task: {"all": x, type: y}}, "rows": [{"task", "cells": [all, *types]}],
    "overall": z, "instances": n, "summary": {...}}``: every task of the run has a row (one with nothing scorable
    an empty one, named in ``summary["tasks_unscorable"]``), and ``summary`` holds the instance mean beside the
    task mean (``agents.scoring.summary``)."""
    from agents import scoring

    rows = [
        {"task": task, "type": kind, "score": float("nan") if score is None else score}
        for task, kind, score in AgentFieldResult.objects.filter(row__run=run, skipped="").values_list(
            "row__task_name", "type", "score"
        )
    ]
    tasks = scoring.task_table(rows)
    types = sorted({row["type"] for row in rows})
    instances = list(run.instances.order_by("pk").values_list("task_name", "score"))
    names = sorted({name for name, _ in instances} | set(tasks))
    summary = scoring.summary(names, tasks, [0.0 if score is None else score for _, score in instances])
    every_task = {name: tasks.get(name, {"all": float("nan")}) for name in names}
    tables = {name: {k: scoring.json_number(v) for k, v in table.items()} for name, table in every_task.items()}
    return {
        "types": types,
        "tasks": tables,
        "rows": [{"task": name, "cells": [table.get(k) for k in ["all", *types]]} for name, table in tables.items()],
        "overall": summary["task_mean"],
        "instances": len(instances),
        "summary": summary,
    }


def compare_tables(first: dict, second: dict) -> dict:
    """Two score tables side by side: per task and column (``all`` then the types), both values and the change."""
    types = sorted(set(first["types"]) | set(second["types"]))
    rows = []
    for task in sorted(set(first["tasks"]) | set(second["tasks"])):
        a, b = first["tasks"].get(task, {}), second["tasks"].get(task, {})
        rows.append({"task": task, "cells": [pair(a.get(key), b.get(key)) for key in ["all", *types]]})
    return {
        "columns": ["all", *types],
        "rows": rows,
        "overall": pair(first["overall"], second["overall"]),
        "instance_mean": pair(first["summary"]["instance_mean"], second["summary"]["instance_mean"]),
        "unscorable": (
            [row["task"] for row in first["summary"]["tasks_unscorable"]],
            [row["task"] for row in second["summary"]["tasks_unscorable"]],
        ),
    }


def pair(a, b) -> dict:
    return {"a": a, "b": b, "change": None if a is None or b is None else b - a}
