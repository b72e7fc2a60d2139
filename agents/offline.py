"""Offline predictions for TurkingBench: check them up front, then score them on the real pages.

Predictions are a JSON list of ``{"task": <task name>, "instance": <0-based distinct instance, batch.csv order>,
"fields": {<field name>: <value, or a list of values for a checkbox group>}}``. A field left out is scored as
the page's untouched default.

``check_predictions`` is pure (no browser): it names every bad entry, e.g. ``predictions[3].fields.q1: unknown
field``. ``evaluate`` then applies each prediction through the action library on the rendered page in headless
Chromium (as the official offline path executes action strings), reads the page back and scores it, so field
types, visibility and untouched defaults are the page's own.
"""

from __future__ import annotations

import math
from functools import cache

import lxml.html

from . import scoring
from .browser import make_driver
from .harness import run
from .server import serve
from .solvers import Predictions
from .turkle import Dataset, TaskDir
from .vendor import VENDORED

MAX_ERRORS = 50
ENTRY_KEYS = {"task", "instance", "fields"}


class PredictionError(ValueError):
    """Predictions that cannot be scored; ``errors`` is ``[{"field": "predictions[3].fields.q1", "message"}]``."""

    def __init__(self, errors: list[dict]):
        self.errors = errors
        shown = "; ".join(f"{error['field']}: {error['message']}" for error in errors[:10])
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        super().__init__(shown + more)


@cache
def _static_types(template: str) -> dict[str, str]:
    """Name → type of the first input/select/textarea with that name in the template's own markup."""
    root = lxml.html.fragment_fromstring(template, create_parent="div")
    types: dict[str, str] = {}
    for element in root.iter():
        name = element.get("name") if isinstance(element.tag, str) else None
        if name is None or name in types:
            continue
        if element.tag == "input":
            types[name] = (element.get("type") or "text").strip().lower()
        else:
            types[name] = element.tag  # select, textarea, or another tag (not a field)
    return types


def static_field_type(task: TaskDir, name: str) -> str | None:
    """The field's type as the template's markup says, or None when it is made by script (checked on the page)."""
    return _static_types(task.template).get(name)


def _is_scalar(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int)


def _value_problem(field_type: str | None, value) -> str | None:
    if isinstance(value, list):
        if field_type not in (None, "checkbox"):
            return f"wrong value type: a list is only for a checkbox group, and this field is a {field_type}"
        if not all(_is_scalar(item) for item in value):
            return "wrong value type: a checkbox list holds strings or numbers"
        return None
    if not _is_scalar(value):
        return f"wrong value type: expected a string or a number, got {type(value).__name__}"
    if field_type == "range" and not (isinstance(value, int | float) or scoring.is_numeric_literal(value)):
        return "wrong value type: a range takes a number"
    return None


def check_predictions(predictions, dataset: Dataset, split: str | None = None) -> dict[tuple[str, int], dict]:
    """Validate ``predictions``; return ``{(task, instance): fields}`` or raise ``PredictionError``."""
    if not isinstance(predictions, list) or not predictions:
        raise PredictionError([{"field": "predictions", "message": "expected a non-empty list of predictions"}])
    try:
        allowed = set(dataset.split(split)) if split else set(dataset.task_names())
    except KeyError as error:
        raise PredictionError([{"field": "split", "message": str(error.args[0])}]) from error
    errors: list[dict] = []
    checked: dict[tuple[str, int], dict] = {}
    first_at: dict[tuple[str, int], int] = {}
    for index, entry in enumerate(predictions):
        where = f"predictions[{index}]"
        problems = _entry_problems(entry, where, dataset, allowed, split)
        if not problems:
            key = (entry["task"], entry["instance"])
            if key in first_at:
                problems = [
                    {"field": where, "message": f"duplicate of predictions[{first_at[key]}] (same task and instance)"}
                ]
            else:
                first_at[key], checked[key] = index, dict(entry["fields"])
        errors.extend(problems)
        if len(errors) >= MAX_ERRORS:
            break
    if errors:
        raise PredictionError(errors)
    return checked


def _entry_problems(entry, where: str, dataset: Dataset, allowed: set[str], split: str | None) -> list[dict]:
    if not isinstance(entry, dict):
        return [{"field": where, "message": "expected an object with task, instance and fields"}]
    problems = [{"field": f"{where}.{key}", "message": "unknown key"} for key in sorted(set(entry) - ENTRY_KEYS)]
    problems += [{"field": f"{where}.{key}", "message": "required"} for key in sorted(ENTRY_KEYS - set(entry))]
    if problems:
        return problems
    task_name, instance, fields = entry["task"], entry["instance"], entry["fields"]
    if not isinstance(task_name, str) or task_name not in allowed:
        scope = f"split {split!r}" if split else "the data"
        return [{"field": f"{where}.task", "message": f"unknown task {task_name!r} (not in {scope})"}]
    task = dataset.task(task_name)
    if not isinstance(instance, int) or isinstance(instance, bool) or not 0 <= instance < len(task):
        message = f"instance out of range: {task_name!r} has instances 0 to {len(task) - 1}"
        return [{"field": f"{where}.instance", "message": message}]
    if not isinstance(fields, dict):
        return [{"field": f"{where}.fields", "message": "expected an object of field name → value"}]
    known = set(task.field_names)
    for name, value in fields.items():
        if name not in known:
            problems.append({"field": f"{where}.fields.{name}", "message": "unknown field"})
        elif problem := _value_problem(static_field_type(task, name), value):
            problems.append({"field": f"{where}.fields.{name}", "message": problem})
    return problems


def evaluate(
    dataset: Dataset,
    predictions,
    *,
    metric: str = scoring.OFFICIAL,
    split: str | None = None,
    driver=None,
    progress=None,
    scripts: str = VENDORED,
) -> dict:
    """Score ``predictions`` on ``dataset``'s pages; returns the evaluation output (``docs/agents.md``).

    Raises ``PredictionError`` before any browser starts. ``driver``: a WebDriver to use (else a fresh headless
    Chromium, quit at the end). ``scripts``: the templates' CDN libraries ``vendored`` or ``original``
    (``agents.vendor``)."""
    if metric not in scoring.METRICS:
        raise PredictionError([{"field": "metric", "message": f"expected one of {', '.join(scoring.METRICS)}"}])
    checked = check_predictions(predictions, dataset, split)
    instances: dict[str, list[int]] = {}
    for task_name, instance in checked:
        instances.setdefault(task_name, []).append(instance)
    tasks = [dataset.task(name) for name in instances]
    own_driver = driver is None
    driver = driver or make_driver(allow_network=scripts != VENDORED)
    try:
        with serve(dataset, scripts) as pages:
            result = run(
                driver, Predictions(checked), tasks, pages.url, metric=metric, instances=instances, progress=progress
            )
    finally:
        if own_driver:
            driver.quit()
    data = result.as_dict()
    for key in ("solver", "seed", "sampled"):
        data.pop(key, None)
    return data
