"""Review and curation: who may see and change a demonstration in review, and every curation operation.

Each ``do_*`` write takes the demo's ``revision`` the caller saw: it locks the ``DemoReview`` row, refuses a stale
revision with a ``Conflict`` naming who changed what, applies the change to the curated state (``TurnCuration``,
``DemoReview.order``, the demo's metadata fields) and appends an ``Edit`` with the before/after state. Undo applies
an edit's before-state as a new edit, and only while what it changed is still as it left it (otherwise 409 naming
the later edit). The raw capture (``Turn`` rows) is never changed.
"""

import logging

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from ..models import (
    Comment,
    Demonstration,
    DemoReview,
    DemoStatus,
    Edit,
    EditKind,
    Role,
    Turn,
    TurnCuration,
    TurnType,
)
from ..models.curation import STATE_FIELDS
from .errors import Conflict, Forbidden, NotFound, ValidationFailed

log = logging.getLogger(__name__)

ENQUEUE_EVERY = 60  # seconds

CURATE_ROLES = (Role.REVIEWER, Role.ADMIN)
VIEW_ALL_ROLES = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)  # annotators see only the demos they recorded
EDITABLE_STATUSES = (DemoStatus.RECORDED, DemoStatus.IN_REVIEW, DemoStatus.RETURNED)
METADATA_FIELDS = ("task_description", "websites", "category", "subcategory", "region", "instructor_sees_screen")
UNDOABLE = (
    EditKind.DELETE,
    EditKind.RESTORE,
    EditKind.REORDER,
    EditKind.EDIT_TEXT,
    EditKind.SET_VALIDITY,
    EditKind.CHOOSE_SCREENSHOT,
    EditKind.ACCEPT_SUGGESTIONS,
    EditKind.EDIT_METADATA,
)
# Workflow: status → {action: new status}.
TRANSITIONS = {
    "start_review": ((DemoStatus.RECORDED, DemoStatus.RETURNED), DemoStatus.IN_REVIEW),
    "validate": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.VALIDATED),
    "reject": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.REJECTED),
    "return": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.RETURNED),
    "reopen": ((DemoStatus.VALIDATED, DemoStatus.REJECTED, DemoStatus.RETURNED), DemoStatus.IN_REVIEW),
    "resubmit": ((DemoStatus.RETURNED,), DemoStatus.RECORDED),
}

# --- Access ---------------------------------------------------------------------------------------------


def reviewable_demos(user):
    """Demonstrations ``user`` may open in review: every demo of projects where they review, research or
    administer; only their own demos (navigator or instructor) where they are an annotator."""
    from django.db.models import Q

    from ..models import Membership, Project

    if not user.is_authenticated:
        return Demonstration.objects.none()
    if user.is_superuser:
        return Demonstration.objects.all()
    wide = Project.objects.for_user(user, VIEW_ALL_ROLES)
    own = Membership.objects.filter(user=user, role=Role.ANNOTATOR).values("project")
    return Demonstration.objects.filter(
        Q(project__in=wide) | (Q(project__in=own) & (Q(navigator=user) | Q(instructor=user)))
    )


def check_demo_reviewable(user, name: str) -> Demonstration:
    """The demo named ``name`` if ``user`` may see it in review; 404 otherwise (outsiders learn nothing)."""
    demo = reviewable_demos(user).select_related("project", "navigator", "instructor").filter(name=name).first()
    if demo is None or demo.status == DemoStatus.RECORDING:
        raise NotFound(f"no recorded demonstration {name!r} among yours")
    return demo


def can_curate(user, demo) -> bool:
    return demo.project.has_role(user, CURATE_ROLES)


def check_can_curate(user, demo) -> None:
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can curate demonstrations")
    if demo.status not in EDITABLE_STATUSES:
        raise Conflict(f"demo {demo.name} is {demo.get_status_display().lower()}: reopen it before editing")


def review_of(demo) -> DemoReview:
    """The demo's review row (created on first use)."""
    review, _ = DemoReview.objects.get_or_create(demonstration=demo)
    return review


# --- Concurrency ----------------------------------------------------------------------------------------


def check_revision(review: DemoReview, revision) -> None:
    """Refuse a write based on an older revision, saying who changed the demo since and how."""
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise ValidationFailed("revision (an integer) is required", [{"field": "revision", "message": "required"}])
    if revision == review.revision:
        return
    last = Edit.objects.filter(demonstration_id=review.pk).select_related("author").first()
    who = f"{last.author.username} ({last.get_kind_display().lower()}" if last else "someone ("
    when = timezone.localtime(last.created_at).strftime("%H:%M:%S") if last else "?"
    raise Conflict(
        f"this demo was changed by {who} at {when}) since you loaded revision {revision}; it is now at revision "
        f"{review.revision}. Reload to see the change, then redo yours."
    )


def locked_review(demo, revision) -> DemoReview:
    """Lock the demo's review row and check ``revision``; call inside ``transaction.atomic``."""
    review_of(demo)
    review = DemoReview.objects.select_for_update().get(pk=demo.pk)
    check_revision(review, revision)
    return review


def record(review, user, kind, before, after, turn=None, undoes=None) -> Edit:
    """Bump the revision and append the edit."""
    review.revision += 1
    review.reviewer = user
    review.save(update_fields=["revision", "reviewer", "updated_at"])
    return Edit.objects.create(
        demonstration_id=review.pk,
        author=user,
        kind=kind,
        turn=turn,
        before=before,
        after=after,
        undoes=undoes,
        revision=review.revision,
    )


# --- Turn state -----------------------------------------------------------------------------------------


def check_turn(demo, turn_id) -> Turn:
    turn = Turn.objects.filter(demonstration=demo, pk=turn_id).first() if isinstance(turn_id, int) else None
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in demo {demo.name}", [{"field": "turn", "message": "not found"}])
    return turn


TURN_DEFAULTS = {"deleted": False, "text": None, "valid": True, "screenshot": ""}  # an uncurated turn


def turn_state(turn_id: int) -> dict:
    curation = TurnCuration.objects.filter(pk=turn_id).first()
    return {name: getattr(curation, name) for name in STATE_FIELDS} if curation else dict(TURN_DEFAULTS)


def apply_turn_states(demo, states: dict) -> None:
    """Write ``{turn_id: {field: value}}`` into the turns' curation rows."""
    for turn_id, fields in states.items():
        TurnCuration.objects.update_or_create(turn_id=int(turn_id), defaults={"demonstration": demo, **fields})


def change_turn(user, demo, revision, turn_id, kind, **fields) -> Edit:
    """One curation change of one turn's state."""
    check_can_curate(user, demo)
    turn = check_turn(demo, turn_id)
    with transaction.atomic():
        review = locked_review(demo, revision)
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


def check_text(demo, turn_id, text) -> None:
    """Only chat utterances and typed text (textInput) are editable."""
    if not isinstance(text, str):
        raise ValidationFailed("text must be a string", [{"field": "text", "message": "expected a string"}])
    turn = check_turn(demo, turn_id)
    if turn.type == TurnType.BROWSER and turn.intent != "textInput":
        raise ValidationFailed(
            f"a {turn.intent} turn has no text to edit", [{"field": "text", "message": "chat or textInput only"}]
        )


def do_edit_text(user, demo, revision, turn_id, text) -> Edit:
    check_text(demo, turn_id, text)
    return change_turn(user, demo, revision, turn_id, EditKind.EDIT_TEXT, text=text)


def screenshot_choices(turn) -> list:
    """The screenshots a turn may show: its own and the frames captured around it."""
    own = [turn.screenshot_id] if turn.screenshot_id else []
    return own + [frame.get("screenshot") for frame in turn.frames or [] if frame.get("screenshot")]


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


def do_accept_suggestions(user, demo, revision) -> Edit:
    """Choose the suggested screenshot of every turn that has a suggestion different from its current one."""
    check_can_curate(user, demo)
    with transaction.atomic():
        review = locked_review(demo, revision)
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
        review = locked_review(demo, revision)
        before = current_order(demo, review)
        after = [pk for pk in before if pk != turn.pk]
        after.insert(min(to_index, len(after)), turn.pk)
        review.order = after
        review.save(update_fields=["order"])
        start_review_if_needed(demo)
        return record(review, user, EditKind.REORDER, {"order": before}, {"order": after}, turn=turn)


def check_metadata(fields: dict) -> dict:
    """Only known metadata fields, with the right types."""
    errors = [{"field": name, "message": "not editable"} for name in fields if name not in METADATA_FIELDS]
    for name, value in fields.items():
        if name == "websites" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            errors.append({"field": name, "message": "expected a list of domains"})
        elif name == "instructor_sees_screen" and not isinstance(value, bool):
            errors.append({"field": name, "message": "expected a boolean"})
        elif name in METADATA_FIELDS[:1] + METADATA_FIELDS[2:5] and not isinstance(value, str):
            errors.append({"field": name, "message": "expected a string"})
    if errors or not fields:
        raise ValidationFailed("invalid metadata", errors or [{"field": "fields", "message": "nothing to change"}])
    return fields


def apply_metadata(demo, fields: dict) -> None:
    for name, value in fields.items():
        setattr(demo, name, value)
    demo.save(update_fields=[*fields, "updated_at"])


def do_edit_metadata(user, demo, revision, fields) -> Edit:
    check_can_curate(user, demo)
    fields = check_metadata(fields)
    with transaction.atomic():
        review = locked_review(demo, revision)
        before = {name: getattr(demo, name) for name in fields}
        apply_metadata(demo, fields)
        start_review_if_needed(demo)
        return record(review, user, EditKind.EDIT_METADATA, before, fields)


# --- Undo -----------------------------------------------------------------------------------------------


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
    edit = Edit.objects.filter(demonstration=demo, pk=edit_id).first() if isinstance(edit_id, int) else None
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


FIELD_NAMES = {"deleted": "deletion", "text": "text", "valid": "validity", "screenshot": "chosen screenshot"}


def describe_key(key) -> str:
    if key[0] == "order":
        return "the turn order"
    if key[0] == "meta":
        return f"the {key[1].replace('_', ' ')}"
    turn = Turn.objects.filter(pk=int(key[1])).values_list("seq", flat=True).first()
    return f"the {FIELD_NAMES[key[2]]} of turn {turn}"


def edit_label(edit) -> str:
    kind = edit.get_kind_display().lower()
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
    culprit = blocking_edit(changed, later.select_related("author"))
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
        review = locked_review(demo, revision)
        check_not_overwritten(demo, review, edit)
        apply_state(demo, review, edit.kind, edit.before)
        return record(review, user, edit.kind, edit.after, edit.before, turn=edit.turn, undoes=edit)


# --- Workflow -------------------------------------------------------------------------------------------


def start_review_if_needed(demo) -> None:
    """The first curation edit of a recorded demo puts it in review."""
    if demo.status in (DemoStatus.RECORDED, DemoStatus.RETURNED):
        set_status(demo, DemoStatus.IN_REVIEW)


def set_status(demo, status) -> None:
    demo.status = status
    demo.save(update_fields=["status", "updated_at"])


def check_transition(user, demo, review, action) -> str:
    """The new status for workflow ``action``, if ``user`` may take it now."""
    if action not in TRANSITIONS:
        raise ValidationFailed(f"unknown action {action!r}", [{"field": "action", "message": ", ".join(TRANSITIONS)}])
    sources, target = TRANSITIONS[action]
    if action == "resubmit":
        if user.pk not in (demo.navigator_id, demo.instructor_id):
            raise Forbidden("only the demo's annotators can resubmit it")
    elif not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can change a demo's review status")
    if demo.status not in sources:
        raise Conflict(f"cannot {action.replace('_', ' ')} a demo that is {demo.get_status_display().lower()}")
    if action == "validate" and user.pk == demo.navigator_id:
        raise Forbidden("you navigated this demo: another reviewer must validate it")
    if action in ("validate", "reject") and review.unsure_by_id == user.pk:
        raise Forbidden("you marked this demo unsure: a second reviewer must decide it")
    return target


def do_transition(user, demo, revision, action, comment="") -> Edit:
    """Move the demo through the workflow; ``return`` may carry a comment for the annotator."""
    if action != "resubmit" and action in TRANSITIONS and not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can change a demo's review status")
    with transaction.atomic():
        review = locked_review(demo, revision)
        target = check_transition(user, demo, review, action)
        before = {"status": demo.status}
        set_status(demo, target)
        if comment:
            Comment.objects.create(demonstration=demo, author=user, text=comment)
        return record(review, user, EditKind.SET_STATUS, before, {"status": target, "action": action})


def do_set_unsure(user, demo, revision, unsure) -> Edit:
    """Mark the demo unsure (a second reviewer must decide it) or clear the mark."""
    if not isinstance(unsure, bool):
        raise ValidationFailed("unsure must be true or false", [{"field": "unsure", "message": "expected a boolean"}])
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can mark a demo unsure")
    with transaction.atomic():
        review = locked_review(demo, revision)
        before = {"unsure_by": review.unsure_by_id}
        review.unsure_by = user if unsure else None
        review.save(update_fields=["unsure_by"])
        return record(review, user, EditKind.SET_UNSURE, before, {"unsure_by": review.unsure_by_id})


def do_comment(user, demo, revision, text, turn_id=None) -> Comment:
    """A reviewer's comment on the demo, pinned to a turn when ``turn_id`` is given."""
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can comment")
    if not isinstance(text, str) or not text.strip():
        raise ValidationFailed("a comment needs text", [{"field": "text", "message": "required"}])
    turn = check_turn(demo, turn_id) if turn_id is not None else None
    with transaction.atomic():
        review = locked_review(demo, revision)
        comment = Comment.objects.create(demonstration=demo, turn=turn, author=user, text=text.strip())
        record(review, user, EditKind.COMMENT, {}, {"comment": comment.pk, "text": comment.text}, turn=turn)
    return comment


# --- Background work ------------------------------------------------------------------------------------


def enqueue_review_work(demo, review, missing_thumbnails: list) -> None:
    """After commit, ask the worker for missing thumbnails and, once per demo, screenshot suggestions.

    A broker that cannot be reached only means placeholders stay on the page; it is logged, never run inline."""
    from workers.tasks import make_thumbnails, realign_demo

    def send():
        try:
            if missing_thumbnails:
                make_thumbnails.delay(missing_thumbnails)
            if not review.realigned:
                realign_demo.delay(demo.pk)
        except Exception:  # kombu raises many kinds: connection, timeout, DNS, ...
            log.exception("could not enqueue review work for %s", demo)

    # At most once a minute per demo and process: without this every view of a page would enqueue again
    # while the worker is still busy with the first request.
    if (missing_thumbnails or not review.realigned) and cache.add(f"review-work:{demo.pk}", 1, ENQUEUE_EVERY):
        transaction.on_commit(send)


def ensure_quality(demo, review, turns, read) -> list:
    """The demo's quality issues, computed once (the raw capture never changes) and cached on its review."""
    from ..quality import quality_issues

    if review.quality is None:
        review.quality = quality_issues(turns, read)
        DemoReview.objects.filter(pk=review.pk).update(quality=review.quality)
    return review.quality


def reviewable_projects(user):
    """Projects whose demos ``user`` can open in review (for the list's project filter)."""
    from ..models import Project

    return Project.objects.for_user(user)


def do_prepare_review(demo, read=None) -> None:
    """The worker's part (``workers.realign_demo``): screenshot suggestions and the cached quality checks, so the
    list shows issue counts before anyone opens the demo."""
    from workers.dataset import storage_blobs
    from workers.realign import store_suggestions

    read = read or storage_blobs().read
    store_suggestions(demo, read)
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    ensure_quality(demo, review_of(demo), turns, read)
