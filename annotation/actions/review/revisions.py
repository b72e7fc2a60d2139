"""Concurrency: every write locks the demo's review row, checks the revision its author saw and appends an edit."""

from django.utils import timezone

from ...models import DemoReview, Edit
from ..errors import Conflict, ValidationFailed
from .access import review_of


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
