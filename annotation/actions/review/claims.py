"""The review queue: "Review next" claims the oldest recorded demo waiting for review; demos can be assigned to
named reviewers; bulk actions from the list.

A claim has two lengths. Opening a demo from "Review next" holds it only ``REVIEW_OPEN_SECONDS`` (``opened``): long
enough that two reviewers are not handed the same demo at the same moment, short enough that a demo someone only
looked at goes back to the queue. The reviewer's first write on it (an edit, a comment, a mark:
``revisions.take_hold``, from ``locked_review``) turns it into the full hold, ``REVIEW_CLAIM_SECONDS`` from their
latest write (``working``); a decision releases it.

Two reviewers never get the same demo: a claim is an atomic conditional update of the demo's review row
("still unclaimed, or claimed by me, or the claim expired"), which PostgreSQL re-checks against the row's latest
version when another transaction changed it meanwhile, so only one of two racing claims updates the row.
"""

import datetime as dt

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ...models import ClaimKind, Demonstration, DemoReview, Project
from ..errors import Forbidden, NotFound, ValidationFailed
from .access import CURATE_ROLES, QUEUE_STATUSES, can_curate, reviewable_demos
from .workflow import TRANSITIONS, do_transition

CLAIM_TRIES = 20  # candidates tried in one call; each lost race moves on to the next


def free_for(user, now) -> Q:
    """Review rows no one else holds now (no row yet counts as free)."""
    return Q(review__claimed_by__isnull=True) | Q(review__claimed_by=user) | Q(review__claimed_until__lte=now)


def queue_for(user, now=None):
    """Demos ``user`` may get from "Review next", oldest recorded first: waiting for review in projects where they
    review or administer, not navigated by them (they may not validate it), not marked unsure by them, assigned
    to nobody or to them, and not held by another reviewer."""
    now = now or timezone.now()
    projects = Project.objects.for_user(user, CURATE_ROLES)
    return (
        Demonstration.objects.filter(project__in=projects, status__in=QUEUE_STATUSES)
        .exclude(navigator=user)
        .exclude(review__unsure_by=user)
        .filter(Q(review__assignee__isnull=True) | Q(review__assignee=user))
        .filter(free_for(user, now))
        .order_by("recording_start", "pk")
    )


def held_by(user, now=None):
    """The demo ``user`` holds now and has not decided yet, if any: "Review next" gives it back first."""
    now = now or timezone.now()
    return (
        Demonstration.objects.filter(review__claimed_by=user, review__claimed_until__gt=now, status__in=QUEUE_STATUSES)
        .order_by("recording_start", "pk")
        .first()
    )


def try_claim(user, demo_id, now) -> bool:
    """Open one demo for ``user`` if still free, in one conditional UPDATE: held ``REVIEW_OPEN_SECONDS`` until they
    act on it. False when another reviewer got it first."""
    DemoReview.objects.get_or_create(demonstration_id=demo_id)
    until = now + dt.timedelta(seconds=settings.REVIEW_OPEN_SECONDS)
    free = Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lte=now)
    claimed = DemoReview.objects.filter(free, pk=demo_id).update(
        claimed_by=user, claimed_until=until, claim_kind=ClaimKind.OPENED
    )
    return bool(claimed)


def do_claim_next(user, now=None) -> Demonstration | None:
    """The demo ``user`` should review next, now held for them; None when the queue is empty."""
    now = now or timezone.now()
    held = held_by(user, now)
    if held is not None:
        return held
    for demo_id in queue_for(user, now).values_list("pk", flat=True)[:CLAIM_TRIES]:
        with transaction.atomic():
            if try_claim(user, demo_id, now):
                return Demonstration.objects.select_related("project").get(pk=demo_id)
    return None


# --- Bulk actions from the list -------------------------------------------------------------------------

BULK_ACTIONS = ("assign", "return", "export")
MAX_BULK = 500


def check_selected_demos(user, names) -> list:
    """The selected demos, each one ``user`` may see in review: 404 naming those they cannot see."""
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise ValidationFailed("select at least one demonstration", [{"field": "names", "message": "required"}])
    if len(names) > MAX_BULK:
        too_many = [{"field": "names", "message": "too many"}]
        raise ValidationFailed(f"at most {MAX_BULK} demonstrations at once", too_many)
    demos = list(reviewable_demos(user).filter(name__in=names).select_related("project"))
    missing = sorted(set(names) - {demo.name for demo in demos})
    if missing:
        not_found = [{"field": "names", "message": "not found"}]
        raise NotFound(f"no recorded demonstration {', '.join(missing)} among yours", not_found)
    return demos


def check_bulk_demos(user, names) -> list:
    """The selected demos, each one ``user`` may curate: 404 naming those they cannot see, 403 naming those they
    may only read."""
    demos = check_selected_demos(user, names)
    read_only = sorted(demo.name for demo in demos if not can_curate(user, demo))
    if read_only:
        raise Forbidden(f"only the project's reviewers and admins can change {', '.join(read_only)}")
    return demos


def check_assignee(username, demos):
    """The user named ``username`` (blank = nobody), a reviewer or admin of every selected demo's project."""
    if not username:
        return None
    assignee = get_user_model().objects.filter(username=username).first()
    projects = {demo.project for demo in demos}
    if assignee is None or not all(project.has_role(assignee, CURATE_ROLES) for project in projects):
        names = ", ".join(sorted(project.name for project in projects))
        raise ValidationFailed(
            f"{username!r} is not a reviewer or admin of {names}",
            [{"field": "assignee", "message": "expected a reviewer of the demos' projects"}],
        )
    return assignee


def do_assign(user, names, username) -> int:
    """Assign the selected demos to ``username`` (blank: unassign); a claim by someone else is dropped so the
    assignee gets them from "Review next"."""
    demos = check_bulk_demos(user, names)
    assignee = check_assignee(username, demos)
    with transaction.atomic():
        for demo in demos:
            DemoReview.objects.get_or_create(demonstration=demo)
        reviews = DemoReview.objects.filter(pk__in=[demo.pk for demo in demos])
        reviews.update(assignee=assignee)
        if assignee is not None:
            reviews.exclude(claimed_by=assignee).update(claimed_by=None, claimed_until=None, claim_kind="")
    return len(demos)


def do_bulk_return(user, names, comment="") -> int:
    """Return the selected demos to their annotators (all or none: one that cannot be returned refuses them all)."""
    demos = check_bulk_demos(user, names)
    sources = TRANSITIONS["return"][0]
    wrong = sorted(f"{demo.name} ({demo.get_status_display().lower()})" for demo in demos if demo.status not in sources)
    if wrong:
        raise ValidationFailed(
            f"only recorded or in-review demos can be returned: {', '.join(wrong)}",
            [{"field": "names", "message": "not returnable"}],
        )
    with transaction.atomic():
        for demo in demos:
            review, _ = DemoReview.objects.get_or_create(demonstration=demo)
            do_transition(user, demo, review.revision, "return", comment)
    return len(demos)
