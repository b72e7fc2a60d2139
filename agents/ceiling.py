"""The human ceiling of a scored instance, and why a solver stayed below it (pure Python).

**Ceiling.** Each annotator row of an instance is one person's complete answer. Scored as a prediction against the
whole gold (every annotator, that one included) with the run's metric, over the fields the run counted, one of them
scores best: that is the instance's ceiling, and that annotator's field scores are the fields' ceilings. A text
field's ceiling is 1.0 (an annotator's own text is among the golds); a radio or select field's is below 1.0 when
that annotator is outside the majority; a range field's when annotators disagree. Per task and overall the
ceilings aggregate as the scores do (``scoring.task_table``, ``scoring.overall``), so each sits beside the score
it bounds.

**Shortfalls.** A counted field scoring below its ceiling gets a reason (``shortfall``), in this order:

- ``dynamic element``: the field was not displayed when its turn came, so the solver was never asked (a script
  shows it later, e.g. after another answer);
- ``the control cannot hold the gold value``: a read-only textarea (the official reader skips it), or a range whose
  min, max or step cannot hold the best annotator's number (the control keeps the nearest it holds);
- ``action failed``: the solver's action raised (a value the control does not offer, a control the action library
  cannot set): the error;
- ``annotators disagree``: (oracle) the page holds what the oracle chose from the annotators' answers (the
  majority, one annotator's text or boxes, the median of a range), which scores below the best single annotator;
- ``page changed the value``: (oracle) the page holds a value no annotator gave, after the oracle's actions (a
  script rewrote it, or the control ignored the action), or the oracle took no action;
- otherwise ``answer``: the solver's answer differs from the best annotator's.
"""

from __future__ import annotations

import math

from . import scoring

EPSILON = 1e-9


def annotator_prediction(field_type: str, answer) -> str:
    """What the page would read had this annotator's answer been entered (``scoring.prediction_string``)."""
    if answer is None or scoring.is_nan(answer):
        return ""
    if field_type in scoring.TEXT_TYPES and isinstance(answer, str) and answer in scoring.EMPTY_TEXT_GOLD:
        return ""
    if field_type == "checkbox":
        return scoring.prediction_string("checkbox", [part for part in str(answer).split("|") if part != ""])
    return scoring.prediction_string(field_type, [answer])


def annotator_scores(metric: str, field_type: str, raw_gold: list) -> list[float]:
    """Each annotator's answer scored against the whole gold, in row order."""
    return [
        scoring.field_score(metric, field_type, raw_gold, annotator_prediction(field_type, answer))
        for answer in raw_gold
    ]


def _ranked(value: float) -> float:
    return -math.inf if value is None or math.isnan(value) else value


def apply(result, gold: dict[str, list], oracle: bool) -> None:
    """Set ``ceiling`` on ``result`` (an ``InstanceResult``) and on each field it counted, and each counted field's
    ``shortfall``; an instance with no counted field has ceiling 0.0, as its score."""
    counted = [f for f in result.fields if f.skipped is None]
    scores = {f.field: annotator_scores(result.metric, f.type, gold[f.field]) for f in counted}
    rows = max((len(gold[f.field]) for f in counted), default=0)
    if not rows:
        result.ceiling = 0.0 if counted or not result.ended else None
        return
    by_row = [
        scoring.instance_score(result.metric, [(f.type, scores[f.field][a]) for f in counted]) for a in range(rows)
    ]
    # Ties (an instance score counts a range field as 1.0) go to the annotator whose fields score best on the mean.
    by_fields = [scoring.mean([_ranked(scores[f.field][a]) for f in counted]) for a in range(rows)]
    best = max(range(rows), key=lambda a: (_ranked(by_row[a]), by_fields[a]))
    result.ceiling = by_row[best]
    for f in counted:
        f.ceiling = scores[f.field][best]
        if _ranked(f.score) < _ranked(f.ceiling) - EPSILON:
            f.shortfall = shortfall(f, gold[f.field], oracle, gold[f.field][best])


def shortfall(f, raw_gold: list, oracle: bool, best=None) -> str:
    """Why field result ``f`` scores below its ceiling, ``best`` the best annotator's answer (see the module
    docstring)."""
    if not f.shown_at_turn:
        return "dynamic element: not displayed when its turn came, so no action was taken"
    held = f.cannot_hold or {}
    if why := held.get("*") or held.get(annotator_prediction(f.type, best)):
        return f"the control cannot hold the gold value: {why}"
    if f.error:
        return f"action failed: {f.error}"
    if not oracle:
        return "answer: differs from the best annotator's"
    if not f.calls:
        return "page changed the value: the oracle took no action (the page's own state)"
    if f.prediction in oracle_choices(f.type, raw_gold):
        return f"annotators disagree: the oracle's pick ({PICKS.get(f.type, 'a gold answer')}) is not the best answer"
    read, last = cut(repr(f.prediction)), cut(f.calls[-1])
    return (
        f"page changed the value: the page reads {read} after {last}, no annotator's answer "
        "(a script rewrote it, or the control took another value)"
    )


PICKS = {
    "radio": "the majority",
    "select": "the majority",
    "checkbox": "one annotator's boxes",
    "range": "the median of the answers",
    "text": "one annotator's text",
    "textarea": "one annotator's text",
    "hidden": "one annotator's text",
}


def oracle_choices(field_type: str, raw_gold: list) -> set[str]:
    """What the page may read after the oracle (``agents.solvers.Oracle``): one annotator's answer, or the median."""
    choices = {annotator_prediction(field_type, answer) for answer in raw_gold}
    if field_type == "range":
        with_numbers = [float(a) for a in raw_gold if is_number(a)]
        if with_numbers:
            choices.add(scoring.prediction_string("range", [median(with_numbers)]))
    return choices


def is_number(value) -> bool:
    """A finite number, or a string of one (not a bool, not None)."""
    if isinstance(value, bool) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def median(values: list[float]) -> float:
    """The lower median: one of the values, and a best point of the range score (mean absolute distance)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(fields: list[dict], instances: list[float | None]) -> dict:
    """The ceilings beside a run's scores: per task (``all``) and ``overall`` from the counted fields' rows
    (``{"task", "type", "ceiling"}``) as the scores aggregate, and ``overall_instances``, the mean of the instances'
    ceilings (those that have one: an instance that ended early has none)."""
    rows = [{**row, "score": row["ceiling"]} for row in fields if row.get("ceiling") is not None]
    tasks = scoring.task_table(rows)
    known = [value for value in instances if value is not None]
    return {
        "tasks": {task: scoring.json_number(values["all"]) for task, values in tasks.items()},
        "overall": scoring.json_number(scoring.overall(tasks)),
        "overall_instances": scoring.json_number(scoring.mean(known)) if known else None,
    }
