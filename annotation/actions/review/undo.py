"""Undo: apply an edit's before-state as a new edit, only while what it changed is still as it left it.

Otherwise the undo is refused with a 409 naming the later edit, which the reviewer can undo first.
"""

from django.db import transaction
from django.utils import timezone

from ...models import Demonstration, Edit, EditKind, Turn
from ..errors import Conflict, NotFound, ValidationFailed
from .access import check_can_curate
from .curation import apply_metadata, apply_turn_states, current_order, turn_state
from .revisions import kind_label, locked_review, record
from .targets import check_no_clear_password

UNDOABLE = (
    EditKind.DELETE,
    EditKind.RESTORE,
    EditKind.REORDER,
    EditKind.EDIT_TEXT,
    EditKind.SET_VALIDITY,
    EditKind.CHOOSE_SCREENSHOT,
    EditKind.ACCEPT_SUGGESTIONS,
    EditKind.EDIT_METADATA,
    EditKind.RETARGET,
)


def apply_state(demo, review, kind, state: dict) -> None:
    """Set the curated state an edit of ``kind`` describes (its before- or after-state)."""
    if kind == EditKind.REORDER:
        review.order = state["order"]
        review.save(update_fields=["order"])
    elif kind == EditKind.EDIT_METADATA:
        apply_metadata(demo, state)
    else:
        apply_turn_states(demo, state)


def check_undoable(demo, edit_id) -> Edit:
    is_id = isinstance(edit_id, int) and not isinstance(edit_id, bool)  # JSON true is not edit 1
    edit = Edit.objects.filter(demonstration=demo, pk=edit_id).first() if is_id else None
    if edit is None:
        raise NotFound(f"no edit {edit_id!r} on demo {demo.name}", [{"field": "edit", "message": "not found"}])
    if edit.kind not in UNDOABLE:
        raise ValidationFailed(f"a {edit.get_kind_display().lower()} cannot be undone")
    if Edit.objects.filter(undoes=edit).exists():
        raise Conflict("that edit was already undone")
    return edit


def touched(edit) -> set:
    """What an edit changed, as comparable keys: ``("order",)``, ``("meta", field)``, ``("turn", id, field)``."""
    if edit.kind == EditKind.REORDER:
        return {("order",)}
    if edit.kind == EditKind.EDIT_METADATA:
        return {("meta", name) for name in edit.after}
    if edit.kind in UNDOABLE:
        return {("turn", turn_id, name) for turn_id, fields in edit.after.items() for name in fields}
    return set()  # status, unsure marks and comments touch no curated state


def current_value(demo, review, key):
    if key[0] == "order":
        return current_order(demo, review)
    if key[0] == "meta":  # from the row: the caller's object may be older than the lock
        return Demonstration.objects.filter(pk=demo.pk).values_list(key[1], flat=True).get()
    return turn_state(int(key[1]))[key[2]]


def after_value(edit, key):
    if key[0] == "order":
        return edit.after["order"]
    return edit.after[key[1]] if key[0] == "meta" else edit.after[key[1]][key[2]]


FIELD_NAMES = {
    "deleted": "deletion",
    "text": "text",
    "valid": "validity",
    "screenshot": "chosen screenshot",
    "element": "target",
}


def describe_key(key) -> str:
    if key[0] == "order":
        return "the turn order"
    if key[0] == "meta":
        return f"the {key[1].replace('_', ' ')}"
    turn = Turn.objects.filter(pk=int(key[1])).values_list("seq", flat=True).first()
    return f"the {FIELD_NAMES[key[2]]} of turn {turn}"


def edit_label(edit) -> str:
    kind = kind_label(edit)
    return f"undo of #{edit.undoes_id}: {kind}" if edit.undoes_id else kind


def changed_since(edit, value_of) -> list:
    """The keys ``edit`` changed whose current value (``value_of(key)``) is no longer its after-state."""
    return [key for key in sorted(touched(edit)) if value_of(key) != after_value(edit, key)]


def blocking_edit(changed: list, later):
    """The newest of ``later`` (newest first) that changed one of the ``changed`` keys."""
    return next((other for other in later if touched(other) & set(changed)), None)


def check_not_overwritten(demo, review, edit) -> None:
    """Undo only what is still as ``edit`` left it: if a later edit changed the same thing, refuse and name it
    (the reviewer can undo that one first), never silently overwrite it."""
    changed = changed_since(edit, lambda key: current_value(demo, review, key))
    if not changed:
        return
    later = Edit.objects.filter(demonstration=demo, revision__gt=edit.revision).order_by("-revision")
    culprit = blocking_edit(changed, later.select_related("author", "turn"))
    what = describe_key(changed[0])
    if culprit is None:
        raise Conflict(f"cannot undo edit #{edit.pk}: {what} has changed since")
    when = timezone.localtime(culprit.created_at).strftime("%H:%M:%S")
    raise Conflict(
        f"cannot undo edit #{edit.pk} ({edit.get_kind_display().lower()}): {what} was changed since by "
        f"{culprit.author.username} ({edit_label(culprit)}, edit #{culprit.pk}) at {when}. "
        f"Undo edit #{culprit.pk} first.",
        [{"field": "edit", "message": f"changed since by edit #{culprit.pk}", "blocked_by": culprit.pk}],
    )


def do_undo(user, demo, revision, edit_id) -> Edit:
    """Restore the before-state of an edit, as a new edit (both stay in the history), if nothing changed what
    it changed since."""
    check_can_curate(user, demo)
    edit = check_undoable(demo, edit_id)
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        check_not_overwritten(demo, review, edit)
        apply_state(demo, review, edit.kind, edit.before)
        if edit.kind not in (EditKind.REORDER, EditKind.EDIT_METADATA):
            check_no_clear_password(edit.before)  # raised inside the transaction: nothing applied
        return record(review, user, edit.kind, edit.after, edit.before, turn=edit.turn, undoes=edit)
