"""Problems reviewers marked in a project's demos, counted per kind (docs/quality.md#problems-marked).

Per kind: ``marks``, distinct ``demos`` and ``turns`` marked (task-level kinds mark no turn), and ``agreement``:
on each demo, every pair of reviewers who both marked something there is compared target by target (a turn, or the
task); ``compared`` counts the (pair, target) where either marked the kind, ``agreeing`` those where both did, and
``agreement`` = agreeing / compared (null when nothing was compared). A reviewer who marked nothing on a demo is not
compared there: no mark cannot be told from not looking.
"""

from itertools import combinations

from ...models import ProblemMark
from ..review import kinds_of


def problem_counts(project) -> dict:
    """``{"kinds": [{"key", "label", "level", "marks", "demos", "turns", "compared", "agreeing", "agreement"}],
    "totals": {the same figures over every kind}}``, kinds in the taxonomy's order (a marked kind it no longer
    lists after them)."""
    marks = list(
        ProblemMark.objects.filter(demonstration__project=project).values_list(
            "demonstration_id", "turn_id", "kind", "reviewer_id"
        )
    )
    reviewers = {}
    for demo, _, _, reviewer in marks:
        reviewers.setdefault(demo, set()).add(reviewer)
    kinds = kinds_of(project)
    listed = {kind["key"] for kind in kinds}
    kinds += [{"key": key, "label": key, "level": ""} for key in sorted({m[2] for m in marks} - listed)]
    rows = [{**kind, **figures([m for m in marks if m[2] == kind["key"]], reviewers)} for kind in kinds]
    return {"kinds": rows, "totals": figures(marks, reviewers)}


def figures(marks, reviewers) -> dict:
    """The figures of ``marks`` (``(demo, turn, kind, reviewer)``); ``reviewers``: ``{demo: {who marked there}}``."""
    compared, agreeing = pair_agreement(marks, reviewers)
    return {
        "marks": len(marks),
        "demos": len({m[0] for m in marks}),
        "turns": len({m[1] for m in marks if m[1] is not None}),
        "compared": compared,
        "agreeing": agreeing,
        "agreement": round(agreeing / compared, 4) if compared else None,
    }


def pair_agreement(marks, reviewers) -> tuple[int, int]:
    """``(compared, agreeing)`` over each demo's pairs of reviewers who marked there (the module's docstring)."""
    marked = {}
    for demo, turn, kind, reviewer in marks:
        marked.setdefault((demo, turn, kind), set()).add(reviewer)
    compared = agreeing = 0
    for (demo, _, _), who in marked.items():
        for pair in combinations(sorted(reviewers[demo]), 2):
            hits = len(who & set(pair))
            compared += hits > 0
            agreeing += hits == 2
    return compared, agreeing


CSV_COLUMNS = ("demo", "turn", "turn_seq", "kind", "label", "reviewer", "note", "marked_at")


def problem_rows(project) -> list[list]:
    """Every mark of the project as a row of ``CSV_COLUMNS`` (a task-level mark has no turn), by demo then time."""
    labels = {kind["key"]: kind["label"] for kind in kinds_of(project)}
    marks = (
        ProblemMark.objects.filter(demonstration__project=project)
        .select_related("demonstration", "turn", "reviewer")
        .order_by("demonstration__name", "created_at", "id")
    )
    return [
        [
            mark.demonstration.name,
            mark.turn_id,
            mark.turn.seq if mark.turn else None,
            mark.kind,
            labels.get(mark.kind, mark.kind),
            mark.reviewer.username,
            mark.note,
            mark.created_at.isoformat(),
        ]
        for mark in marks
    ]
