"""Second reviews: a share of reviewed demos (``Project.second_review_percent``) also goes to a second reviewer.

When a reviewer decides a demo (validate, reject or return), ``do_send_to_second_review`` picks it or not by a
hash of the demo's id (the same demo is always picked at the same share, so a project's figures are stable) and,
picked, gives it to another reviewer of the project (chosen by another hash among the project's reviewers who
neither decided nor recorded it). The first decision stands: the demo's status is the first reviewer's. The second
reviewer finds it first in "Review next" and on the review list, and decides on the second review page (accept,
return or reject, and which turns are invalid); both decisions are kept on ``SecondReview`` for agreement
(``annotation.actions.quality.demos``).
"""

import hashlib

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from ...models import Role, SecondDecision, SecondReview, Turn, TurnCuration
from ..errors import Conflict, Forbidden, ValidationFailed
from .access import can_curate, check_demo_reviewable

# The workflow actions that decide a demo, and the decision agreement compares.
DECISIONS = {"validate": SecondDecision.ACCEPT, "reject": SecondDecision.REJECT, "return": SecondDecision.RETURN}
MAX_COMMENT = 2000


def hash_share(text: str) -> float:
    """A number in [0, 1) fixed by ``text``."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def is_picked(demo, percent: int) -> bool:
    """Does a project sending ``percent`` % of its reviewed demos to a second review send this one?"""
    return percent > 0 and hash_share(f"second-review:{demo.pk}") * 100 < percent


def second_reviewer_for(demo, first_reviewer):
    """The reviewer of the demo's project who gets its second review (None when there is no other): the project's
    reviewers (role ``reviewer``) but the first reviewer and the demo's annotators, one picked by hash."""
    candidates = list(
        get_user_model()
        .objects.filter(memberships__project_id=demo.project_id, memberships__role=Role.REVIEWER)
        .exclude(pk__in=[first_reviewer.pk, demo.navigator_id, demo.instructor_id or 0])
        .order_by("username")
    )
    if not candidates:
        return None
    return candidates[int(hash_share(f"second-reviewer:{demo.pk}") * len(candidates))]


def first_turn_judgements(demo) -> dict:
    """``{turn id: valid}`` as the demo's curation stands: a deleted turn or one marked invalid is invalid."""
    curations = {c.turn_id: c for c in TurnCuration.objects.filter(demonstration=demo)}
    judgements = {}
    for turn_id in Turn.objects.filter(demonstration=demo).order_by("seq").values_list("pk", flat=True):
        curation = curations.get(turn_id)
        judgements[str(turn_id)] = curation is None or (curation.valid and not curation.deleted)
    return judgements


def do_send_to_second_review(user, demo, action) -> SecondReview | None:
    """After ``user`` decided ``demo`` with workflow ``action``: send it to a second reviewer when the project's
    share picks it (once per demo: a demo decided again keeps its first second review). Call inside the decision's
    transaction."""
    if action not in DECISIONS or SecondReview.objects.filter(demonstration=demo).exists():
        return None
    if not is_picked(demo, demo.project.second_review_percent):
        return None
    second = second_reviewer_for(demo, user)
    if second is None:
        return None
    return SecondReview.objects.create(
        demonstration=demo,
        first_reviewer=user,
        first_decision=DECISIONS[action],
        first_turns=first_turn_judgements(demo),
        reviewer=second,
    )


def pending_second_reviews(user):
    """The second reviews waiting for ``user``, oldest first."""
    if not user.is_authenticated:
        return SecondReview.objects.none()
    return (
        SecondReview.objects.filter(reviewer=user, decision="")
        .select_related("demonstration", "demonstration__project", "first_reviewer")
        .order_by("created_at", "pk")
    )


def next_second_review(user) -> SecondReview | None:
    return pending_second_reviews(user).first()


def check_second_review(user, name: str):
    """``(demo, its SecondReview or None)`` for a reviewer or admin of the demo's project: 404 for those who cannot
    see the demo, 403 for those who may only read it."""
    demo = check_demo_reviewable(user, name)
    if not can_curate(user, demo):
        raise Forbidden("only the project's reviewers and admins see second reviews")
    return demo, SecondReview.objects.filter(demonstration=demo).select_related("first_reviewer", "reviewer").first()


def check_invalid_turns(demo, invalid_turns) -> set:
    """The ids of the turns the second reviewer marks invalid: a list of the demo's turn ids."""
    if invalid_turns is None:
        return set()
    if not isinstance(invalid_turns, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in invalid_turns
    ):
        raise ValidationFailed(
            "invalid_turns must be a list of turn ids",
            [{"field": "invalid_turns", "message": "expected a list of integers"}],
        )
    known = set(Turn.objects.filter(demonstration=demo).values_list("pk", flat=True))
    unknown = sorted(set(invalid_turns) - known)
    if unknown:
        raise ValidationFailed(
            f"no turn {', '.join(map(str, unknown))} in demo {demo.name}",
            [{"field": "invalid_turns", "message": "not a turn of this demo"}],
        )
    return set(invalid_turns)


def do_second_decision(user, name: str, decision, invalid_turns=None, comment="") -> SecondReview:
    """The second reviewer's decision on ``name``: ``accept``, ``return`` or ``reject``, with the turns they find
    invalid (a list of turn ids). The demo itself is not changed. 409 when the demo was not sent to a second review
    or was decided already; 403 when its second review is someone else's."""
    demo, review = check_second_review(user, name)
    if review is None:
        raise Conflict(f"demo {demo.name} was not sent to a second review")
    if review.reviewer_id != user.pk:
        raise Forbidden(f"the second review of {demo.name} is {review.reviewer.username}'s")
    if decision not in SecondDecision.values:
        raise ValidationFailed(
            f"decision must be one of {', '.join(SecondDecision.values)}",
            [{"field": "decision", "message": "expected accept, return or reject"}],
        )
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
        raise ValidationFailed(
            f"comment must be text of at most {MAX_COMMENT} characters", [{"field": "comment", "message": "too long"}]
        )
    if "\x00" in comment:  # PostgreSQL stores no NUL
        raise ValidationFailed("comment holds a NUL character", [{"field": "comment", "message": "a NUL character"}])
    invalid = check_invalid_turns(demo, invalid_turns)
    with transaction.atomic():
        review = SecondReview.objects.select_for_update().get(pk=demo.pk)
        if review.decision:
            raise Conflict(f"you decided the second review of {demo.name} already ({review.decision})")
        review.decision = decision
        review.turns = {turn_id: int(turn_id) not in invalid for turn_id in review.first_turns}
        review.comment = comment.strip()
        review.decided_at = timezone.now()
        review.save(update_fields=["decision", "turns", "comment", "decided_at"])
    return review


def check_second_review_percent(value) -> int:
    """A project's second-review share: an integer percentage 0-100 (400 naming ``second_review_percent``)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise ValidationFailed(
            "second_review_percent must be an integer from 0 to 100",
            [{"field": "second_review_percent", "message": "expected an integer from 0 to 100"}],
        )
    return value


def do_set_second_review_percent(project, value) -> None:
    project.second_review_percent = check_second_review_percent(value)
    project.save(update_fields=["second_review_percent"])
