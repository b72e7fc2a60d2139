"""Concurrency: every write locks the demo's review row, checks the revision its author saw and appends an edit;
the write's author then holds the demo (the full "Review next" hold, ``take_hold``)."""

import datetime as dt

from django.conf import settings
from django.utils import timezone

from ...models import ClaimKind, DemoReview, Edit, EditKind, TurnType
from ..errors import Conflict, ValidationFailed
from .access import QUEUE_STATUSES, review_of

VALUE_INTENT = "change"  # a browser turn whose edited text is the value chosen (a <select>'s option)


def is_value_edit(edit: Edit) -> bool:
    """An ``edit_text`` edit of a change turn: the turn's value was changed, not a text."""
    turn = edit.turn if edit.turn_id else None
    return (
        edit.kind == EditKind.EDIT_TEXT
        and turn is not None
        and (turn.type, turn.intent) == (TurnType.BROWSER, VALUE_INTENT)
    )


def kind_label(edit: Edit) -> str:
    """The edit's kind in lower case, as messages name it ("delete turn", "edit value")."""
    return "edit value" if is_value_edit(edit) else edit.get_kind_display().lower()


def check_revision(review: DemoReview, revision) -> None:
    """Refuse a write based on an older revision, saying who changed the demo since and how."""
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise ValidationFailed("revision (an integer) is required", [{"field": "revision", "message": "required"}])
    if revision == review.revision:
        return
    last = Edit.objects.filter(demonstration_id=review.pk).select_related("author", "turn").first()
    who = f"{last.author.username} ({kind_label(last)}" if last else "someone ("
    when = timezone.localtime(last.created_at).strftime("%H:%M:%S") if last else "?"
    raise Conflict(
        f"this demo was changed by {who} at {when}) since you loaded revision {revision}; it is now at revision "
        f"{review.revision}. Reload to see the change, then redo yours."
    )


def locked_review(demo, revision, user) -> DemoReview:
    """Lock the demo's review row and check ``revision``; ``user`` writes, so they hold the demo now. Call inside
    ``transaction.atomic`` (a refused write rolls the hold back too)."""
    review_of(demo)
    review = DemoReview.objects.select_for_update().get(pk=demo.pk)
    check_revision(review, revision)
    take_hold(review, user, demo)
    return review


def take_hold(review: DemoReview, user, demo, now=None) -> None:
    """``user`` acts on the demo (a write, its review row locked): they hold it ``REVIEW_CLAIM_SECONDS`` from now,
    unless it is decided or another reviewer works on it. A demo another reviewer only opened is theirs now (the
    opener's own next write will say the demo changed)."""
    now = now or timezone.now()
    if demo.status not in QUEUE_STATUSES:
        return
    other_working = (
        review.claimed_by_id not in (None, user.pk)
        and review.claimed_until is not None
        and review.claimed_until > now
        and review.claim_kind != ClaimKind.OPENED
    )
    if other_working:
        return
    review.claimed_by, review.claim_kind = user, ClaimKind.WORKING
    review.claimed_until = now + dt.timedelta(seconds=settings.REVIEW_CLAIM_SECONDS)
    review.save(update_fields=["claimed_by", "claimed_until", "claim_kind"])


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
