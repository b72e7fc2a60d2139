"""Prediction runs (the agents area): a model's predictions for a split of a project's WebLINX or Mind2Web export,
from one of the project's model endpoints, made by the worker (``workers/agents/predict.py``) and evaluated in the
same job. Researchers and admins of the project start and read them; the endpoint's key never leaves the row. A run
asks within the project's model limits (``ModelLimits``), and only for a split that has demonstrations to predict."""

from types import SimpleNamespace

from django.conf import settings as site
from django.db import transaction

from agents import llm

from ..lib.splits import SPLITS
from ..lib.weblinx_turns import DEFAULT_TURN_SET, TURN_SETS
from ..models import ExportFormat, PredictionRun, Project
from . import queue
from .endpoints import (
    capped_default,
    check_endpoint_for_project,
    check_not_other_role,
    check_within_limit,
    model_limits,
)
from .endpoints import chat_endpoint as endpoint_for_run
from .errors import NotFound, ValidationFailed, invalid
from .exports.jobs import EXPORT_ROLES, check_choice, enqueue
from .exports.splits import DEFAULT_STATUSES, selected_demos, split_of

FORMATS = (ExportFormat.WEBLINX, ExportFormat.MIND2WEB)
MAX_CANDIDATES = 25  # Mind2Web: the letters B to Z (A is "None of the above")
DEFAULTS = {"temperature": 0.0, "max_tokens": 256, "timeout": 60.0, "candidates": 10, "turns": DEFAULT_TURN_SET}


def with_defaults(project, settings: dict) -> dict:
    """The run's settings with a default for each one not given (None), the defaults within the project's limits:
    temperature 0, 256 tokens, 60 s, ``PREDICT_IN_FLIGHT`` requests in flight, 10 Mind2Web choices, the official
    WebLINX turns."""
    limits = model_limits(project)
    defaults = {
        **DEFAULTS,
        "max_tokens": capped_default(limits, "max_tokens", DEFAULTS["max_tokens"]),
        "timeout": capped_default(limits, "max_timeout", DEFAULTS["timeout"]),
        "in_flight": capped_default(limits, "max_in_flight", site.PREDICT_IN_FLIGHT),
    }
    return {name: default if settings.get(name) is None else settings[name] for name, default in defaults.items()}


def demos_to_predict(project, fmt, split) -> int:
    """How many demonstrations the run's export holds: the project's validated ones in ``split``."""
    split_of_demo = split_of(project, fmt)
    return sum(1 for demo in selected_demos(project, DEFAULT_STATUSES) if split_of_demo(demo) == split)


def check_prediction_request(project, fmt, split, endpoint_name, settings: dict):
    """The project's endpoint for a run, once every setting is checked (400 naming each bad one), each within the
    project's model limits, and the split has demonstrations to predict."""
    check_choice("format", fmt, FORMATS)
    check_choice("split", split, SPLITS[fmt])
    check_turns(fmt, settings.get("turns", DEFAULT_TURN_SET))
    endpoint = check_endpoint_for_project(project, endpoint_name)
    shown = SimpleNamespace(url=endpoint.url, model=endpoint.model, key="", **settings_for_client(settings))
    problems = [
        {"field": name, "message": message}
        for name, message in llm.endpoint_problems(shown).items()
        if name not in ("url", "model")
    ]
    candidates = settings.get("candidates", 10)
    if isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= MAX_CANDIDATES:
        problems.append({"field": "candidates", "message": f"expected a whole number from 1 to {MAX_CANDIDATES}"})
    if problems:
        raise ValidationFailed("; ".join(f"{p['field']}: {p['message']}" for p in problems), problems)
    limits = model_limits(project)
    for limit, name in (("max_tokens", "max_tokens"), ("max_in_flight", "in_flight"), ("max_timeout", "timeout")):
        check_within_limit(limits, limit, settings[name])
    if not demos_to_predict(project, fmt, split):
        raise invalid(
            "split",
            f"nothing to predict: split {split!r} has no validated demonstrations in project {project.name!r} "
            f"(a prediction run asks the model about the {fmt} export of the validated ones)",
        )
    return endpoint


def check_turns(fmt, turns) -> None:
    """WebLINX: ``official`` or ``all`` (``annotation.lib.weblinx_turns``); Mind2Web asks every step."""
    check_choice("turns", turns, TURN_SETS)
    if fmt == ExportFormat.MIND2WEB and turns != DEFAULT_TURN_SET:
        raise invalid("turns", f"Mind2Web asks about every step; {turns!r} applies to weblinx only")


def settings_for_client(settings: dict) -> dict:
    return {key: settings[key] for key in ("temperature", "max_tokens", "timeout", "in_flight")}


def do_create_prediction_run(user, project, fmt, split, endpoint_name, settings: dict, evaluate=True, send=True):
    """Create a run with ``settings`` (temperature, max_tokens, timeout, in_flight, candidates, turns; one None or
    absent takes its default, ``with_defaults``) and enqueue it."""
    settings = with_defaults(project, settings)
    endpoint = check_prediction_request(project, fmt, split, endpoint_name, settings)
    with transaction.atomic():
        run = PredictionRun.objects.create(
            project=project,
            owner=user,
            format=fmt,
            split=split,
            endpoint=endpoint,
            endpoint_name=endpoint.name,
            model=endpoint.model,
            candidates=settings.get("candidates", 10),
            turns=settings["turns"],
            evaluate=bool(evaluate),
            **settings_for_client(settings),
        )
        if send:
            enqueue(queue.PREDICTION, run)
    return run


def runs_readable_by(user):
    projects = Project.objects.for_user(user, EXPORT_ROLES)
    return PredictionRun.objects.filter(project__in=projects).select_related("project", "owner")


def check_split_filter(split: str | None) -> None:
    """``?split=`` of the run list must be a WebLINX or Mind2Web split (a 400 naming it otherwise)."""
    known = sorted({name for names in SPLITS.values() for name in names})
    if split and split not in known:
        raise invalid("split", f"unknown split {split!r}; expected one of: {', '.join(known)}")


def check_run_readable(user, run_id) -> PredictionRun:
    run = runs_readable_by(user).filter(pk=run_id).first() if isinstance(run_id, int) else None
    if run is None:
        check_not_other_role(user, PredictionRun.objects, run_id)
        raise NotFound(f"no prediction run {run_id}")
    return run


def chat_endpoint(run: PredictionRun) -> llm.Endpoint:
    """The endpoint to ask, with the run's settings (``EndpointError`` when its endpoint was removed)."""
    if run.endpoint is None:
        raise llm.EndpointError(f"the model endpoint {run.endpoint_name!r} was removed")
    return endpoint_for_run(
        run.endpoint,
        temperature=run.temperature,
        max_tokens=run.max_tokens,
        timeout=run.timeout,
        in_flight=run.in_flight,
    )


def compare_runs(first: PredictionRun, second: PredictionRun) -> dict:
    """Two runs' aggregate scores side by side: ``{"rows": [{"metric", "a", "b", "change"}], "same_split"}`` (the
    same format, split and turns: comparable figures)."""
    a, b = (run.results.get("aggregate") or {} for run in (first, second))
    rows = []
    for metric in dict.fromkeys([*a, *b]):
        x, y = a.get(metric), b.get(metric)
        change = y - x if isinstance(x, int | float) and isinstance(y, int | float) else None
        rows.append({"metric": metric, "a": x, "b": y, "change": change})
    same = (first.format, first.split, first.turns) == (second.format, second.split, second.turns)
    return {"rows": rows, "same_split": same}
