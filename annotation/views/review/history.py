"""A demo's edit history as the review page shows it: each edit in words, and its Undo / Redo button (or what keeps it
from being undone)."""

from ...actions import review as actions
from ...lib import shapes
from ...models import DemoStatus, Edit, EditKind

HISTORY_SIZE = 100


def shorten(text: str, length: int) -> str:
    """Like the ``truncatechars`` filter, without its per-call cost (hundreds of turns per page)."""
    return text if len(text) <= length else text[: length - 1] + "…"


STATUS_WORDS = {
    "start_review": "Started review",
    "validate": "Validated",
    "reject": "Rejected",
    "return": "Returned to the annotator",
    "reopen": "Reopened",
    "resubmit": "Resubmitted",
}


def turn_name(edit) -> str:
    return f"turn {edit.turn.seq}" if edit.turn_id else "a turn"


def first_state(edit) -> dict:
    """The after-state of a one-turn edit: ``{field: value}``."""
    return next(iter(edit.after.values()), {}) if edit.after else {}


def moved_words(edit) -> str:
    before, after = edit.before.get("order", []), edit.after.get("order", [])
    if edit.turn_id in before and edit.turn_id in after:
        return f"Moved {turn_name(edit)} from position {before.index(edit.turn_id)} to {after.index(edit.turn_id)}"
    return f"Moved {turn_name(edit)}"


def screenshot_words(edit) -> str:
    if first_state(edit).get("screenshot"):
        return f"Chose another screenshot for {turn_name(edit)}"
    return f"Went back to the captured screenshot of {turn_name(edit)}"


def suggestion_words(edit) -> str:
    count = len(edit.after)
    turns = f"{count} turn{pluralize(count)}"
    return f"Put back the screenshots of {turns}" if edit.undoes_id else f"Accepted the suggested screenshot of {turns}"


def status_words(edit) -> str:
    if edit.after.get("action") in STATUS_WORDS:
        return STATUS_WORDS[edit.after["action"]]
    status = edit.after.get("status")
    return f"Status set to {DemoStatus(status).label.lower()}" if status in DemoStatus.values else "Changed the status"


def comment_words(edit) -> str:
    where = f" on {turn_name(edit)}" if edit.turn_id else ""
    return f"Commented{where} “{shorten(edit.after.get('text', ''), 40)}”"


def pluralize(count: int) -> str:
    return "" if count == 1 else "s"


def text_words(edit) -> str:
    """A change turn's value (a <select>'s option) is edited as its text, and said as a value."""
    if actions.is_value_edit(edit):
        value = first_state(edit).get("text")
        if value is None:  # back to the turn's own value (an undo)
            arguments = edit.turn.arguments if isinstance(edit.turn.arguments, dict) else {}
            value = arguments.get("value")
        return f"Changed the value of {turn_name(edit)} to “{shorten(str(value or ''), 40)}”"
    return f"Edited the text of {turn_name(edit)}"


# Each edit kind in words, from its after-state: an undo is an edit of the same kind back to the before-state,
# so undoing "Deleted turn 8" reads "Restored turn 8 (undid #1)".
def deletion_words(edit) -> str:
    return f"{'Deleted' if first_state(edit).get('deleted') else 'Restored'} {turn_name(edit)}"


def target_words(edit) -> str:
    """ "Changed the target of turn 4 from button #12 to a #31" (the recorded element when the state is null)."""

    def name(state) -> str:
        element = (state or {}).get("element") if isinstance(state, dict) else None
        uid = shapes.uid_of(element) if element else (edit.turn.element_uid if edit.turn_id else None)
        tag = shapes.as_text(shapes.as_dict(element).get("tagName")).lower() if element else "the recorded element"
        return f"{tag} #{uid}" if uid else tag

    before = next(iter(edit.before.values()), {}) if edit.before else {}
    return f"Changed the target of {turn_name(edit)} from {name(before)} to {name(first_state(edit))}"


EDIT_WORDS = {
    EditKind.DELETE: deletion_words,
    EditKind.RESTORE: deletion_words,
    EditKind.SET_VALIDITY: lambda e: f"Marked {turn_name(e)} {'valid' if first_state(e).get('valid') else 'invalid'}",
    EditKind.EDIT_TEXT: text_words,
    EditKind.CHOOSE_SCREENSHOT: screenshot_words,
    EditKind.ACCEPT_SUGGESTIONS: suggestion_words,
    EditKind.REORDER: moved_words,
    EditKind.RETARGET: target_words,
    EditKind.EDIT_METADATA: lambda e: "Edited the " + ", ".join(name.replace("_", " ") for name in e.after),
    EditKind.SET_STATUS: status_words,
    EditKind.SET_UNSURE: lambda e: "Marked the demo unsure" if e.after.get("unsure_by") else "Cleared the unsure mark",
    EditKind.COMMENT: comment_words,
}


def edit_summary(edit) -> str:
    """What an edit did, in words: "Deleted turn 8", "Restored turn 8 (undid #1)", "Marked turn 12 invalid",
    "Moved turn 9 from position 3 to 5" (positions as the timeline numbers them)."""
    words = EDIT_WORDS[edit.kind](edit) if edit.kind in EDIT_WORDS else edit.get_kind_display()
    return words + (f" (undid #{edit.undoes_id})" if edit.undoes_id else "")


def curated_value(demo, order: list, curations: dict):
    """``value_of(key)`` for ``actions.changed_since``, from what the page already read (no query per edit)."""

    def value_of(key):
        if key[0] == "order":
            return order
        if key[0] == "meta":
            return getattr(demo, key[1])
        curation = curations.get(int(key[1]))
        return getattr(curation, key[2]) if curation else actions.TURN_DEFAULTS[key[2]]

    return value_of


def blocked_by(edits: list, index: int, value_of):
    """The id of the later edit that keeps ``edits[index]`` (newest first) from being undone, if any."""
    changed = actions.changed_since(edits[index], value_of)
    if not changed:
        return None
    culprit = actions.blocking_edit(changed, edits[:index])
    return culprit.pk if culprit else "?"


def undo_button(edit, undoes: dict) -> dict:
    """The history button of ``edit``: "Undo" for an edit, "Redo" for an undo (undoing it re-applies the
    original edit), "Undo" again for an undo of that, and so on down the chain."""
    original, depth = edit.pk, 0
    while original in undoes:
        original, depth = undoes[original], depth + 1
    kind = actions.kind_label(edit)
    if depth % 2:
        return {"text": "Redo", "label": f"Redo edit #{original} ({kind})"}
    again = " again" if depth else ""
    return {"text": "Undo", "label": f"Undo edit #{original}{again} ({kind})"}


def history(demo, value_of) -> list:
    edits = list(Edit.objects.filter(demonstration=demo).select_related("author", "turn")[:HISTORY_SIZE])
    undoes = dict(Edit.objects.filter(demonstration=demo, undoes__isnull=False).values_list("pk", "undoes_id"))
    undone = set(undoes.values())
    # An undo is itself undoable (a redo of the edit it undid), as long as nothing changed the same thing since.
    undoable = {edit.pk for edit in edits if edit.kind in actions.UNDOABLE and edit.pk not in undone}
    return [
        {
            "id": edit.pk,
            "kind": edit_summary(edit),
            "author": edit.author.username,
            "at": edit.created_at,
            "turn": edit.turn.seq if edit.turn else None,
            "undo_of": edit.undoes_id,
            "undoable": edit.pk in undoable,
            "button": undo_button(edit, undoes),
            "blocked_by": blocked_by(edits, index, value_of) if edit.pk in undoable else None,
            "undone": edit.pk in undone,
            "after": edit.after,
        }
        for index, edit in enumerate(edits)
    ]
