"""What the review pages show, read in a constant number of queries whatever the number of turns."""

import datetime as dt
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Count, F, Func, IntegerField
from django.urls import reverse
from django.utils import timezone

from annotation.actions import ValidationFailed
from annotation.actions import review as actions
from annotation.lib import shapes
from annotation.lib.quality import order_issues
from annotation.models import (
    Comment,
    DemoReview,
    DemoStatus,
    Edit,
    EditKind,
    ExportFormat,
    Project,
    Turn,
    TurnCuration,
    TurnType,
    curated_turns,
)
from annotation.store.blobstore import has_thumbnail

LIST_PAGE_SIZE = 25
HISTORY_SIZE = 100


# --- The list -------------------------------------------------------------------------------------------


def parse_date(value: str):
    try:
        return dt.date.fromisoformat(value) if value else None
    except ValueError:
        return None


FILTERS = ("project", "status", "website", "category", "annotator", "assignee", "q", "since", "until")
FILTER_LOOKUPS = {
    "project": "project__name",
    "website": "websites__icontains",
    "category": "category",
    "annotator": "navigator__username",
    "assignee": "review__assignee__username",
    "q": "task_description__icontains",
}
# ?sort=<column> (ascending) or -<column>; every column of the list sorts.
SORTS = {
    "name": "name",
    "project": "project__name",
    "status": "status",
    "task": "task_description",
    "websites": "websites",
    "category": "category",
    "annotator": "navigator__username",
    "assignee": "review__assignee__username",
    "turns": "turn_count",
    "issues": "issue_count",
    "recorded": "recording_start",
}
DEFAULT_SORT = "-recorded"


class JSONArrayLength(Func):
    """The length of a JSON array column (NULL for NULL): PostgreSQL's ``jsonb_array_length``, SQLite's
    ``json_array_length``."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="json_array_length", **extra)


def filtered_demos(user, params) -> tuple:
    """``(queryset without the status filter, queryset with it, cleaned filters)``."""
    demos = actions.reviewable_demos(user).exclude(status=DemoStatus.RECORDING)
    filters = {key: (params.get(key) or "").strip() for key in FILTERS}
    for key, lookup in FILTER_LOOKUPS.items():
        if filters[key]:
            demos = demos.filter(**{lookup: filters[key]})
    if since := parse_date(filters["since"]):
        demos = demos.filter(recording_start__date__gte=since)
    if until := parse_date(filters["until"]):
        demos = demos.filter(recording_start__date__lte=until)
    with_status = demos.filter(status=filters["status"]) if filters["status"] else demos
    return demos, with_status, filters


def check_sort(value: str) -> str:
    """``?sort=``: a column of the list, ``-`` first for descending; anything else is refused naming the field."""
    value = value or DEFAULT_SORT
    if value.removeprefix("-") not in SORTS:
        raise ValidationFailed(
            f"cannot sort by {value!r}", [{"field": "sort", "message": f"expected one of: {', '.join(SORTS)}"}]
        )
    return value


def sorted_rows(rows, sort: str):
    column = SORTS[sort.removeprefix("-")]
    key = F(column).desc(nulls_last=True) if sort.startswith("-") else F(column).asc(nulls_last=True)
    return rows.order_by(key, "-pk" if sort.startswith("-") else "pk")


COLUMN_LABELS = {
    "name": "Demo",
    "project": "Project",
    "status": "Status",
    "task": "Task",
    "websites": "Websites",
    "category": "Category",
    "annotator": "Annotator",
    "assignee": "Assignee",
    "turns": "Turns",
    "issues": "Issues",
    "recorded": "Recorded",
}


def sort_columns(sort: str) -> list:
    """The list's headers: per column its label, the ``sort`` value its link asks for (the other direction when
    it is the current one) and its ``aria-sort`` (``ascending`` / ``descending`` / ``None``)."""
    descending = sort.startswith("-")
    columns = []
    for key, label in COLUMN_LABELS.items():
        current = sort.removeprefix("-") == key
        columns.append(
            {
                "key": key,
                "label": label,
                "value": (key if descending else f"-{key}") if current else key,
                "direction": ("descending" if descending else "ascending") if current else None,
            }
        )
    return columns


def assignee_choices(user):
    """The people demos can be assigned to: reviewers and admins of the projects ``user`` curates in."""
    projects = Project.objects.for_user(user, actions.CURATE_ROLES)
    return (
        get_user_model()
        .objects.filter(memberships__project__in=projects, memberships__role__in=actions.CURATE_ROLES)
        .distinct()
        .order_by("username")
        .values_list("username", flat=True)
    )


def list_context(user, params) -> dict:
    sort = check_sort((params.get("sort") or "").strip())
    demos, with_status, filters = filtered_demos(user, params)
    counts = dict(demos.order_by().values_list("status").annotate(n=Count("pk")))
    related = ("project", "navigator", "review", "review__assignee", "review__claimed_by")
    rows = with_status.select_related(*related).annotate(
        turn_count=Count("turns"), issue_count=JSONArrayLength("review__quality")
    )
    page = Paginator(sorted_rows(rows, sort), LIST_PAGE_SIZE).get_page(params.get("page"))
    kept = {key: value for key, value in filters.items() if value}
    projects = list(actions.reviewable_projects(user))
    with_sort = {**kept, **({"sort": sort} if sort != DEFAULT_SORT else {})}
    return {
        "page": page,
        "filters": filters,
        "sort": sort,
        "columns": sort_columns(sort),
        "now": timezone.now(),
        "assignees": assignee_choices(user),
        "query": urlencode(with_sort),
        "query_without_sort": urlencode(kept),
        "query_without_status": urlencode({key: value for key, value in with_sort.items() if key != "status"}),
        "filtered": any(filters.values()),
        "status_counts": [
            (value, label, counts.get(value, 0)) for value, label in DemoStatus.choices if value != DemoStatus.RECORDING
        ],
        "projects": projects,
        "export_formats": [(ExportFormat.WEBLINX, "WebLINX"), (ExportFormat.MIND2WEB, "Mind2Web")],
        "categories": sorted({value for project in projects for value in project.category_choices or []}),
        "queue_size": actions.queue_for(user).count() if user.is_authenticated else 0,
    }


def live_counts(user, names) -> dict:
    """``{name: {"status", "issues"}}`` of these demos (those ``user`` may see): what the open list polls to show
    issue counts and statuses as the worker computes them."""
    demos = actions.reviewable_demos(user).filter(name__in=names[: LIST_PAGE_SIZE * 4])
    rows = demos.annotate(issue_count=JSONArrayLength("review__quality")).values_list("name", "status", "issue_count")
    return {name: {"status": status, "issues": issues} for name, status, issues in rows}


# --- The review page ------------------------------------------------------------------------------------


def element_text(turn) -> str:
    return " ".join(shapes.as_text(shapes.element_of(turn.arguments).get("textContent")).split())[:120]


def shorten(text: str, length: int) -> str:
    """Like the ``truncatechars`` filter, without its per-call cost (hundreds of turns per page)."""
    return text if len(text) <= length else text[: length - 1] + "…"


def turn_text(turn, curation) -> str:
    """The curated text: a chat utterance, or the typed text of a textInput."""
    if curation is not None and curation.text is not None:
        return curation.text
    return turn.utterance if turn.type == TurnType.CHAT else shapes.as_text(shapes.as_dict(turn.arguments).get("text"))


def turn_row(index, turn, curation, issues, comments) -> dict:
    """Everything the page shows about one turn (also sent to the script as JSON)."""
    chosen = (curation.screenshot if curation else "") or turn.screenshot_id or ""
    element = shapes.element_of(turn.arguments)
    tag = shapes.as_text(element.get("tagName"))
    return {
        "id": turn.pk,
        "index": index,
        "seq": turn.seq,
        "type": turn.type,
        "speaker": turn.speaker,
        "intent": turn.intent,
        "text": turn_text(turn, curation),
        "text_editable": turn.type == TurnType.CHAT or turn.intent == "textInput",
        "element": element_text(turn),
        "element_label": f"{tag.lower()} “{shorten(element_text(turn), 60)}”",
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


STATUS_WORDS = {
    "start_review": "Started review",
    "validate": "Validated",
    "reject": "Rejected",
    "return": "Returned to the annotator",
    "reopen": "Reopened",
    "resubmit": "Resubmitted",
}


def turn_name(edit) -> str:
    return f"turn {edit.turn.seq}" if edit.turn_id else "a turn"


def first_state(edit) -> dict:
    """The after-state of a one-turn edit: ``{field: value}``."""
    return next(iter(edit.after.values()), {}) if edit.after else {}


def moved_words(edit) -> str:
    before, after = edit.before.get("order", []), edit.after.get("order", [])
    if edit.turn_id in before and edit.turn_id in after:
        return f"Moved {turn_name(edit)} from position {before.index(edit.turn_id)} to {after.index(edit.turn_id)}"
    return f"Moved {turn_name(edit)}"


def screenshot_words(edit) -> str:
    if first_state(edit).get("screenshot"):
        return f"Chose another screenshot for {turn_name(edit)}"
    return f"Went back to the captured screenshot of {turn_name(edit)}"


def suggestion_words(edit) -> str:
    count = len(edit.after)
    turns = f"{count} turn{pluralize(count)}"
    return f"Put back the screenshots of {turns}" if edit.undoes_id else f"Accepted the suggested screenshot of {turns}"


def status_words(edit) -> str:
    if edit.after.get("action") in STATUS_WORDS:
        return STATUS_WORDS[edit.after["action"]]
    status = edit.after.get("status")
    return f"Status set to {DemoStatus(status).label.lower()}" if status in DemoStatus.values else "Changed the status"


def comment_words(edit) -> str:
    where = f" on {turn_name(edit)}" if edit.turn_id else ""
    return f"Commented{where} “{shorten(edit.after.get('text', ''), 40)}”"


def pluralize(count: int) -> str:
    return "" if count == 1 else "s"


# Each edit kind in words, from its after-state: an undo is an edit of the same kind back to the before-state,
# so undoing "Deleted turn 8" reads "Restored turn 8 (undid #1)".
def deletion_words(edit) -> str:
    return f"{'Deleted' if first_state(edit).get('deleted') else 'Restored'} {turn_name(edit)}"


EDIT_WORDS = {
    EditKind.DELETE: deletion_words,
    EditKind.RESTORE: deletion_words,
    EditKind.SET_VALIDITY: lambda e: f"Marked {turn_name(e)} {'valid' if first_state(e).get('valid') else 'invalid'}",
    EditKind.EDIT_TEXT: lambda e: f"Edited the text of {turn_name(e)}",
    EditKind.CHOOSE_SCREENSHOT: screenshot_words,
    EditKind.ACCEPT_SUGGESTIONS: suggestion_words,
    EditKind.REORDER: moved_words,
    EditKind.EDIT_METADATA: lambda e: "Edited the " + ", ".join(name.replace("_", " ") for name in e.after),
    EditKind.SET_STATUS: status_words,
    EditKind.SET_UNSURE: lambda e: "Marked the demo unsure" if e.after.get("unsure_by") else "Cleared the unsure mark",
    EditKind.COMMENT: comment_words,
}


def edit_summary(edit) -> str:
    """What an edit did, in words: "Deleted turn 8", "Restored turn 8 (undid #1)", "Marked turn 12 invalid",
    "Moved turn 9 from position 3 to 5" (positions as the timeline numbers them)."""
    words = EDIT_WORDS[edit.kind](edit) if edit.kind in EDIT_WORDS else edit.get_kind_display()
    return words + (f" (undid #{edit.undoes_id})" if edit.undoes_id else "")


def curated_value(demo, order: list, curations: dict):
    """``value_of(key)`` for ``actions.changed_since``, from what the page already read (no query per edit)."""

    def value_of(key):
        if key[0] == "order":
            return order
        if key[0] == "meta":
            return getattr(demo, key[1])
        curation = curations.get(int(key[1]))
        return getattr(curation, key[2]) if curation else actions.TURN_DEFAULTS[key[2]]

    return value_of


def blocked_by(edits: list, index: int, value_of):
    """The id of the later edit that keeps ``edits[index]`` (newest first) from being undone, if any."""
    changed = actions.changed_since(edits[index], value_of)
    if not changed:
        return None
    culprit = actions.blocking_edit(changed, edits[:index])
    return culprit.pk if culprit else "?"


def undo_button(edit, undoes: dict) -> dict:
    """The history button of ``edit``: "Undo" for an edit, "Redo" for an undo (undoing it re-applies the
    original edit), "Undo" again for an undo of that, and so on down the chain."""
    original, depth = edit.pk, 0
    while original in undoes:
        original, depth = undoes[original], depth + 1
    kind = edit.get_kind_display().lower()
    if depth % 2:
        return {"text": "Redo", "label": f"Redo edit #{original} ({kind})"}
    again = " again" if depth else ""
    return {"text": "Undo", "label": f"Undo edit #{original}{again} ({kind})"}


def history(demo, value_of) -> list:
    edits = list(Edit.objects.filter(demonstration=demo).select_related("author", "turn")[:HISTORY_SIZE])
    undoes = dict(Edit.objects.filter(demonstration=demo, undoes__isnull=False).values_list("pk", "undoes_id"))
    undone = set(undoes.values())
    # An undo is itself undoable (a redo of the edit it undid), as long as nothing changed the same thing since.
    undoable = {edit.pk for edit in edits if edit.kind in actions.UNDOABLE and edit.pk not in undone}
    return [
        {
            "id": edit.pk,
            "kind": edit_summary(edit),
            "author": edit.author.username,
            "at": edit.created_at,
            "turn": edit.turn.seq if edit.turn else None,
            "undo_of": edit.undoes_id,
            "undoable": edit.pk in undoable,
            "button": undo_button(edit, undoes),
            "blocked_by": blocked_by(edits, index, value_of) if edit.pk in undoable else None,
            "undone": edit.pk in undone,
            "after": edit.after,
        }
        for index, edit in enumerate(edits)
    ]


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
    quality = actions.ensure_quality(demo, review, turns, read) + order_issues([t for t, _ in ordered], deleted)
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
    curate = actions.can_curate(user, demo)
    return {
        "demo": demo,
        "review": review,
        "held": bool(review.claimed_by_id and review.claimed_until and review.claimed_until > timezone.now()),
        "turns": rows,
        "quality": quality,
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
            "editable": curate and demo.status in actions.EDITABLE_STATUSES,
            "revisionUrl": reverse("review-revision", args=[demo.name]),
            "pollSeconds": REVISION_POLL_SECONDS,
            "liveUrl": reverse("review-live", args=[demo.name]),
            "livePollSeconds": LIVE_POLL_SECONDS,
            "realigned": review.realigned,
        },
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
