"""The review workflow: status transitions, the unsure mark and reviewers' comments."""

from django.db import transaction

from ...models import Comment, DemoStatus, Edit, EditKind
from .. import queue
from ..errors import Conflict, Forbidden, ValidationFailed
from .access import can_curate, check_turn
from .revisions import locked_review, record
from .second import do_send_to_second_review

# Workflow: status → {action: new status}.
TRANSITIONS = {
    "start_review": ((DemoStatus.RECORDED, DemoStatus.RETURNED), DemoStatus.IN_REVIEW),
    "validate": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.VALIDATED),
    "reject": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.REJECTED),
    "return": ((DemoStatus.RECORDED, DemoStatus.IN_REVIEW), DemoStatus.RETURNED),
    "reopen": ((DemoStatus.VALIDATED, DemoStatus.REJECTED, DemoStatus.RETURNED), DemoStatus.IN_REVIEW),
    "resubmit": ((DemoStatus.RETURNED,), DemoStatus.RECORDED),
}


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
    if action == "validate" and user.pk in (demo.navigator_id, demo.instructor_id):
        took_part = "navigated" if user.pk == demo.navigator_id else "instructed"
        raise Forbidden(f"you {took_part} this demo: another reviewer must validate it")
    if action in ("validate", "reject") and review.unsure_by_id == user.pk:
        raise Forbidden("you marked this demo unsure: a second reviewer must decide it")
    return target


def do_transition(user, demo, revision, action, comment="") -> Edit:
    """Move the demo through the workflow; ``return`` may carry a comment for the annotator."""
    if action != "resubmit" and action in TRANSITIONS and not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can change a demo's review status")
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        target = check_transition(user, demo, review, action)
        before = {"status": demo.status}
        set_status(demo, target)
        if target not in (DemoStatus.RECORDED, DemoStatus.IN_REVIEW):  # decided or returned: held by no one
            review.claimed_by, review.claimed_until, review.claim_kind = None, None, ""
            review.save(update_fields=["claimed_by", "claimed_until", "claim_kind"])
        if comment:
            Comment.objects.create(demonstration=demo, author=user, text=comment)
        do_send_to_second_review(user, demo, action)  # a share of decided demos, to another reviewer
        if target == DemoStatus.VALIDATED:  # its steps' pages parsed once, for the Mind2Web export
            queue.enqueue(queue.MIND2WEB_STEPS, demo.pk)
        return record(review, user, EditKind.SET_STATUS, before, {"status": target, "action": action})


def do_set_unsure(user, demo, revision, unsure) -> Edit:
    """Mark the demo unsure (a second reviewer must decide it) or clear the mark."""
    if not isinstance(unsure, bool):
        raise ValidationFailed("unsure must be true or false", [{"field": "unsure", "message": "expected a boolean"}])
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can mark a demo unsure")
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        before = {"unsure_by": review.unsure_by_id}
        review.unsure_by = user if unsure else None
        review.save(update_fields=["unsure_by"])
        if unsure and review.claimed_by_id == user.pk:  # another reviewer must decide it: held by no one
            review.claimed_by, review.claimed_until, review.claim_kind = None, None, ""
            review.save(update_fields=["claimed_by", "claimed_until", "claim_kind"])
        return record(review, user, EditKind.SET_UNSURE, before, {"unsure_by": review.unsure_by_id})


def do_comment(user, demo, revision, text, turn_id=None) -> Comment:
    """A reviewer's comment on the demo, pinned to a turn when ``turn_id`` is given."""
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins can comment")
    if not isinstance(text, str) or not text.strip():
        raise ValidationFailed("a comment needs text", [{"field": "text", "message": "required"}])
    turn = check_turn(demo, turn_id) if turn_id is not None else None
    with transaction.atomic():
        review = locked_review(demo, revision, user)
        comment = Comment.objects.create(demonstration=demo, turn=turn, author=user, text=text.strip())
        record(review, user, EditKind.COMMENT, {}, {"comment": comment.pk, "text": comment.text}, turn=turn)
    return comment
