"""Problems reviewers mark on a demo's task or on one of its turns (steps), from the project's taxonomy of kinds.

A mark is its own record (``ProblemMark``): no revision, no edit, allowed whatever the demo's status (a second
reviewer marks a decided demo). Reviewers and admins of the project mark and unmark their own marks (an admin any);
everyone who may open the demo in review sees them, with who marked, as comments. The taxonomy
(``ProblemTaxonomy``) is the project admins': a kind in use cannot be removed or change level (409 naming it).
"""

import re

from django.db import IntegrityError, transaction
from django.db.models import Count

from ...models import Demonstration, ProblemMark, ProblemTaxonomy, Project, Role
from ..errors import Conflict, Forbidden, NotFound, invalid
from ..manage.access import check_project_role
from .access import can_curate, check_demo_reviewable, check_turn

TURN, TASK = "turn", "task"
LEVELS = (TURN, TASK)
DEFAULT_KINDS = [
    {"key": "wrong_target", "label": "Wrong target", "level": TURN},
    {"key": "wrong_value", "label": "Wrong value", "level": TURN},
    {"key": "missing_step", "label": "Missing step", "level": TURN},
    {"key": "extra_step", "label": "Extra step", "level": TURN},
    {"key": "task_infeasible", "label": "Task infeasible", "level": TASK},
    {"key": "instruction_ambiguous", "label": "Instruction ambiguous", "level": TASK},
]
MAX_KINDS = 20
MAX_LABEL = 60
MAX_NOTE = 200
KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")


# --- The taxonomy ---------------------------------------------------------------------------------------------


def kinds_of(project) -> list[dict]:
    """The project's kinds, ``[{"key", "label", "level"}]`` in its order (the defaults until an admin sets them)."""
    row = ProblemTaxonomy.objects.filter(project=project).first()
    return [dict(kind) for kind in (row.kinds if row else DEFAULT_KINDS)]


def kinds_in_use(project) -> dict:
    """``{kind: marks}`` of the project's marked kinds."""
    marks = ProblemMark.objects.filter(demonstration__project=project).values("kind").annotate(n=Count("id"))
    return {row["kind"]: row["n"] for row in marks}


def clean_kind(index, item) -> dict:
    field = f"kinds[{index}]"
    if not isinstance(item, dict):
        raise invalid(field, 'expected {"key", "label", "level"}')
    key, label, level = item.get("key"), item.get("label"), item.get("level")
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise invalid(f"{field}.key", "a slug: a-z first, then a-z, 0-9 or _, at most 32")
    if not isinstance(label, str) or not label.strip() or len(label.strip()) > MAX_LABEL:
        raise invalid(f"{field}.label", f"required, at most {MAX_LABEL} characters")
    if "\x00" in label:  # PostgreSQL stores no NUL
        raise invalid(f"{field}.label", "a NUL character is not text")
    if level not in LEVELS:
        raise invalid(f"{field}.level", "turn or task")
    return {"key": key, "label": label.strip(), "level": level}


def check_kinds(project, kinds) -> list[dict]:
    """The new taxonomy, validated (400 naming the field, e.g. ``kinds[2].key``); a kind with marks that it drops
    or moves to another level is a 409 naming it (unmark first)."""
    if not isinstance(kinds, list):
        raise invalid("kinds", "expected a list")
    if len(kinds) > MAX_KINDS:
        raise invalid("kinds", f"at most {MAX_KINDS} kinds")
    cleaned = [clean_kind(index, item) for index, item in enumerate(kinds)]
    keys = [kind["key"] for kind in cleaned]
    for index, key in enumerate(keys):
        if key in keys[:index]:
            raise invalid(f"kinds[{index}].key", f"{key} is listed twice")
    levels = {kind["key"]: kind["level"] for kind in cleaned}
    old = {kind["key"]: kind["level"] for kind in kinds_of(project)}
    for key, marks in kinds_in_use(project).items():
        if levels.get(key) != old.get(key, levels.get(key)):
            what = "removed" if key not in levels else "moved to another level"
            raise Conflict(
                f"{key} is marked {marks} time{'s' if marks != 1 else ''}: it cannot be {what} (unmark those first)",
                [{"field": "kinds", "message": f"{key} is in use"}],
            )
    return cleaned


def check_project_kinds_admin(user, name: str) -> Project:
    return check_project_role(user, name, (Role.ADMIN,), "change the problem kinds (needs admin)")


def check_project_kinds_reader(user, name: str) -> Project:
    return check_project_role(user, name, tuple(Role.values), "see the problem kinds")


def do_set_kinds(project, kinds) -> list[dict]:
    """Replace the project's taxonomy (keys stay the marks' names: renaming a label keeps the marks)."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one change of the taxonomy at a time
        cleaned = check_kinds(project, kinds)
        ProblemTaxonomy.objects.update_or_create(project=project, defaults={"kinds": cleaned})
    return cleaned


def kinds_as_text(kinds) -> str:
    """The settings page's form: one kind a line, ``key | level | label``."""
    return "\n".join(f"{kind['key']} | {kind['level']} | {kind['label']}" for kind in kinds)


def kinds_from_text(text: str) -> list[dict]:
    """The settings page's lines back to kinds (a line without two ``|`` is a 400 naming it)."""
    kinds = []
    for number, line in enumerate((line for line in text.splitlines() if line.strip()), start=1):
        parts = [part.strip() for part in line.split("|", 2)]
        if len(parts) != 3:
            raise invalid("kinds", f"line {number}: expected key | level | label")
        kinds.append({"key": parts[0], "level": parts[1], "label": parts[2]})
    return kinds


# --- Marks -------------------------------------------------------------------------------------------------------


def check_can_mark(user, name: str) -> Demonstration:
    """The demo ``name`` if ``user`` may open it in review and reviews or administers its project; 403 for the
    project's other members who may open it, 404 for everyone else (as reading its marks answers)."""
    demo = check_demo_reviewable(user, name)
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can mark problems")
    return demo


def check_target(demo, kind, turn_id):
    """``(kind, turn or None)``: the kind must be one of the project's, at its level (400 naming ``kind``)."""
    kinds = {item["key"]: item for item in kinds_of(demo.project)}
    if not isinstance(kind, str) or kind not in kinds:
        raise invalid("kind", f"expected one of: {', '.join(kinds)}")
    level = kinds[kind]["level"]
    if level == TURN and turn_id in (None, ""):
        raise invalid("turn", f"{kind} is marked on a turn: name it")
    if level == TASK and turn_id not in (None, ""):
        raise invalid("turn", f"{kind} is marked on the task, not on a turn")
    return kind, (check_turn(demo, turn_id) if level == TURN else None)


def check_note(note) -> str:
    if note is None:
        return ""
    if not isinstance(note, str) or len(note.strip()) > MAX_NOTE:
        raise invalid("note", f"text of at most {MAX_NOTE} characters")
    if "\x00" in note:  # PostgreSQL stores no NUL
        raise invalid("note", "a NUL character is not text")
    return note.strip()


def do_mark(user, demo, kind, turn_id=None, note=None) -> tuple[ProblemMark, bool]:
    """``(mark, created)``: the reviewer's mark of ``kind`` on the turn (or the task); marking again keeps the
    mark and sets its note."""
    kind, turn = check_target(demo, kind, turn_id)
    note = check_note(note)
    target = {"demonstration": demo, "turn": turn, "kind": kind, "reviewer": user}
    try:
        with transaction.atomic():
            mark, created = ProblemMark.objects.get_or_create(**target, defaults={"note": note})
    except IntegrityError:  # the same mark made at the same moment by another request of this reviewer
        mark, created = ProblemMark.objects.get(**target), False
    if not created and note != mark.note:
        mark.note = note
        mark.save(update_fields=["note"])
    return mark, created


def check_mark(demo, mark_id) -> ProblemMark:
    """The demo's mark ``mark_id``; another demo's is not found (404), as a made-up one."""
    number = str(mark_id).isascii() and str(mark_id).isdigit()  # "²" is a digit int() refuses
    found = ProblemMark.objects.filter(demonstration=demo, pk=mark_id) if number else None
    mark = found.select_related("demonstration__project", "reviewer").first() if found is not None else None
    if mark is None:
        raise NotFound(f"no problem mark {mark_id!r} on {demo.name}", [{"field": "mark", "message": "not found"}])
    return mark


def do_unmark(user, demo, mark_id) -> ProblemMark:
    """Delete a mark: the reviewer's own (an admin: anyone's in the project)."""
    mark = check_mark(demo, mark_id)
    if mark.reviewer_id != user.pk and not demo.project.has_role(user, (Role.ADMIN,)):
        raise Forbidden("only its reviewer or a project admin can unmark a problem")
    mark.delete()
    return mark


# --- Reading ------------------------------------------------------------------------------------------------------


def mark_item(mark, labels) -> dict:
    return {
        "id": mark.pk,
        "kind": mark.kind,
        "label": labels.get(mark.kind, mark.kind),
        "turn": mark.turn_id,
        "reviewer": mark.reviewer.username,
        "reviewer_id": mark.reviewer_id,
        "note": mark.note,
        "at": mark.created_at.isoformat(),
    }


def mark_as_item(mark) -> dict:
    return mark_item(mark, {kind["key"]: kind["label"] for kind in kinds_of(mark.demonstration.project)})


def marks_of(demo, kinds=None, marks=None) -> dict:
    """The demo's marks: ``{"task": [items], "turns": {turn id: [items]}, "counts": {kind: marks}}``; an item is
    ``{"id", "kind", "label", "turn", "reviewer", "reviewer_id", "note", "at"}``. ``kinds``: the project's, and
    ``marks``: the demo's (with their reviewers), if read."""
    labels = {kind["key"]: kind["label"] for kind in (kinds if kinds is not None else kinds_of(demo.project))}
    if marks is None:
        marks = ProblemMark.objects.filter(demonstration=demo).select_related("reviewer")
    task, turns, counts = [], {}, {}
    for mark in sorted(marks, key=lambda mark: (mark.created_at, mark.pk)):
        item = mark_item(mark, labels)
        (turns.setdefault(mark.turn_id, []) if mark.turn_id else task).append(item)
        counts[mark.kind] = counts.get(mark.kind, 0) + 1
    return {"task": task, "turns": turns, "counts": counts}
