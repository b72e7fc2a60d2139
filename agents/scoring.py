"""TurkingBench scoring, pure Python: the official scorer (``official``) and the paper's wording (``paper``).

``official`` reproduces ``src/evaluation_class.py`` of JHU-CLSP/turking-bench (``score_outputs`` and
``calculate_metrics``, with ``utils/cleaning.py``) rule for rule, quirks included; the spec's §4.4–4.6 and §5 list
them. ``paper`` follows the paper's §3.5 prose instead (checkbox IoU, range normalised L1 counted for real, no
punctuation stripping); its numbers are reported apart and never mixed with official ones.

Inputs are what the harness reads from the page (a prediction string per field, already built as the official
``extract_values`` does) and the raw gold list from ``TaskDir.gold`` (pandas values in file order).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable

import numpy

from . import lazy

OFFICIAL, PAPER = "official", "paper"
METRICS = (OFFICIAL, PAPER)
TEXT_TYPES = ("text", "textarea", "hidden")
CHOICE_TYPES = ("radio", "select")
SCORED_TYPES = (*TEXT_TYPES, *CHOICE_TYPES, "checkbox", "range")
EXCLUDED_NAMES = ("csrfmiddlewaretoken", "worker_ip", "ee", "submit")  # never scored (official list)
EMPTY_PREDICTIONS = ("", "[]", "['']")
EMPTY_TEXT_GOLD = ("nan", "{}", "'{}'")
_PUNCTUATION = set(string.punctuation)
_rouge = None


class UnsupportedFieldType(ValueError):
    """The official scorer has no rule for this input type (it raises "to be implemented")."""


def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def try_numeric(value):
    """``"3.0"`` → ``"3"``, ``4.0`` → ``"4"``, ``" 05 "`` → ``"5"``; anything else unchanged (official)."""
    try:
        number = float(value)
        whole = int(number)
    except Exception:  # noqa: BLE001 - the official helper swallows every error (nan, inf, text, None ...)
        return value
    return str(whole) if whole == number else str(number)


def clean_values(values: Iterable) -> list:
    """``None`` → ``""``, everything else through ``try_numeric``."""
    return [try_numeric(value) if value is not None else "" for value in values]


def normalize_answer(text: str) -> str:
    """Lower case, delete every ASCII punctuation character, collapse whitespace (SQuAD, without articles).

    Deleting punctuation makes ``"-1"`` equal ``"1"`` and ``"0.5"`` equal ``"05"``: an official quirk."""
    return " ".join("".join(char for char in text.lower() if char not in _PUNCTUATION).split())


def exact_match(prediction, gold) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def rouge_l(prediction: str, gold: str) -> float:
    """ROUGE-L F1 of rouge-score 0.1.2 with Porter stemming; identical strings short-circuit to 1.0."""
    global _rouge
    if prediction == gold:
        return 1.0
    if _rouge is None:
        rouge_scorer = lazy.load("rouge_score.rouge_scorer")  # nltk, scipy and sklearn: seconds
        _rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return _rouge.score(target=gold, prediction=prediction)["rougeL"].fmeasure


def max_over_golds(metric, prediction, golds: list) -> float:
    """``metric_max_over_ground_truths``: both sides through ``try_numeric``; raises on an empty list (as official)."""
    prediction = try_numeric(prediction)
    return float(max(metric(prediction, gold) for gold in clean_values(golds)))


def mean_over_golds(metric, prediction, golds: list) -> float:
    prediction = try_numeric(prediction)
    scores = [metric(prediction, gold) for gold in clean_values(golds)]
    return float(sum(scores)) / len(scores)


def majority(answers: list):
    """The most frequent answer; ties go to the one seen first. Blank answers vote.

    Counting is a dict in insertion order, as official: NaN answers pool only when they are the same object
    (pandas gives one shared NaN in a text column, a new one per cell in a numeric column)."""
    votes: dict = {}
    for answer in answers:
        votes[answer] = votes.get(answer, 0) + 1
    return max(votes, key=votes.get)


# --- Gold preparation (``retrieve_gold_labels`` + the first half of ``score_outputs``) -------------------------


def prepare_gold(field_type: str, raw: list) -> list | None:
    """The gold list the official scorer compares with, or None when the field is not counted.

    Checkbox and radio: NaN → ``""``. Checkbox: ``|``-joined values sorted. Text-like: ``nan``, ``{}``,
    ``'{}'`` and NaN → ``""``, ``try_numeric``, deduplicated; nothing but blanks left → not counted (so leaving a
    field empty earns nothing when no annotator wrote anything)."""
    gold = list(raw)
    if field_type in ("checkbox", "radio"):
        gold = ["" if is_nan(answer) else answer for answer in gold]
    if field_type == "checkbox":
        gold = ["|".join(sorted(a.split("|"))) if isinstance(a, str) and "|" in a else a for a in gold]
    if field_type in TEXT_TYPES:
        if not gold:
            return None
        gold = ["" if is_nan(a) or (isinstance(a, str) and a in EMPTY_TEXT_GOLD) else a for a in gold]
        gold = list(dict.fromkeys(clean_values(gold)))
        if gold in ([], [""]):
            return None
    return gold


# --- Per-field scores ---------------------------------------------------------------------------------------


def official_field_score(field_type: str, gold: list, prediction) -> float:
    """``calculate_metrics``: one field's score from its prepared gold and the prediction read from the page."""
    prediction = str(prediction)
    if gold in ([], [""]):
        return 1.0 if prediction in EMPTY_PREDICTIONS else 0.0
    if field_type in TEXT_TYPES:
        golds = [str(answer).replace("&amp;", "&") for answer in gold if str(answer) != ""]
        return max_over_golds(rouge_l, prediction.replace("&amp;", "&"), golds)
    if field_type in CHOICE_TYPES:
        return max_over_golds(exact_match, prediction, [str(majority(gold))])
    if field_type == "checkbox":
        return max_over_golds(exact_match, prediction, [str(answer) for answer in gold])
    if field_type == "range":
        return official_range_score(gold, prediction)
    raise UnsupportedFieldType(f"the official scorer has no rule for input type {field_type!r}")


def official_range_score(gold: list, prediction: str) -> float:
    """``1 − mean|a−p| / max(max|a|, |p|)`` (numpy, as official); non-numbers fall back to the mean exact match.

    A NaN gold (blank cell) gives NaN, which then makes the task's means NaN, as in the official CSV."""
    try:
        golds = numpy.array([float(answer) for answer in gold])
        predicted = float(prediction)
    except (TypeError, ValueError):
        return mean_over_golds(exact_match, prediction, [str(answer) for answer in gold])
    distance = numpy.mean(numpy.abs(golds - predicted))
    scale = max(numpy.max(numpy.abs(golds)), abs(predicted))
    if scale > 0:
        distance /= scale
    return float(1 - distance)


def paper_normalize(text) -> str:
    """The paper's comparison: numbers as numbers (``4.0`` = ``4``), case and spacing ignored, punctuation kept."""
    return " ".join(str(try_numeric(text)).lower().split())


def paper_field_score(field_type: str, gold: list, prediction) -> float:
    """The paper's §3.5: ROUGE-L max over labels, majority exact match, checkbox IoU, range normalised L1."""
    prediction = "" if prediction is None else str(prediction)
    if field_type in TEXT_TYPES:
        golds = [str(answer) for answer in gold if str(answer) != ""]
        return max(rouge_l(str(try_numeric(prediction)), str(answer)) for answer in golds)
    if field_type in CHOICE_TYPES:
        return float(paper_normalize(prediction) == paper_normalize(majority(gold)))
    if field_type == "checkbox":
        return max(iou(value_set(prediction), value_set(answer)) for answer in gold)
    if field_type == "range":
        return paper_range_score(gold, prediction)
    raise UnsupportedFieldType(f"no paper metric for input type {field_type!r}")


def value_set(value) -> frozenset[str]:
    if is_nan(value) or value is None:
        return frozenset()
    return frozenset(paper_normalize(part) for part in str(value).split("|") if part != "")


def iou(predicted: frozenset, gold: frozenset) -> float:
    union = predicted | gold
    return len(predicted & gold) / len(union) if union else 1.0


def paper_range_score(gold: list, prediction: str) -> float:
    """``max(0, 1 − mean|a−p| / max|a|)`` over the numeric golds; 0 for a non-numeric prediction."""
    golds = [float(answer) for answer in gold if _is_number(answer)]
    if not golds:
        return float(paper_normalize(prediction) in {paper_normalize(answer) for answer in gold})
    if not _is_number(prediction):
        return 0.0
    predicted = float(prediction)
    distance = sum(abs(answer - predicted) for answer in golds) / len(golds)
    scale = max(abs(answer) for answer in golds)
    if scale == 0:
        return 1.0 if distance == 0 else 0.0
    return max(0.0, 1 - distance / scale)


def _is_number(value) -> bool:
    try:
        return not math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def field_score(metric: str, field_type: str, raw_gold: list, prediction) -> float | None:
    """One field's score under ``metric``, or None when the field is not counted (blank text gold)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    if field_type not in SCORED_TYPES:
        raise UnsupportedFieldType(f"no rule for input type {field_type!r}")
    gold = prepare_gold(field_type, raw_gold)
    if gold is None:
        return None
    if metric == OFFICIAL:
        return official_field_score(field_type, gold, prediction)
    if gold in ([], [""]):
        return 1.0 if str(prediction) in EMPTY_PREDICTIONS else 0.0
    return paper_field_score(field_type, gold, prediction)


# --- Prediction strings (the end of ``extract_values`` / ``score_outputs``) ----------------------------------


def prediction_string(field_type: str, values: list) -> str:
    """The values read from the page → one prediction: checkbox ``|``-joined sorted, else the first or ``""``."""
    cleaned = clean_values(values)
    if field_type == "checkbox":
        return "|".join(sorted(str(value) for value in cleaned))
    return str(cleaned[0]) if cleaned else ""


# --- Aggregation --------------------------------------------------------------------------------------------


def instance_score(metric: str, scored: list[tuple[str, float]]) -> float:
    """Mean over the counted fields ``(type, score)``; 0.0 when none counts.

    Official: a range field adds 1.0 instead of its score (so range-only tasks pass the oracle check). Paper: the
    real score."""
    if not scored:
        return 0.0
    total = sum(1.0 if metric == OFFICIAL and field_type == "range" else score for field_type, score in scored)
    return total / len(scored)


def task_table(rows: list[dict]) -> dict[str, dict[str, float | None]]:
    """Per task: ``all`` = mean over every field score of the task (micro over fields and instances, real range
    scores), and one mean per field type, as the official per-task CSV. NaN (a blank range gold) propagates."""
    by_task: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        types = by_task.setdefault(row["task"], {})
        types.setdefault(row["type"], []).append(row["score"])
        types.setdefault("all", []).append(row["score"])
    return {task: {key: mean(scores) for key, scores in types.items()} for task, types in by_task.items()}


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def overall(tasks: dict[str, dict[str, float]]) -> float | None:
    """Our convention (no official code computes one): the unweighted mean over tasks of their ``all``; tasks
    whose ``all`` is NaN are left out, as are tasks with no scored field (the official per-task CSV has no row for
    them). None when no task has a score. ``summary`` names what was left out, beside the instance mean."""
    values = [table["all"] for table in tasks.values() if not math.isnan(table["all"])]
    return sum(values) / len(values) if values else None


NOTHING_SCORABLE = "no field was scored (none displayed, none with a scoring rule, or no annotator answered)"
NAN_SCORE = "its score is undefined (NaN: a range field whose gold is blank)"


def summary(task_names: list[str], tasks: dict[str, dict[str, float]], instance_scores: list[float]) -> dict:
    """Every task of a run counted: ``task_mean`` (= ``overall``, the mean over the tasks that have a score),
    ``instance_mean`` (the mean over every instance's score, an instance with nothing scorable counting 0.0 as the
    official ``score_outputs`` returns), and the tasks left out of the task mean, each named with the reason."""
    unscorable = []
    for name in task_names:
        table = tasks.get(name)
        if table is None:
            unscorable.append({"task": name, "reason": NOTHING_SCORABLE})
        elif math.isnan(table["all"]):
            unscorable.append({"task": name, "reason": NAN_SCORE})
    return {
        "tasks": len(task_names),
        "tasks_scored": len(task_names) - len(unscorable),
        "tasks_unscorable": unscorable,
        "task_mean": overall(tasks),
        "instances": len(instance_scores),
        "instance_mean": json_number(mean(instance_scores)) if instance_scores else None,
    }


def json_number(value: float | None) -> float | None:
    """NaN cannot go into JSON: it is written as null."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def is_numeric_literal(text: str) -> bool:
    return re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text.strip()) is not None
