"""Agreement among the workers of a form batch and their answers aggregated per task (pure: no models, no Django).

Input is plain values: the template's field types (``field_types``), one ``(task, worker, answers)`` per submitted
assignment (``answers`` as stored: ``{name: value}`` or ``{name: [values]}``) and the tasks' gold entries. Output
(``batch_agreement``) is a JSON-ready dict:

- per field: answers, tasks with two answers or more, the share of answers agreeing with their task's majority,
  Krippendorff's α (``krippendorff``; nominal for radio, select and checkbox, interval for range and number, not
  computed for free text) and how often Dawid–Skene picks another answer than the majority vote;
- per worker: agreement with the majority, and gold accuracy (the TurkingBench scorer's official per-field metric,
  ``agents.scoring.field_score``, over the worker's answers on tasks with gold);
- per task: the answer of each field aggregated by majority vote and by Dawid–Skene (``crowd-kit``) and the share
  of its answers agreeing with the majority.

Every figure that has nothing to stand on is ``None``, never 0 or 1: agreement on a field (or task) with fewer than
two answers, α when fewer than two values can be paired or they are all the same value, gold accuracy of a worker
who answered no gold task.

Answers are compared in a canonical form (``canonical``): a checkbox group as its checked values sorted and joined
with ``|`` (nothing checked is the answer ``""``); a number as the scorer writes it (``4.0`` → ``4``); text with its
whitespace collapsed; a blank answer to any other field is no answer. Majority-vote ties go to the smallest
canonical answer (crowd-kit's rule), so the aggregated answer is reproducible.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache

import krippendorff
import lxml.html
import numpy
import pandas
from crowdkit.aggregation import DawidSkene, MajorityVote
from lxml.etree import ParserError

from agents import scoring

NOMINAL_TYPES = ("radio", "select", "checkbox")
INTERVAL_TYPES = ("range", "number")
NOT_ANSWERS = ("submit", "button", "reset", "image", "file")
IGNORED_NAMES = frozenset(scoring.EXCLUDED_NAMES)
# Dawid–Skene's EM stops after this many iterations or when the log-likelihood moves less than the tolerance.
DS_ITERATIONS = 100
DS_TOLERANCE = 1e-5


@lru_cache(maxsize=256)
def _template_types(template: str) -> tuple:
    if not template.strip():
        return ()
    try:
        root = lxml.html.fragment_fromstring(template, create_parent="div")
    except (ParserError, ValueError):
        try:
            root = lxml.html.document_fromstring(template)  # a whole document rather than a fragment
        except (ParserError, ValueError):
            return ()
    types: dict[str, str] = {}
    for element in root.iter("input", "select", "textarea"):
        name = element.get("name")
        if not name or name in types or name in IGNORED_NAMES:
            continue
        kind = (element.get("type") or "text").strip().lower() if element.tag == "input" else element.tag
        if kind not in NOT_ANSWERS:
            types[name] = kind
    return tuple(types.items())


def field_types(template: str) -> dict[str, str]:
    """``{name: type}`` of the answer fields in a template's own markup (the first element of each name decides:
    an input's ``type``, else ``select`` or ``textarea``); buttons and the scorer's excluded names left out."""
    return dict(_template_types(template))


def level_of(field_type: str | None) -> str | None:
    """Krippendorff's level of measurement for a field type; None for free text (α is not computed)."""
    if field_type in INTERVAL_TYPES:
        return "interval"
    if field_type in NOMINAL_TYPES or field_type is None:
        return "nominal"
    return None


def _text(value) -> str:
    return "" if value is None else str(value)


def canonical(field_type: str | None, value) -> str | None:
    """An answer in the form answers are compared in, or None when the field was left unanswered."""
    if field_type == "checkbox":
        parts = value if isinstance(value, list) else _text(value).split("|")
        return "|".join(sorted(str(scoring.try_numeric(_text(part).strip())) for part in parts if _text(part).strip()))
    if isinstance(value, list):
        value = "|".join(_text(part) for part in value)
    text = " ".join(_text(value).split())
    if not text:
        return None
    if field_type in INTERVAL_TYPES or field_type in ("radio", "select"):
        return str(scoring.try_numeric(text))
    return text


def number(label: str) -> float | None:
    try:
        value = float(label)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# --- Krippendorff's α ---------------------------------------------------------------------------------------


def alpha(level: str | None, labels_by_task: dict) -> float | None:
    """α over ``{task: [answers]}`` at ``level``; None when undefined (free text, fewer than two pairable values,
    a single value in the domain, or a non-finite result). Interval answers that are not numbers are left out."""
    if level is None:
        return None
    units = []
    for labels in labels_by_task.values():
        values = [number(label) for label in labels] if level == "interval" else list(labels)
        values = [value for value in values if value is not None]
        if len(values) >= 2:
            units.append(values)
    if sum(len(values) for values in units) < 2:
        return None
    domain = sorted({value for values in units for value in values})
    if len(domain) < 2:
        return None
    position = {value: index for index, value in enumerate(domain)}
    counts = numpy.zeros((len(units), len(domain)))
    for row, values in enumerate(units):
        for value in values:
            counts[row, position[value]] += 1
    value_domain = numpy.array(domain, dtype=float) if level == "interval" else numpy.arange(len(domain))
    try:
        result = krippendorff.alpha(value_counts=counts, value_domain=value_domain, level_of_measurement=level)
    except (ValueError, ZeroDivisionError):
        return None
    result = float(result)
    return result if math.isfinite(result) else None


# --- Aggregation (crowd-kit) ---------------------------------------------------------------------------------


def aggregate(rows: list[tuple], iterations: int = DS_ITERATIONS, tolerance: float = DS_TOLERANCE):
    """``(task, worker, label)`` rows → (majority label per task, majority share per task, Dawid–Skene label per
    task), each a dict by task. Crowd-kit's ``MajorityVote`` and ``DawidSkene``, fed integer codes for workers and
    labels (pandas joins and groups them faster than strings; the codes of labels keep their sorted order, so
    majority-vote ties still go to the smallest answer)."""
    if not rows:
        return {}, {}, {}
    tasks, workers, labels = zip(*rows, strict=True)
    names = sorted(set(labels))
    code = {label: index for index, label in enumerate(names)}
    data = pandas.DataFrame(
        {
            "task": list(tasks),
            "worker": pandas.factorize(pandas.Series(workers))[0],
            "label": [code[label] for label in labels],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) of a confusion entry never observed
        warnings.simplefilter("ignore", DeprecationWarning)  # crowd-kit 1.4.2 uses pandas' inplace= and copy=
        vote = MajorityVote().fit(data)
        majority = {task: names[label] for task, label in vote.labels_.items()}
        share = vote.probas_.max(axis="columns").to_dict()
        if len(names) < 2:
            return majority, share, dict(majority)  # one answer in the whole field: nothing for EM to estimate
        found = DawidSkene(n_iter=iterations, tol=tolerance).fit_predict(data)
    return majority, share, {task: names[label] for task, label in found.items()}


# --- Gold accuracy (the TurkingBench scorer's per-field metric) -----------------------------------------------


def gold_cell(value) -> str:
    """A gold answer as TurkingBench's batch.csv holds it (``a|b`` for several values)."""
    if isinstance(value, list):
        return "|".join(_text(part) for part in value)
    return _text(value)


def gold_field_score(field_type: str | None, gold_values: list, answer) -> float | None:
    """One answer's score against a field's gold values (one per gold entry), with the official TurkingBench
    metric; None when the field is not scored (a type the scorer has no rule for, or a blank text gold)."""
    if field_type not in scoring.SCORED_TYPES or not gold_values:
        return None
    values = answer if isinstance(answer, list) else ([] if answer is None else [answer])
    prediction = scoring.prediction_string(field_type, values)
    try:
        score = scoring.field_score(scoring.OFFICIAL, field_type, [gold_cell(v) for v in gold_values], prediction)
    except scoring.UnsupportedFieldType:
        return None
    return None if score is None or math.isnan(score) else float(score)


def gold_scores(types: dict, answers: dict, gold: list[dict]) -> list[float]:
    """The scores of one assignment's answers on every gold field of its task (``gold``: the task's entries
    ``{"answers": {name: value}}``)."""
    names = {name for entry in gold for name in entry.get("answers", {})}
    scores = []
    for name in sorted(names):
        score = gold_field_score(
            types.get(name), [entry["answers"][name] for entry in gold if name in entry["answers"]], answers.get(name)
        )
        if score is not None:
            scores.append(score)
    return scores


def gold_accuracy(scores: list[float]) -> float | None:
    """The mean gold score; None when nothing was scored."""
    return sum(scores) / len(scores) if scores else None


# --- The batch -----------------------------------------------------------------------------------------------


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def batch_agreement(
    types: dict[str, str],
    assignments: Iterable[tuple],
    gold: dict | None = None,
    iterations: int = DS_ITERATIONS,
    tolerance: float = DS_TOLERANCE,
) -> dict:
    """Agreement and aggregation over a batch's submitted assignments ``(task, worker, answers)``; ``gold`` maps a
    task to its gold entries. Fields: the template's (``types``) and any other name the answers carry (type
    unknown: compared as nominal). See the module's docstring for the figures."""
    gold = gold or {}
    assignments = list(assignments)
    names = dict(types)
    for _, _, answers in assignments:
        for name in answers:
            if name not in names and name not in IGNORED_NAMES:
                names[name] = None
    rows_by_field: dict[str, list] = {name: [] for name in names}
    task_workers: dict = defaultdict(list)
    gold_by_worker: dict = defaultdict(list)
    for task, worker, answers in assignments:
        task_workers[task].append(worker)
        for name, field_type in names.items():
            label = canonical(field_type, answers.get(name))
            if label is not None:
                rows_by_field[name].append((task, worker, label))
        if gold.get(task):
            gold_by_worker[worker].extend(gold_scores(types, answers, gold[task]))

    fields, tasks = [], {}
    compared, agreed = defaultdict(int), defaultdict(int)
    for name, field_type in sorted(names.items()):
        rows = rows_by_field[name]
        majority, share, dawid_skene = aggregate(rows, iterations, tolerance)
        labels_by_task: dict = defaultdict(list)
        for task, _, label in rows:
            labels_by_task[task].append(label)
        in_agreement = pairable = 0
        for task, labels in labels_by_task.items():
            if len(labels) >= 2:
                pairable += len(labels)
                in_agreement += round(share[task] * len(labels))
        for task, worker, label in rows:
            if len(labels_by_task[task]) >= 2:
                compared[worker] += 1
                agreed[worker] += label == majority[task]
        level = level_of(field_type)
        fields.append(
            {
                "name": name,
                "type": field_type,
                "level": level,
                "answers": len(rows),
                "tasks": len(labels_by_task),
                "tasks_compared": sum(1 for labels in labels_by_task.values() if len(labels) >= 2),
                "majority_share": ratio(in_agreement, pairable),
                "alpha": alpha(level, labels_by_task),
                "dawid_skene_differs": sum(1 for task in majority if dawid_skene.get(task) != majority[task]),
            }
        )
        for task, labels in labels_by_task.items():
            tasks.setdefault(task, {})[name] = {
                "answers": len(labels),
                "aggregated_majority": majority[task],
                "aggregated_dawid_skene": dawid_skene.get(task),
                "agreement": share[task] if len(labels) >= 2 else None,
            }

    workers = sorted(set(compared) | {worker for _, worker, _ in assignments})
    answered = defaultdict(int)
    for _, worker, _ in assignments:
        answered[worker] += 1
    return {
        "fields": fields,
        "workers": [
            {
                "worker": worker,
                "assignments": answered[worker],
                "answers_compared": compared[worker],
                "majority_agreement": ratio(agreed[worker], compared[worker]),
                "gold_fields": len(gold_by_worker[worker]),
                "gold_accuracy": gold_accuracy(gold_by_worker[worker]),
            }
            for worker in workers
        ],
        "tasks": [
            {"task": task, "workers": task_workers[task], "fields": tasks.get(task, {})}
            for task in sorted(task_workers, key=sort_key)
        ],
    }


def sort_key(value):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))
