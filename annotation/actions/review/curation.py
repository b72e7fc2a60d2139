"""Curation edits: a turn's state (deleted, text, validity, chosen screenshot), the turn order and the metadata.

Each writes the curated state beside the raw capture (``TurnCuration``, ``DemoReview.order``, the demo's fields)
and records the before/after state as one ``Edit``, under the revision lock of ``revisions``.
"""

from django.db import transaction

from ...lib import redact, shapes
from ...lib.mind2web_release import PASSWORD_TAG
from ...models import TASK_METADATA, Demonstration, Edit, EditKind, Turn, TurnCuration, TurnType
from ...models.review import STATE_FIELDS
from ..errors import ValidationFailed
from .access import check_can_curate, check_turn
from .background import recheck_targets
from .revisions import locked_review, record
from .workflow import start_review_if_needed

# ``discarded`` and ``refined_task``: Mind2Web verification (discard the task; refine its description, the recorded
# ``task_description`` kept as it was).
METADATA_FIELDS = (*TASK_METADATA, "discarded", "refined_task")
TEXT_METADATA = ("task_description", "category", "subcategory", "region", "refined_task")
BOOLEAN_METADATA = ("instructor_sees_screen", "discarded")
MAX_WEBSITE = 253  # a DNS name has at most 253 characters (as when a recording starts)

# --- Turn state -----------------------------------------------------------------------------------------


TURN_DEFAULTS = {"deleted": False, "text": None, "valid": True, "screenshot": "", "element": None}  # an uncurated turn


def turn_state(turn_id: int) -> dict:
    curation = TurnCuration.objects.filter(pk=turn_id).first()
    return {name: getattr(curation, name) for name in STATE_FIELDS} if curation else dict(TURN_DEFAULTS)


def apply_turn_states(demo, states: dict) -> None:
    """Write ``{turn_id: {field: value}}`` into the turns' curation rows (a changed target re-checks its turn)."""
    for turn_id, fields in states.items():
        TurnCuration.objects.update_or_create(turn_id=int(turn_id), defaults={"demonstration": demo, **fields})
    if retargeted := {int(turn_id) for turn_id, fields in states.items() if "element" in fields}:
        recheck_targets(demo, retargeted)


def change_turn(user, demo, revision, turn_id, kind, **fields) -> Edit:
    """One curation change of one turn's state."""
    check_can_curate(user, demo)
    turn = check_turn(demo, turn_id)
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        current = turn_state(turn.pk)
        before = {str(turn.pk): {name: current[name] for name in fields}}
        after = {str(turn.pk): fields}
        apply_turn_states(demo, after)
        start_review_if_needed(demo)
        return record(review, user, kind, before, after, turn=turn)


def do_delete_turn(user, demo, revision, turn_id) -> Edit:
    return change_turn(user, demo, revision, turn_id, EditKind.DELETE, deleted=True)


def do_restore_turn(user, demo, revision, turn_id) -> Edit:
    return change_turn(user, demo, revision, turn_id, EditKind.RESTORE, deleted=False)


def do_set_validity(user, demo, revision, turn_id, valid) -> Edit:
    if not isinstance(valid, bool):
        raise ValidationFailed("valid must be true or false", [{"field": "valid", "message": "expected a boolean"}])
    return change_turn(user, demo, revision, turn_id, EditKind.SET_VALIDITY, valid=valid)


MAX_EDIT_TEXT_CHARS = 100_000  # an edited utterance, typed text or value
EDITABLE_INTENTS = ("textInput", "change")  # typed text; a change turn's value (the option chosen in a <select>)


def check_text(demo, turn_id, text) -> None:
    """Only chat utterances, typed text (textInput) and a change turn's value are editable; a browser turn's new
    text must be one ingest's masking would keep (nothing in clear on a password field, no secret URL parameter)."""
    if not isinstance(text, str):
        raise ValidationFailed("text must be a string", [{"field": "text", "message": "expected a string"}])
    if len(text) > MAX_EDIT_TEXT_CHARS:  # every edit and revision keeps a copy
        raise ValidationFailed(
            "text is too long", [{"field": "text", "message": f"at most {MAX_EDIT_TEXT_CHARS:,} characters"}]
        )
    if "\x00" in text:  # PostgreSQL stores no NUL
        raise ValidationFailed(
            "text holds a NUL character", [{"field": "text", "message": "a NUL character is not text"}]
        )
    turn = check_turn(demo, turn_id)
    if turn.type != TurnType.BROWSER:
        return
    if turn.intent not in EDITABLE_INTENTS:
        only = [{"field": "text", "message": "chat, textInput or change only"}]
        raise ValidationFailed(f"a {turn.intent} turn has no text to edit", only)
    if is_password_field(turn) and text not in ("", redact.MASK):
        raise ValidationFailed(
            "a password field's text is never stored", [{"field": "text", "message": "a password field: not editable"}]
        )
    if redact.mask_parameters(text) != text:
        raise ValidationFailed(
            "the text holds a secret URL parameter", [{"field": "text", "message": "a secret would be masked"}]
        )


# The recorder's SENSITIVE_AUTOCOMPLETE (recorder_extension/lib/privacy.js): an input whose value it masks.
PRIVATE_AUTOCOMPLETE = frozenset(
    ("current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp", "cc-exp-month")
    + ("cc-exp-year",)
)


def is_password_field(turn) -> bool:
    """The turn's element, as recorded or as chosen in review, is plainly a password input or another field the
    recorder keeps private (``is_password_element``)."""
    chosen = turn_state(turn.pk)["element"]
    return is_password_element(shapes.element_of(turn.arguments)) or is_password_element(chosen)


def is_password_element(element) -> bool:
    """A password input by its attributes (as ingest's ``mask_password_values`` reads them) or its HTML's start tag
    (as the Mind2Web import's ``mask_passwords`` reads it), or by its own attributes a field whose value the recorder
    masks as one's (lib/privacy.js): ``data-private``, an input whose autocomplete is a password, one-time code or
    card's."""
    element = shapes.as_dict(element)
    attributes = shapes.as_dict(element.get("attributes"))
    kind, autocomplete = attributes.get("type"), attributes.get("autocomplete")
    if (isinstance(kind, str) and kind.strip().lower() == "password") or "data-private" in attributes:
        return True
    html = element.get("outerHTML")
    if PASSWORD_TAG.search(html.split(">", 1)[0] if isinstance(html, str) else ""):
        return True
    tokens = autocomplete.lower().split() if isinstance(autocomplete, str) else []
    is_input = shapes.as_text(element.get("tagName")).lower() == "input"
    return is_input and bool(tokens) and tokens[-1] in PRIVATE_AUTOCOMPLETE


def do_edit_text(user, demo, revision, turn_id, text) -> Edit:
    check_text(demo, turn_id, text)
    return change_turn(user, demo, revision, turn_id, EditKind.EDIT_TEXT, text=text)


def screenshot_choices(turn) -> list:
    """The screenshots a turn may show: its own and the frames captured around it."""
    own = [turn.screenshot_id] if turn.screenshot_id else []
    return own + [frame["screenshot"] for frame in shapes.frames_of(turn.frames)]


def do_choose_screenshot(user, demo, revision, turn_id, sha) -> Edit:
    turn = check_turn(demo, turn_id)
    choices = screenshot_choices(turn)
    if sha not in choices:
        raise ValidationFailed(
            "that screenshot was not captured around this turn",
            [{"field": "screenshot", "message": "expected the turn's screenshot or one of its frames"}],
        )
    chosen = "" if sha == turn.screenshot_id else sha
    return change_turn(user, demo, revision, turn_id, EditKind.CHOOSE_SCREENSHOT, screenshot=chosen)


SCREENSHOT_EDITS = (EditKind.CHOOSE_SCREENSHOT, EditKind.ACCEPT_SUGGESTIONS)


def chosen_screenshots(edits, curations: dict) -> set:
    """Turn ids whose current screenshot a reviewer picked (a choice, "Accept all suggestions", or an undo of
    either: the latest such edit of the turn set what it shows now). ``edits``: the demo's edits, any order."""
    latest = {}
    for edit in sorted((e for e in edits if e.kind in SCREENSHOT_EDITS), key=lambda e: e.revision):
        for key, state in (edit.after or {}).items():
            if isinstance(state, dict) and "screenshot" in state:
                latest[int(key)] = state["screenshot"]
    return {pk for pk, sha in latest.items() if pk in curations and curations[pk].screenshot == sha}


def screenshot_edits(demo) -> list:
    """The demo's edits that chose screenshots (for ``chosen_screenshots``), in one query."""
    return list(Edit.objects.filter(demonstration=demo, kind__in=SCREENSHOT_EDITS).only("kind", "after", "revision"))


def do_accept_suggestions(user, demo, revision) -> Edit:
    """Choose the suggested screenshot of every turn that has a suggestion different from its current one."""
    check_can_curate(user, demo)
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        before, after = {}, {}
        for curation in (
            TurnCuration.objects.filter(demonstration=demo).exclude(suggested_screenshot="").select_related("turn")
        ):
            wanted = (
                "" if curation.suggested_screenshot == curation.turn.screenshot_id else curation.suggested_screenshot
            )
            if wanted != curation.screenshot:
                before[str(curation.pk)], after[str(curation.pk)] = (
                    {"screenshot": curation.screenshot},
                    {"screenshot": wanted},
                )
        apply_turn_states(demo, after)
        start_review_if_needed(demo)
        return record(review, user, EditKind.ACCEPT_SUGGESTIONS, before, after)


# --- Order and metadata ---------------------------------------------------------------------------------


def current_order(demo, review) -> list:
    """The curated order as turn ids (capture order when never reordered)."""
    ids = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq").values_list("pk", flat=True))
    return order_of(ids, review.order)


def order_of(ids: list, order: list) -> list:
    """Turn ids (capture order) in the curated ``order``; turns missing from it keep their capture place at the end."""
    if not order:
        return ids
    known, present = set(order), set(ids)
    return [pk for pk in order if pk in present] + [pk for pk in ids if pk not in known]


def do_move_turn(user, demo, revision, turn_id, to_index) -> Edit:
    """Move a turn to position ``to_index`` (0-based) of the curated order."""
    check_can_curate(user, demo)
    turn = check_turn(demo, turn_id)
    if not isinstance(to_index, int) or isinstance(to_index, bool) or to_index < 0:
        raise ValidationFailed("to_index must be a position (0 or more)", [{"field": "to_index", "message": "invalid"}])
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        before = current_order(demo, review)
        after = [pk for pk in before if pk != turn.pk]
        after.insert(min(to_index, len(after)), turn.pk)
        review.order = after
        review.save(update_fields=["order"])
        start_review_if_needed(demo)
        return record(review, user, EditKind.REORDER, {"order": before}, {"order": after}, turn=turn)


def check_metadata(fields) -> dict:
    """Only known metadata fields, with the right types and within the model's lengths (a longer value would not
    fit its column: refused here, naming the field, rather than failing in the database)."""
    if not isinstance(fields, dict):
        raise ValidationFailed("fields must be an object", [{"field": "fields", "message": "expected an object"}])
    errors = [{"field": name, "message": "not editable"} for name in fields if name not in METADATA_FIELDS]
    for name, value in fields.items():
        if name not in METADATA_FIELDS:
            continue
        if name == "websites" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            errors.append({"field": name, "message": "expected a list of domains"})
        elif name == "websites" and any(len(v) > MAX_WEBSITE for v in value):
            errors.append({"field": name, "message": f"domains of at most {MAX_WEBSITE} characters"})
        elif name in BOOLEAN_METADATA and not isinstance(value, bool):
            errors.append({"field": name, "message": "expected a boolean"})
        elif name in TEXT_METADATA and not isinstance(value, str):
            errors.append({"field": name, "message": "expected a string"})
        elif name in TEXT_METADATA and len(value) > (limit := metadata_max_length(name)):
            errors.append({"field": name, "message": f"at most {limit} characters"})
    if errors or not fields:
        raise ValidationFailed("invalid metadata", errors or [{"field": "fields", "message": "nothing to change"}])
    return fields


def metadata_max_length(name: str) -> float:
    """The model's ``max_length`` of a text field (infinite for a ``TextField``)."""
    return Demonstration._meta.get_field(name).max_length or float("inf")


def apply_metadata(demo, fields: dict) -> None:
    for name, value in fields.items():
        setattr(demo, name, value)
    demo.save(update_fields=[*fields, "updated_at"])


def do_edit_metadata(user, demo, revision, fields) -> Edit:
    check_can_curate(user, demo)
    fields = check_metadata(fields)
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        before = {name: getattr(demo, name) for name in fields}
        apply_metadata(demo, fields)
        start_review_if_needed(demo)
        return record(review, user, EditKind.EDIT_METADATA, before, fields)
