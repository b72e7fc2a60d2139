"""Agreement among the workers of a form batch, their answers aggregated per task, and gold scores (pure: no
models, no Django). docs/quality.md, "Agreement and aggregation" and "Gold and qualifications", names each figure.

Input is plain values: the template's controls (``template_controls``), one ``(task, worker, answers)`` per
submitted assignment (``answers`` as stored: ``{name: value}`` or ``{name: [values]}``) and the stored gold score of
each answer to a gold task (``(task, worker, score)``). Output (``batch_agreement``) is a JSON-ready dict:

- per field: answers, tasks with two answers or more, the share of answers agreeing with their task's majority,
  Krippendorff's α (``krippendorff``; nominal for radio, select and checkbox, interval for range and number, not
  computed for free text) and how often Dawid–Skene picks another answer than the majority vote;
- per worker: agreement with the majority, and gold accuracy (``gold_accuracy``: the mean of the worker's gold
  scores, with how many there are);
- per task: the answer of each field aggregated by majority vote (``majority``) and by Dawid–Skene (``crowd-kit``)
  and the share of its answers agreeing with the majority.

Every figure of a task depends on that task's answers only: its majority answer is the most frequent canonical
answer, a tie going to the smallest one in plain string order, whatever the other tasks hold (Dawid–Skene, which
learns each worker's confusion from every task, is the one figure that looks across tasks).

Every figure that has nothing to stand on is ``None``, never 0 or 1: agreement on a field (or task) with fewer than
two answers, α when fewer than two values can be paired or they are all the same value, gold accuracy of a worker
who answered no gold task.

What is an answer: a control's name, unless every one of its kind is never an answer (hidden inputs, buttons) or the
name is one of MTurk's parameters or the scorer's excluded names (``is_answer``). Answers are compared in a
canonical form (``canonical``): a checkbox group as its checked values sorted and joined with ``|`` (nothing checked
is the answer ``""``); a number as the scorer writes it (``4.0`` → ``4``); text with its whitespace collapsed; a
blank answer to any other field is no answer.

Gold: a task's known answers are ``{field: [non-blank values]}`` (``known_answers``: a blank cell is never a known
answer); an answer's gold score (``gold_score``) is the mean, over the task's scored known fields, of the TurkingBench
scorer's official per-field metric (``agents.scoring.field_score``).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache

import krippendorff
import lxml.html
import numpy
from lxml.etree import ParserError

from agents import lazy, scoring

NOMINAL_TYPES = ("radio", "select", "checkbox")
INTERVAL_TYPES = ("range", "number")
# Controls that never hold an answer: buttons, files, and hidden inputs (never displayed, so never answered by a
# person nor scored by TurkingBench's evaluator).
NOT_ANSWER_TYPES = ("submit", "button", "reset", "image", "file", "hidden")
# The parameters MTurk (and the task frame) pass to a template, which templates often echo into hidden inputs.
MTURK_PARAMETERS = ("assignmentId", "hitId", "workerId", "turkSubmitTo")
NOT_ANSWER_NAMES = frozenset((*scoring.EXCLUDED_NAMES, *MTURK_PARAMETERS))
UNKNOWN_TYPE = "text"  # a name the template's markup lacks (made by a script) is scored as a text input
# Dawid–Skene's EM stops after this many iterations or when the log-likelihood moves less than the tolerance.
DS_ITERATIONS = 100
DS_TOLERANCE = 1e-5


@lru_cache(maxsize=256)
def _template_controls(template: str) -> tuple:
    if not template.strip():
        return ()
    try:
        root = lxml.html.fragment_fromstring(template, create_parent="div")
    except (ParserError, ValueError):
        try:
            root = lxml.html.document_fromstring(template)  # a whole document rather than a fragment
        except (ParserError, ValueError):
            return ()
    controls: dict[str, str] = {}
    for element in root.iter("input", "select", "textarea"):
        name = element.get("name")
        if name and name not in controls:
            controls[name] = (element.get("type") or "text").strip().lower() if element.tag == "input" else element.tag
    return tuple(controls.items())


def template_controls(template: str) -> dict[str, str]:
    """``{name: type}`` of every named control in a template's own markup; the first element of each name decides
    (an input's ``type``, else ``select`` or ``textarea``)."""
    return dict(_template_controls(template))


def is_answer(controls: dict, name: str) -> bool:
    """Whether ``name`` holds an answer: not a hidden input or a button, not one of MTurk's parameters or the
    scorer's excluded names. A name the markup lacks (made by a script) is an answer."""
    return name not in NOT_ANSWER_NAMES and controls.get(name) not in NOT_ANSWER_TYPES


def field_types(template: str) -> dict[str, str]:
    """``{name: type}`` of the answer fields in a template's own markup (``template_controls`` less what
    ``is_answer`` leaves out)."""
    controls = template_controls(template)
    return {name: kind for name, kind in controls.items() if is_answer(controls, name)}


def is_blank(value) -> bool:
    """No answer: nothing, an empty or whitespace-only text, or a list of such."""
    if isinstance(value, list):
        return all(is_blank(part) for part in value)
    return value is None or not str(value).strip()


def shown_answers(controls: dict, answers: dict) -> list[tuple[str, object]]:
    """``[(name, value)]`` of the answers worth showing, in the form's order: answer fields only, blanks left out."""
    return [(name, value) for name, value in answers.items() if is_answer(controls, name) and not is_blank(value)]


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


# --- Aggregation: majority vote per task, Dawid–Skene (crowd-kit) over the field ------------------------------


def majority(labels: Iterable[str]) -> tuple[str, int]:
    """The majority answer of one task's answers and how many gave it: the most frequent; a tie goes to the smallest
    answer in plain string order. Nothing but these answers decides it."""
    counts = Counter(labels)
    top = max(counts.values())
    return min(label for label, count in counts.items() if count == top), top


def dawid_skene(rows: list[tuple], iterations: int = DS_ITERATIONS, tolerance: float = DS_TOLERANCE) -> dict:
    """``(task, worker, label)`` rows → Dawid–Skene's label per task (crowd-kit's ``DawidSkene``, fed integer codes
    for workers and labels: pandas joins and groups them faster than strings). ``iterations=0``: not computed (an
    empty dict; every task's Dawid–Skene answer is then None)."""
    if not rows or iterations <= 0:
        return {}
    tasks, workers, labels = zip(*rows, strict=True)
    names = sorted(set(labels))
    if len(names) < 2:
        return dict.fromkeys(tasks, names[0])  # one answer in the whole field: nothing for EM to estimate
    pandas = lazy.load("pandas")  # crowd-kit and pandas: seconds of a process's start (agents.lazy)
    dawid_skene_model = lazy.load("crowdkit.aggregation").DawidSkene
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
        found = dawid_skene_model(n_iter=iterations, tol=tolerance).fit_predict(data)
    return {task: names[label] for task, label in found.items()}


# --- Gold: known answers, the score of one answer, a worker's gold accuracy ---------------------------------


def gold_cell(value) -> str:
    """A known answer as TurkingBench's batch.csv holds it (``a|b`` for several values)."""
    if isinstance(value, list):
        return "|".join(_text(part) for part in value)
    return _text(value)


def known_answers(entries: Iterable[dict]) -> dict[str, list[str]]:
    """A task's known answers from its CSV rows (``Task.gold``: ``[{"answers": {field: value}}]``): per field, the
    non-blank value of every row in file order. A field with only blank cells has none; an empty result means the
    task is not gold."""
    known: dict[str, list[str]] = {}
    for entry in entries:
        for name, value in entry.get("answers", {}).items():
            if not is_blank(value):
                known.setdefault(name, []).append(gold_cell(value))
    return known


def known_from_answers(controls: dict, answers: dict) -> dict[str, list[str]]:
    """Known answers taken from one assignment's answers: its non-blank answers to answer fields."""
    return {name: [gold_cell(value)] for name, value in shown_answers(controls, answers)}


def clean_known(known: dict) -> dict[str, list[str]]:
    """Known answers without blank values (and without fields left with none)."""
    kept = {name: [gold_cell(v) for v in values if not is_blank(v)] for name, values in known.items()}
    return {name: values for name, values in kept.items() if values}


def scored_type(controls: dict, name: str) -> str | None:
    """The scorer's field type of a known field, or None when the field is not scored (not an answer, or a type
    the official scorer has no rule for: number, email, date, ...)."""
    if not is_answer(controls, name):
        return None
    kind = controls.get(name, UNKNOWN_TYPE)
    return kind if kind in scoring.SCORED_TYPES else None


def field_gold_score(field_type: str, known: list[str], answer) -> float | None:
    """One answer's score against a field's known values, with the official TurkingBench metric, but for choices
    (radio, select, checkbox) compared exactly in their canonical form (``canonical``: ``4.0`` is ``4``): the official
    metric deletes punctuation before comparing, so a worker answering ``-2`` where ``2`` is known would score 1.0.
    None when the scorer does not count the field (a text field whose known values are all its empty markers)"""
    values = answer if isinstance(answer, list) else ([] if answer is None else [answer])
    prediction = scoring.prediction_string(field_type, values)
    if field_type in (*scoring.CHOICE_TYPES, "checkbox"):
        gold = scoring.prepare_gold(field_type, list(known))
        if gold is None:
            return None
        if gold in ([], [""]):
            return 1.0 if prediction in scoring.EMPTY_PREDICTIONS else 0.0
        targets = [scoring.majority(gold)] if field_type in scoring.CHOICE_TYPES else gold
        answered = canonical(field_type, prediction) or ""
        return 1.0 if answered in {canonical(field_type, str(target)) or "" for target in targets} else 0.0
    if field_type == "range" and prediction.strip().lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity"):
        return 0.0  # not a number on the scale: scored wrong, never left out (NaN would drop the field)
    try:
        score = scoring.field_score(scoring.OFFICIAL, field_type, list(known), prediction)
    except (scoring.UnsupportedFieldType, ValueError):
        return None
    return None if score is None or math.isnan(score) else float(score)


def gold_score(controls: dict, known: dict, answers: dict) -> float | None:
    """The gold score of one assignment's ``answers`` on a task with ``known`` answers: the mean, over the known
    fields with a non-blank value that the scorer counts, of ``field_gold_score``; a field left blank is scored as
    the empty answer. None when no field counts (the answer then has no gold score)."""
    scores = []
    for name, values in sorted(clean_known(known).items()):
        kind = scored_type(controls, name)
        score = None if kind is None else field_gold_score(kind, values, answers.get(name))
        if score is not None:
            scores.append(score)
    return math.fsum(scores) / len(scores) if scores else None


def gold_accuracy(scores: Iterable[float]) -> tuple[float | None, int]:
    """A worker's gold accuracy: ``(mean of their answers' gold scores, how many)``; ``(None, 0)`` without any.
    ``math.fsum`` makes the mean the same whatever order the scores come in."""
    scores = [score for score in scores if score is not None]
    return (math.fsum(scores) / len(scores) if scores else None), len(scores)


def gold_by_worker(rows: Iterable[tuple]) -> dict:
    """``(worker, score)`` rows → ``{worker: (gold accuracy, gold answers)}`` (``gold_accuracy`` per worker)."""
    scores: dict = defaultdict(list)
    for worker, score in rows:
        scores[worker].append(score)
    return {worker: gold_accuracy(values) for worker, values in scores.items()}


GOLD_NOTE = (
    "the mean gold score of every answer the worker submitted to a gold task of this batch (not reviewed, approved "
    "and rejected alike), each scored over the task's known fields with a value; the same figure on the review and "
    "agreement pages, in the API, the export's quality.json and a block's reason"
)


def percent(value: float) -> str:
    """A share as the pages, messages and reasons write it: ``40%``, ``93.3%`` (one decimal, none when whole)."""
    text = f"{100 * value:.1f}".removesuffix(".0")
    return f"{text}%"


def gold_text(accuracy: float | None, answers: int) -> str:
    """``gold accuracy 40% over 5 gold answers``: the figure and what it counts, one wording everywhere."""
    if accuracy is None:
        return "no gold answer yet"
    return f"gold accuracy {percent(accuracy)} over {answers} gold answer{'s' if answers != 1 else ''}"


# --- The batch -----------------------------------------------------------------------------------------------


def ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def answer_fields(controls: dict, assignments: list) -> dict:
    """``{name: type}``: the template's answer fields, then any other answer name the answers carry (type unknown:
    compared as nominal)."""
    names = {name: kind for name, kind in controls.items() if is_answer(controls, name)}
    for _, _, answers in assignments:
        for name in answers:
            if name not in names and name not in controls and is_answer(controls, name):
                names[name] = None
    return names


def field_figures(name: str, field_type: str | None, rows: list, iterations: int, tolerance: float) -> tuple:
    """One field's row of the table and ``{task: (majority, count, answers)}``."""
    labels_by_task: dict = defaultdict(list)
    for task, _, label in rows:
        labels_by_task[task].append(label)
    voted = {task: (*majority(labels), len(labels)) for task, labels in labels_by_task.items()}
    compared = [figures for figures in voted.values() if figures[2] >= 2]
    found = dawid_skene(rows, iterations, tolerance)
    level = level_of(field_type)
    row = {
        "name": name,
        "type": field_type,
        "level": level,
        "answers": len(rows),
        "tasks": len(voted),
        "tasks_compared": len(compared),
        "majority_share": ratio(sum(top for _, top, _ in compared), sum(n for _, _, n in compared)),
        "alpha": alpha(level, labels_by_task),
        "dawid_skene_differs": sum(1 for task, figures in voted.items() if found.get(task) != figures[0]),
    }
    return row, voted, found


def batch_agreement(
    controls: dict[str, str],
    assignments: Iterable[tuple],
    gold: Iterable[tuple] = (),
    iterations: int = DS_ITERATIONS,
    tolerance: float = DS_TOLERANCE,
) -> dict:
    """Agreement and aggregation over a batch's submitted assignments ``(task, worker, answers)`` and its gold
    scores ``(task, worker, score)`` (every answer to a gold task that has one). Fields: the template's answer
    fields (``controls``: ``template_controls``, or plain ``{name: type}``) and any other answer name the answers
    carry. See the module's docstring for the figures."""
    assignments = list(assignments)
    names = answer_fields(controls, assignments)
    rows_by_field: dict[str, list] = {name: [] for name in names}
    task_workers: dict = defaultdict(list)
    for task, worker, answers in assignments:
        task_workers[task].append(worker)
        for name, field_type in names.items():
            label = canonical(field_type, answers.get(name))
            if label is not None:
                rows_by_field[name].append((task, worker, label))

    fields, tasks = [], {}
    compared, agreed = defaultdict(int), defaultdict(int)
    for name, field_type in sorted(names.items()):
        row, voted, found = field_figures(name, field_type, rows_by_field[name], iterations, tolerance)
        fields.append(row)
        for task, worker, label in rows_by_field[name]:
            if voted[task][2] >= 2:
                compared[worker] += 1
                agreed[worker] += label == voted[task][0]
        for task, (label, top, answers) in voted.items():
            tasks.setdefault(task, {})[name] = {
                "answers": answers,
                "aggregated_majority": label,
                "aggregated_dawid_skene": found.get(task),
                "agreement": top / answers if answers >= 2 else None,
            }

    accuracy = gold_by_worker((worker, score) for _, worker, score in gold)
    answered = Counter(worker for _, worker, _ in assignments)
    workers = sorted(set(answered) | set(accuracy))
    return {
        "fields": fields,
        "workers": [
            {
                "worker": worker,
                "assignments": answered[worker],
                "answers_compared": compared[worker],
                "majority_agreement": ratio(agreed[worker], compared[worker]),
                "gold_answers": accuracy.get(worker, (None, 0))[1],
                "gold_accuracy": accuracy.get(worker, (None, 0))[0],
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
