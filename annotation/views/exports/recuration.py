"""A project's re-curation page (docs/recuration.md): the demos imported from a release, original against corrected,
counted by status, change and problem kind, and one item turn by turn. Thin: ``annotation.actions.exports.recuration``
computes what ``changes.json`` says, for the page as for the export."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from ...actions.exports import recuration
from ...lib.readable import number
from ..page_errors import action_errors

PAGE_ITEMS = 50


def page_context(request, project, has_imports: bool) -> dict:
    role = project.role_of(request.user)
    return {"project": project, "project_role": role, "tab": "quality", "has_imports": has_imports}


@require_GET
@login_required
@action_errors
def recuration_page(request, name: str):
    """Counts over every imported item, then the items (filtered by ``status`` and ``problem``), 50 a page."""
    project = recuration.check_project_for_recuration(request.user, name)
    data = recuration.recuration_of(project, request.GET.get("status"), request.GET.get("problem"))
    page = Paginator(data["items"], PAGE_ITEMS).get_page(request.GET.get("page"))
    filters = {key: value for key, value in data["filters"].items() if value}
    context = page_context(request, project, bool(data["counts"]["items"]))
    context.update(
        data=data,
        page=page,
        filters=filters,
        filter_query=urlencode(filters),
        statuses=recuration.STATUSES,
        changes=[(kind, recuration.CHANGE_LABELS[kind], n) for kind, n in data["counts"]["changes"].items()],
    )
    return render(request, "exports/recuration.html", context)


@require_GET
@login_required
@action_errors
def recuration_item(request, name: str, release_id: str):
    """One imported item: each turn of the release beside its curated state, task field changes, problem marks."""
    project = recuration.check_project_for_recuration(request.user, name)
    data = recuration.item_of(request.user, project, release_id)
    task = [
        {**change, "was": number(change["from"]), "now": number(change["to"])} for change in data["changes"]["task"]
    ]
    context = page_context(request, project, True)
    task_problems = [mark for mark in data["changes"]["problems"] if mark["turn"] is None]
    context.update(data=data, task=task, task_problems=task_problems)
    return render(request, "exports/recuration_item.html", context)
