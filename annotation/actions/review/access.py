"""Who may see a demonstration in review and who may curate it, and the lookups that 404 for everyone else."""

from django.db.models import Q

from ...models import Demonstration, DemoReview, DemoStatus, Membership, Project, Role, Turn
from ..errors import Conflict, Forbidden, NotFound

CURATE_ROLES = (Role.REVIEWER, Role.ADMIN)
VIEW_ALL_ROLES = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)  # annotators see only the demos they recorded
EDITABLE_STATUSES = (DemoStatus.RECORDED, DemoStatus.IN_REVIEW, DemoStatus.RETURNED)
QUEUE_STATUSES = (DemoStatus.RECORDED, DemoStatus.IN_REVIEW)  # waiting for a review decision: "Review next" hands these


def reviewable_demos(user):
    """Demonstrations ``user`` may open in review: every demo of projects where they review, research or
    administer; only their own demos (navigator or instructor) where they are an annotator."""
    if not user.is_authenticated:
        return Demonstration.objects.none()
    if user.is_superuser:
        return Demonstration.objects.all()
    wide = Project.objects.for_user(user, VIEW_ALL_ROLES)
    own = Membership.objects.filter(user=user, role=Role.ANNOTATOR).values("project")
    return Demonstration.objects.filter(
        Q(project__in=wide) | (Q(project__in=own) & (Q(navigator=user) | Q(instructor=user)))
    )


def reviewable_projects(user):
    """Projects whose demos ``user`` can open in review (for the list's project filter)."""
    return Project.objects.for_user(user)


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


def check_turn(demo, turn_id) -> Turn:
    is_id = isinstance(turn_id, int) and not isinstance(turn_id, bool)  # JSON true is not turn 1
    turn = Turn.objects.filter(demonstration=demo, pk=turn_id).first() if is_id else None
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in demo {demo.name}", [{"field": "turn", "message": "not found"}])
    return turn


def review_of(demo) -> DemoReview:
    """The demo's review row (created on first use)."""
    review, _ = DemoReview.objects.get_or_create(demonstration=demo)
    return review
