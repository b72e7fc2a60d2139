"""Quality of demonstrations (WebLINX recordings and Mind2Web demonstration tasks, both reviewed in review):
reviewers' agreement on second reviews (Cohen's κ per reviewer pair), annotators' records, and the items of the
quality report (``quality.json``) an export writes. docs/quality.md describes the figures.

Second reviews themselves (which demo, which reviewer, the second decision) are review's: ``actions/review/second``.
"""

from collections import Counter
from typing import NamedTuple

from django.db.models import Count, Q

from ...lib.kappa import cohen_kappa
from ...lib.quality import ALIGNMENT, CHECKS, alignment_issues, order_issues
from ...models import (
    Demonstration,
    DemoReview,
    DemoStatus,
    Edit,
    EditKind,
    Membership,
    Project,
    Role,
    SecondReview,
    Turn,
    TurnCuration,
    curated_turns,
)
from ..errors import Forbidden, NotFound
from ..manage.access import check_project_role
from ..review import VIEW_ALL_ROLES, chosen_screenshots

ALL_ROLES = (Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)
CHECK_NAMES = (*CHECKS, ALIGNMENT)


# --- Who may see what ------------------------------------------------------------------------------------------


def check_project_for_reviewers(user, name: str) -> Project:
    """The project's reviewers' agreement and second reviews: its reviewers, researchers and admins (404 for
    non-members, 403 for annotators)."""
    return check_project_role(user, name, VIEW_ALL_ROLES, "see reviewers' agreement")


def check_project_admin_for_settings(user, name: str) -> Project:
    return check_project_role(user, name, (Role.ADMIN,), "change the second-review share")


def check_project_for_records(user, name: str) -> Project:
    """Annotators' records: every member (an annotator sees only their own, ``visible_members``)."""
    return check_project_role(user, name, ALL_ROLES, "see annotators' records")


def sees_every_record(user, project) -> bool:
    return project.has_role(user, VIEW_ALL_ROLES)


def visible_members(user, project) -> list:
    """The members whose records ``user`` may see: all of them for reviewers, researchers and admins; only
    themselves for an annotator."""
    memberships = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    if not sees_every_record(user, project):
        memberships = memberships.filter(user=user)
    return [(membership.user, membership.role) for membership in memberships]


def check_member_record(user, project, user_id):
    """``(member, role)`` for the record of the project member ``user_id``: 404 for someone not a member (or no
    such user), 403 for an annotator asking for another member's record."""
    membership = Membership.objects.filter(project=project, user_id=user_id).select_related("user").first()
    if membership is None:
        raise NotFound(f"no member {user_id} in {project.name}", [{"field": "id", "message": "not found"}])
    if membership.user_id != user.pk and not sees_every_record(user, project):
        raise Forbidden("an annotator sees only their own record")
    return membership.user, membership.role


# --- Reviewers' agreement ----------------------------------------------------------------------------------------


def decided_second_reviews(demos=None, project=None):
    reviews = SecondReview.objects.exclude(decision="").select_related("first_reviewer", "reviewer", "demonstration")
    if project is not None:
        reviews = reviews.filter(demonstration__project=project)
    if demos is not None:
        reviews = reviews.filter(demonstration__in=demos)
    return reviews.order_by("demonstration_id")


def turn_pairs(review) -> list[tuple]:
    """``[(first valid, second valid)]`` over the turns both judged."""
    second = review.turns or {}
    return [(first, second[turn]) for turn, first in sorted(review.first_turns.items()) if turn in second]


def agreement(reviews) -> list[dict]:
    """Cohen's κ per reviewer pair (the two usernames in alphabetical order) over decided second reviews: on the
    decisions (accept / return / reject, one item per demo) and on turn validity (valid / invalid, one item per
    turn). Undefined (``kappa`` null and ``undefined`` saying why) with fewer than 2 items or a single label."""
    pairs = {}
    for review in reviews:
        first, second = review.first_reviewer.username, review.reviewer.username
        key = tuple(sorted((first, second)))
        swap = key[0] != first  # ratings listed as the pair's first name's, then the second's
        entry = pairs.setdefault(key, {"decisions": ([], []), "turns": ([], []), "demos": []})
        entry["demos"].append(review.demonstration.name)
        a, b = review.first_decision, review.decision
        entry["decisions"][0].append(b if swap else a)
        entry["decisions"][1].append(a if swap else b)
        for x, y in turn_pairs(review):
            a, b = label(x), label(y)
            entry["turns"][0].append(b if swap else a)
            entry["turns"][1].append(a if swap else b)
    return [
        {
            "reviewers": list(key),
            "demos": len(entry["demos"]),
            "decisions": cohen_kappa(*entry["decisions"]),
            "turns": cohen_kappa(*entry["turns"]),
        }
        for key, entry in sorted(pairs.items())
    ]


def label(valid: bool) -> str:
    return "valid" if valid else "invalid"


def second_review_counts(project) -> dict:
    """``{"sent", "decided", "pending", "agreeing"}`` over the project's second reviews."""
    reviews = SecondReview.objects.filter(demonstration__project=project)
    counts = reviews.aggregate(sent=Count("pk"), decided=Count("pk", filter=~Q(decision="")))
    decisions = reviews.exclude(decision="").values_list("first_decision", "decision")
    agreeing = sum(first == second for first, second in decisions)
    return {**counts, "pending": counts["sent"] - counts["decided"], "agreeing": agreeing}


def reviewers_kappa(project) -> dict:
    """What the agreement page and ``GET /api/quality/demos/<project>/`` show."""
    return {
        "project": project.name,
        "second_review_percent": project.second_review_percent,
        "second_reviews": second_review_counts(project),
        "pairs": agreement(decided_second_reviews(project=project)),
    }


# --- Annotators' records -----------------------------------------------------------------------------------------


def annotated_by(project, user):
    """The recorded demos of ``project`` that ``user`` navigated or instructed."""
    return (
        Demonstration.objects.filter(project=project)
        .exclude(status=DemoStatus.RECORDING)
        .filter(Q(navigator=user) | Q(instructor=user))
    )


def record_of(project, user, role) -> dict:
    """An annotator's record in ``project``: their demos by status, how many reviewers returned (and how often),
    the turns reviewers deleted or rewrote (as curation stands now: an undone deletion is not counted), and the
    demos failing each automatic quality check (from review's cache; ``demos_unchecked`` not computed yet)."""
    demos = annotated_by(project, user)
    by_status = dict(sorted(Counter(demos.values_list("status", flat=True)).items()))
    returns = Edit.objects.filter(
        demonstration__in=demos, kind=EditKind.SET_STATUS, after__action="return", undone_by__isnull=True
    )
    curation = TurnCuration.objects.filter(demonstration__in=demos).aggregate(
        deleted=Count("pk", filter=Q(deleted=True)), rewritten=Count("pk", filter=Q(text__isnull=False))
    )
    failing, checked, with_issues = Counter(), 0, 0
    for quality in DemoReview.objects.filter(demonstration__in=demos).values_list("quality", flat=True):
        if quality is None:
            continue
        checked += 1
        with_issues += bool(quality)
        failing.update({issue["check"] for issue in quality})
    total = sum(by_status.values())
    return {
        "id": user.pk,
        "user": user.username,
        "role": role,
        "demos": total,
        "by_status": by_status,
        "returned": returns.values("demonstration").distinct().count(),
        "returns": returns.count(),
        "turns": Turn.objects.filter(demonstration__in=demos).count(),
        "turns_deleted": curation["deleted"],
        "turns_rewritten": curation["rewritten"],
        "demos_with_issues": with_issues,
        "checks_failing": {check: failing[check] for check in CHECKS if failing[check]},
        "demos_unchecked": total - checked,
    }


def records(user, project) -> list[dict]:
    return [record_of(project, member, role) for member, role in visible_members(user, project)]


def record_demos(project, member) -> list[dict]:
    """The member's demos for their record page: name, status, returns, turns deleted and rewritten, issues."""
    demos = annotated_by(project, member).annotate(
        returns=Count(
            "edits",
            filter=Q(edits__kind=EditKind.SET_STATUS, edits__after__action="return", edits__undone_by__isnull=True),
            distinct=True,
        ),
        deleted=Count("turn_curations", filter=Q(turn_curations__deleted=True), distinct=True),
        rewritten=Count("turn_curations", filter=Q(turn_curations__text__isnull=False), distinct=True),
    )
    quality = dict(DemoReview.objects.filter(demonstration__in=demos).values_list("pk", "quality"))
    return [
        {
            "name": demo.name,
            "mode": demo.mode,
            "status": demo.status,
            "returns": demo.returns,
            "turns_deleted": demo.deleted,
            "turns_rewritten": demo.rewritten,
            "issues": None if quality.get(demo.pk) is None else len(quality[demo.pk]),
        }
        for demo in demos.order_by("-recording_start", "pk")
    ]


# --- The quality report of an export -------------------------------------------------------------------------------


def demo_checks(review, turns: list, curations: list, edits: list) -> dict:
    """``{check: turns flagged}`` for every automatic check (0 = passed), over the exported (curated) timeline:
    the checks of the raw capture as review cached them (the worker computes them after each recording; null
    until it has: computing them here would make an export several times slower), the curated order's time order,
    and screenshot alignment (kept turns whose screenshot is not the frame the tab video shows at the action and
    that no reviewer chose: ``lib.quality.alignment_issues``; null until the worker has made its suggestions).
    ``turns``: the demo's ``TurnFacts``; ``curations`` and ``edits``: its rows."""
    turns = sorted(turns, key=lambda t: (t.timestamp, t.seq))
    curations = {c.turn_id: c for c in curations}
    deleted = {pk for pk, c in curations.items() if c.deleted}
    ordered = [turn for turn, _ in curated_turns(turns, curations, review.order)]
    issues = [i for i in review.quality or [] if i["turn"] not in deleted] + order_issues(ordered, deleted)
    flagged = {check: set() for check in CHECKS}
    for item in issues:
        flagged.setdefault(item["check"], set()).add(item["turn"])
    checks = {check: len(turns_flagged) for check, turns_flagged in flagged.items()}
    if review.quality is None:
        checks.update({check: None for check in CHECKS if check != "time_order"})
    misaligned = alignment_issues(turns, curations, chosen_screenshots(edits, curations))
    checks[ALIGNMENT] = len(misaligned) if review.realigned else None
    return checks


def cached_review(demo) -> DemoReview:
    """The demo's review row as read with it (an unsaved empty one when it has none: nothing is written here)."""
    try:
        return demo.review
    except DemoReview.DoesNotExist:
        return DemoReview(demonstration=demo)


class TurnFacts(NamedTuple):
    """What the report reads of a turn (model instances of whole turns cost an export more than the rest of it)."""

    pk: int
    timestamp: float
    seq: int
    screenshot_id: str | None


def demo_item(demo, export_id: str, turns: int, second, facts: list) -> dict:
    """One exported demo's entry of ``quality.json`` (docs/quality.md); ``facts``: its turns' ``TurnFacts``."""
    curations, edits = list(demo.turn_curations.all()), list(demo.edits.all())
    return {
        "id": export_id,
        "kind": "demo",
        "status": demo.status,
        "reviewers": demo_reviewers(demo, second, edits),
        "second_review": second_review_item(second),
        "checks": demo_checks(cached_review(demo), facts, curations, edits),
        "turns": turns,
        "turns_deleted": sum(c.deleted for c in curations),
        "turns_rewritten": sum(c.text is not None for c in curations),
        "problems": dict(sorted(Counter(mark.kind for mark in demo.problem_marks.all()).items())),
    }


def second_review_item(review) -> dict | None:
    if review is None:
        return None
    pairs = turn_pairs(review)
    return {
        "first_reviewer": review.first_reviewer.username,
        "first_decision": review.first_decision,
        "reviewer": review.reviewer.username,
        "decision": review.decision or None,
        "agrees": (review.decision == review.first_decision) if review.decision else None,
        "turns_compared": len(pairs),
        "turns_agreeing": sum(a == b for a, b in pairs),
    }


def demo_reviewers(demo, second, edits: list) -> list[str]:
    """Who reviewed the demo: the authors of its review ``edits`` (not its annotators), and its second reviewer
    once they decided."""
    annotators = {demo.navigator_id, demo.instructor_id}
    names = {edit.author.username for edit in edits if edit.author_id not in annotators}
    if second is not None and second.decision:
        names.add(second.reviewer.username)
    return sorted(names)


def turn_facts(demo_ids: list) -> dict:
    """``{demo id: [TurnFacts]}`` of these demos' turns, in one query."""
    found = {}
    rows = Turn.objects.filter(demonstration_id__in=demo_ids).values_list(
        "demonstration_id", "pk", "timestamp", "seq", "screenshot_id"
    )
    for demo_id, *facts in rows:
        found.setdefault(demo_id, []).append(TurnFacts(*facts))
    return found


ITEMS_CHUNK = 50  # demos read at once (with their turns) while the report is made


def demo_quality_items(exported: dict) -> tuple[list[dict], dict]:
    """The ``quality.json`` items of an export and its extra totals. ``exported`` is ``{demo name: (its id in the
    export, turns exported)}`` in export order.
    Demos are read ``ITEMS_CHUNK`` at a time, so memory stays bounded whatever the export's size."""
    names, items, seconds = list(exported), [], {}
    for start in range(0, len(names), ITEMS_CHUNK):
        chunk = names[start : start + ITEMS_CHUNK]
        demos = (
            Demonstration.objects.filter(name__in=chunk)
            .select_related("review")
            .prefetch_related("turn_curations", "edits__author", "problem_marks")
        )
        by_name = {demo.name: demo for demo in demos}
        facts = turn_facts([demo.pk for demo in by_name.values()])
        reviews = SecondReview.objects.filter(demonstration__name__in=chunk).select_related(
            "first_reviewer", "reviewer", "demonstration"
        )
        seconds.update({review.demonstration_id: review for review in reviews})
        for name in chunk:
            export_id, turns = exported[name]
            demo = by_name[name]
            items.append(demo_item(demo, export_id, turns, seconds.get(demo.pk), facts.get(demo.pk, [])))
    decided = [r for r in seconds.values() if r.decision]
    extra = {
        "second_reviews": {
            "sent": len(seconds),
            "decided": len(decided),
            "agreeing": sum(r.decision == r.first_decision for r in decided),
        },
        "agreement": agreement(sorted(decided, key=lambda r: r.demonstration_id)),
        "checks_failing": dict(sorted(Counter(c for item in items for c, n in item["checks"].items() if n).items())),
        "problems": dict(sorted(sum((Counter(item["problems"]) for item in items), Counter()).items())),
    }
    return items, extra
