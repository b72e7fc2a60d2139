"""The review page of one demonstration: its curated timeline of turns, quality issues, comments, edit history
(``history``) and workflow buttons, read in a constant number of queries whatever the number of turns; and what the
open page polls (``revision_state``, ``live_state``)."""

from collections import Counter

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from ...actions import review as actions
from ...lib import shapes
from ...lib.labels import action_label
from ...lib.quality import ALIGNMENT, alignment_issues, order_issues
from ...models import (
    Comment,
    DemoReview,
    DemoStatus,
    Edit,
    Role,
    Turn,
    TurnCuration,
    TurnType,
    curated_turns,
)
from ...store.blobstore import has_thumbnail
from .history import curated_value, edit_summary, history, shorten


def element_text(element: dict) -> str:
    return " ".join(shapes.as_text(element.get("textContent")).split())[:120]


def turn_text(turn, curation) -> str:
    """The curated text: a chat utterance, the typed text of a textInput, or a change turn's value."""
    if curation is not None and curation.text is not None:
        return curation.text
    if turn.type == TurnType.CHAT:
        return turn.utterance
    return shapes.as_text(shapes.as_dict(turn.arguments).get("value" if turn.intent == "change" else "text"))


def turn_row(index, turn, curation, issues, comments) -> dict:
    """Everything the page shows about one turn (also sent to the script as JSON)."""
    chosen = (curation.screenshot if curation else "") or turn.screenshot_id or ""
    retargeted = bool(curation and curation.element)
    arguments = {**shapes.as_dict(turn.arguments), "element": curation.element} if retargeted else turn.arguments
    element = shapes.element_of(arguments)
    tag = shapes.as_text(element.get("tagName"))
    # a chosen target is named from its element (the recorder's label named the recorded one)
    label = (
        action_label(turn.intent, arguments, "" if retargeted else turn.label) if turn.type == TurnType.BROWSER else ""
    )
    return {
        "id": turn.pk,
        "index": index,
        "seq": turn.seq,
        "type": turn.type,
        "speaker": turn.speaker,
        "intent": turn.intent,
        "text": turn_text(turn, curation),
        "text_editable": turn.type == TurnType.CHAT or turn.intent in actions.EDITABLE_INTENTS,
        "element": element_text(element),
        "target": shapes.uid_of(element) or "",
        "retargetable": turn.type == TurnType.BROWSER and turn.element_uid is not None,
        "retargeted": retargeted,
        "label": label,
        "element_label": f"{tag.lower()} “{label}”" if label else "",
        "tag": tag,
        "url": turn.url,
        "url_short": shorten(turn.url or "", 70),
        "time": round(turn.timestamp, 2),
        "screenshot": chosen,
        "own_screenshot": turn.screenshot_id or "",
        "frames": shapes.frames_of(turn.frames),
        "suggested": curation.suggested_screenshot if curation else "",
        "deleted": bool(curation and curation.deleted),
        "valid": not curation or curation.valid,
        "box": shapes.box_of(element.get("bbox")),
        "viewport": [turn.viewport_width, turn.viewport_height],
        "has_page": bool(turn.page_id),
        "issues": issues.get(turn.pk, []),
        "comments": comments.get(turn.pk, []),
    }


def comments_by_turn(demo) -> tuple:
    general, pinned = [], {}
    for comment in Comment.objects.filter(demonstration=demo).select_related("author"):
        item = {"author": comment.author.username, "text": comment.text, "at": comment.created_at.isoformat()}
        (pinned.setdefault(comment.turn_id, []) if comment.turn_id else general).append(item)
    return general, pinned


def choice_lists(project) -> list:
    """``[(field, suggestions)]`` for the metadata form's datalists: the project's choice lists for category,
    subcategory and region (free text stays allowed)."""
    return [(field, getattr(project, f"{field}_choices") or []) for field in ("category", "subcategory", "region")]


def page_context(user, demo, read) -> dict:
    """The review page of ``demo`` for ``user``."""
    review = actions.review_of(demo)
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    curations = {c.turn_id: c for c in TurnCuration.objects.filter(demonstration=demo)}
    ordered = curated_turns(turns, curations, review.order)
    deleted = {pk for pk, curation in curations.items() if curation.deleted}
    chosen = actions.chosen_screenshots(actions.screenshot_edits(demo), curations)
    quality = (
        actions.ensure_quality(demo, review, turns, read)
        + order_issues([t for t, _ in ordered], deleted)
        + alignment_issues([t for t, _ in ordered], curations, chosen)
    )
    issues = {}
    for item in quality:
        issues.setdefault(item["turn"], []).append(item["message"])
    general, pinned = comments_by_turn(demo)
    rows = [turn_row(i, t, c, issues, pinned) for i, (t, c) in enumerate(ordered)]
    order = actions.order_of([turn.pk for turn in turns], review.order)
    shots = {row["screenshot"] for row in rows if row["screenshot"]}
    thumbs = {sha: has_thumbnail(sha) for sha in shots}
    thumb_prefix = reverse("review-thumbnail", args=["SHA"]).removesuffix("SHA")  # reversed once, not per turn
    for row in rows:
        row["thumb_ready"] = thumbs.get(row["screenshot"], False)
        row["thumb_url"] = thumb_prefix + row["screenshot"] if row["screenshot"] else ""
    actions.enqueue_review_work(demo, review, [sha for sha, ready in thumbs.items() if not ready])
    demo.project.remember_role(user, demo.project.role_of(user))  # read once: curate, unmark, transitions
    curate = actions.can_curate(user, demo)
    problems = problems_context(user, demo, rows, curate)
    return {
        **problems,
        "demo": demo,
        "review": review,
        "held": bool(review.claimed_by_id and review.claimed_until and review.claimed_until > timezone.now()),
        "hold_minutes": settings.REVIEW_CLAIM_SECONDS // 60,
        "turns": rows,
        "quality": quality,
        "alignment_failing": any(item["check"] == ALIGNMENT for item in quality),
        "history": history(demo, curated_value(demo, order, curations)),
        "comments": general,
        "can_curate": curate,
        "can_resubmit": demo.status == DemoStatus.RETURNED and user.pk in (demo.navigator_id, demo.instructor_id),
        "editable": curate and demo.status in actions.EDITABLE_STATUSES,
        "transitions": available_transitions(user, demo) if curate else [],
        "choice_lists": choice_lists(demo.project),
        "config": {
            "name": demo.name,
            "revision": review.revision,
            "editUrl": reverse("review-edit", args=[demo.name]),
            "blobUrl": reverse("blob", args=["SHA"]),
            "pageUrl": reverse("review-turn-page", args=[demo.name, 0]),
            "elementsUrl": reverse("review-turn-elements", args=[demo.name, 0]),
            "editable": curate and demo.status in actions.EDITABLE_STATUSES,
            "revisionUrl": reverse("review-revision", args=[demo.name]),
            "pollSeconds": REVISION_POLL_SECONDS,
            "liveUrl": reverse("review-live", args=[demo.name]),
            "livePollSeconds": LIVE_POLL_SECONDS,
            "realigned": review.realigned,
        },
    }


def problems_context(user, demo, rows, curate) -> dict:
    """Problem marks on the page: each row's ``problems`` (marks) and ``problem_counts`` (``[(label, n)]``), the
    task's marks, and the kinds a reviewer may mark on a turn and on the task. Who marked is shown as for comments."""
    kinds = actions.kinds_of(demo.project)
    marks = actions.marks_of(demo, kinds)
    unmark_any = demo.project.has_role(user, (Role.ADMIN,))
    for item in [*marks["task"], *(m for items in marks["turns"].values() for m in items)]:
        item["can_unmark"] = curate and (unmark_any or item["reviewer_id"] == user.pk)
    for row in rows:
        row["problems"] = marks["turns"].get(row["id"], [])
        row["problem_counts"] = list(Counter(m["label"] for m in row["problems"]).items())
    return {
        "task_problems": marks["task"],
        "task_problem_counts": list(Counter(m["label"] for m in marks["task"]).items()),
        "turn_kinds": [kind for kind in kinds if kind["level"] == "turn"] if curate else [],
        "task_kinds": [kind for kind in kinds if kind["level"] == "task"] if curate else [],
    }


# How often an open review page asks whether someone else changed the demo (one small query each time).
REVISION_POLL_SECONDS = 10
# How often it asks for thumbnails and suggestions while the worker is still making them (then it stops).
LIVE_POLL_SECONDS = 2


def revision_state(user, demo) -> dict:
    """The demo's current revision and status, and its latest edit: what an open review page polls to tell its
    reviewer that the demo changed elsewhere (another reviewer, or their own other tab)."""
    review = DemoReview.objects.filter(demonstration=demo).first()
    last = Edit.objects.filter(demonstration=demo).select_related("author", "turn").order_by("-revision").first()
    return {
        "revision": review.revision if review else 0,
        "status": demo.status,
        "last_edit": None
        if last is None
        else {
            "id": last.pk,
            "kind": edit_summary(last),
            "author": last.author.username,
            "by_you": last.author_id == user.pk,
            "at": last.created_at.isoformat(),
        },
    }


MAX_PENDING = 500


def live_state(demo, pending: list) -> dict:
    """What the open review page polls while the worker prepares the demo: which of its ``pending`` thumbnails
    are ready now, whether the screenshot suggestions are computed, and the quality issue count."""
    own = set(Turn.objects.filter(demonstration=demo).exclude(screenshot=None).values_list("screenshot_id", flat=True))
    own |= set(
        TurnCuration.objects.filter(demonstration=demo).exclude(screenshot="").values_list("screenshot", flat=True)
    )
    review = DemoReview.objects.filter(demonstration=demo).first()
    return {
        "ready": [sha for sha in dict.fromkeys(pending[:MAX_PENDING]) if sha in own and has_thumbnail(sha)],
        "realigned": bool(review and review.realigned),
        "issues": review.issue_count if review else None,
        "revision": review.revision if review else 0,
    }


TRANSITION_LABELS = {
    "start_review": "Start review",
    "validate": "Validate",
    "reject": "Reject",
    "return": "Return to annotator",
    "reopen": "Reopen",
}


def available_transitions(user, demo) -> list:
    """``[(action, label)]`` of the workflow buttons ``user`` may press now."""
    return [
        (action, TRANSITION_LABELS[action])
        for action, (sources, _) in actions.TRANSITIONS.items()
        if demo.status in sources
        and action != "resubmit"
        and not (action == "validate" and user.pk == demo.navigator_id)
    ]
