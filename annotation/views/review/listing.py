"""The review list: demonstrations to review, filtered and sorted, with counts per status and quality issues; read in a
constant number of queries whatever the number of demos."""

import datetime as dt
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Count, F, Func, IntegerField
from django.utils import timezone

from ...actions import EXPORT_ROLES, ValidationFailed
from ...actions import review as actions
from ...models import DemoStatus, ExportFormat, Project

LIST_PAGE_SIZE = 25


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
    if nul := [{"field": key, "message": "a NUL character is not text"} for key in FILTERS if "\x00" in filters[key]]:
        raise ValidationFailed("a filter holds a NUL character (PostgreSQL compares no NUL)", nul)
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
        "second_reviews": actions.pending_second_reviews(user).count(),
        # Bulk actions only for the roles that may use them: assign and return (reviewers, admins), export
        # (researchers, admins); an annotator gets neither, nor the selection boxes.
        "can_curate": Project.objects.for_user(user, actions.CURATE_ROLES).exists(),
        "can_export": Project.objects.for_user(user, EXPORT_ROLES).exists(),
    }


def live_counts(user, names) -> dict:
    """``{name: {"status", "issues"}}`` of these demos (those ``user`` may see): what the open list polls to show
    issue counts and statuses as the worker computes them."""
    demos = actions.reviewable_demos(user).filter(name__in=names[: LIST_PAGE_SIZE * 4])
    rows = demos.annotate(issue_count=JSONArrayLength("review__quality")).values_list("name", "status", "issue_count")
    labels = dict(DemoStatus.choices)
    return {
        name: {"status": status, "status_display": labels.get(status, status), "issues": issues}
        for name, status, issues in rows
    }
