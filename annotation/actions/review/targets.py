"""A browser turn's target, re-picked in review: another element of the turn's recorded page (its elements with
a uid and a box). The choice is the turn's curated ``element`` (``TurnCuration.element``, described as the recorder
describes an acted element, so exports read it as a recorded one), recorded as an ``Edit`` like the other turn
edits (undo, revisions and history as theirs); choosing the recorded element again puts the curation back to null.
"""

from ...lib import jsonsafe, shapes
from ...lib.page_elements import element_on_page, page_elements
from ...lib.redact import MASK
from ...models import EditKind, Turn, TurnType
from ...store.blobstore import read_blob
from ..errors import Conflict, ValidationFailed, invalid
from .access import check_can_curate, check_turn
from .curation import EDITABLE_INTENTS, change_turn, is_password_element, is_password_field, turn_state


def target_uid(turn, curation_element) -> str | None:
    """The uid of the turn's target now: the chosen element's, else the recorded one's."""
    return shapes.uid_of(curation_element) if curation_element else turn.element_uid


def check_retargetable(demo, turn_id):
    """A browser turn that acts on an element and is not deleted (400 naming ``turn`` otherwise)."""
    turn = check_turn(demo, turn_id)
    if turn.type != TurnType.BROWSER:
        raise invalid("turn", "a chat turn has no target element")
    if turn.element_uid is None:
        raise invalid("turn", f"this {turn.intent or 'browser'} turn acts on no element")
    if turn_state(turn.pk)["deleted"]:
        raise invalid("turn", "the turn is deleted: restore it first")
    return turn


def stored(sha) -> bytes:
    """A blob's bytes, empty when the turn has none or it is gone from the store (nothing to pick then)."""
    try:
        return read_blob(sha) if sha else b""
    except OSError:
        return b""


def page_of(turn) -> tuple[bytes, dict]:
    """The turn's recorded page and boxes (empty when it has none)."""
    html, data = stored(turn.page_id), stored(turn.bboxes_id)
    try:
        boxes = jsonsafe.loads(data) if data else {}
    except jsonsafe.JSONProblem:
        boxes = {}
    return html, shapes.as_dict(boxes)


def turn_elements(demo, turn_id) -> dict:
    """What the picker lists for a turn: ``{"turn", "current", "recorded", "elements": [{uid, tag, text, box}]}``."""
    turn = check_retargetable(demo, turn_id)
    html, boxes = page_of(turn)
    current = target_uid(turn, turn_state(turn.pk)["element"])
    return {"turn": turn.pk, "current": current, "recorded": turn.element_uid, "elements": page_elements(html, boxes)}


def do_retarget(user, demo, revision, turn_id, uid):
    """Make the element ``uid`` of the turn's page its target."""
    check_can_curate(user, demo)
    turn = check_retargetable(demo, turn_id)
    if not isinstance(uid, str) or not uid.strip():
        raise invalid("element", "expected the uid (data-webtasks-id) of an element of the turn's page")
    if uid == turn.element_uid:
        return change_turn(user, demo, revision, turn.pk, EditKind.RETARGET, element=None)
    if not turn.page_id:
        raise invalid("element", "this turn has no recorded page to choose another element from")
    html, boxes = page_of(turn)
    element = element_on_page(html, boxes, uid)
    if element is None:
        raise ValidationFailed(
            f"no element {uid[:64]!r} with a box on this turn's page",
            [{"field": "element", "message": "not an element (with a box) of the turn's page"}],
        )
    if is_password_element(element) and has_clear_text(turn):
        empty = " (empty it first)" if turn.intent in EDITABLE_INTENTS else ""
        raise invalid("element", f"a password field: the turn's text would be in clear{empty}")
    return change_turn(user, demo, revision, turn.pk, EditKind.RETARGET, element=element)


CLEAR_ARGUMENTS = ("pasted", "selected")  # a paste's or a copy's text: ingest masks them on a password field too


def has_clear_text(turn) -> bool:
    """The turn carries a text ingest masks on a password field: its typed text or value (as curated), a pasted or
    copied text."""
    arguments = shapes.as_dict(turn.arguments)
    texts = [typed_text(turn)] if turn.intent in EDITABLE_INTENTS else []
    texts += [shapes.as_text(arguments.get(name)) for name in CLEAR_ARGUMENTS]
    return any(text not in ("", MASK) for text in texts)


def typed_text(turn) -> str:
    """The text a textInput typed, or a change turn's value, as curated."""
    text = turn_state(turn.pk)["text"]
    if text is not None:
        return text
    return shapes.as_text(shapes.as_dict(turn.arguments).get("value" if turn.intent == "change" else "text"))


def check_no_clear_password(turn_ids) -> None:
    """409 when one of the turns, as curated now, has a clear text or value on a password field (an undo bringing
    back a text, or a password target, the other edit kept out)."""
    for turn in Turn.objects.filter(pk__in=[int(pk) for pk in turn_ids], type=TurnType.BROWSER):
        if is_password_field(turn) and has_clear_text(turn):
            raise Conflict(
                f"turn {turn.seq} would have its text in clear on a password field: empty it or retarget it first",
                [{"field": "edit", "message": "a password field's text is never stored"}],
            )
