"""The review page's problem marks (a form per turn and one for the task) and the project's problem kinds (a form on
the project's settings page): CSRF-protected posts that go back to the page. Thin: ``annotation.actions.review``."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ...actions import Conflict, ValidationFailed
from ...actions import review as actions
from ..page_errors import action_errors, refusals_as_messages


@login_required
@require_POST
@action_errors
def review_problems(request, name):
    """``op=mark`` (``kind``, ``turn``?, ``note``?) or ``op=unmark`` (``mark``): back to the demo's page at the turn."""
    demo = actions.check_can_mark(request.user, name)
    post = request.POST
    turn = post.get("turn", "").strip()
    turn_id = int(turn) if turn.isascii() and turn.isdigit() else (turn or None)  # "²" is a digit int() refuses
    with refusals_as_messages(request, ValidationFailed, Conflict):
        if post.get("op") == "unmark":
            mark = actions.do_unmark(request.user, demo, post.get("mark", ""))
            messages.success(request, f"Unmarked {mark.kind}.")
        else:
            mark, _ = actions.do_mark(request.user, demo, post.get("kind"), turn_id, post.get("note", ""))
            messages.success(request, f"Marked {mark.kind}.")
    anchor = f"#t{turn_id}" if isinstance(turn_id, int) else "#problems"
    return redirect(reverse("review-demo", args=[demo.name]) + anchor)


@login_required
@require_POST
@action_errors
def review_problem_kinds(request, name):
    """The settings page's problem kinds (``kinds``: one ``key | level | label`` a line; project admins)."""
    project = actions.check_project_kinds_admin(request.user, name)
    with refusals_as_messages(request, ValidationFailed, Conflict):
        kinds = actions.do_set_kinds(project, actions.kinds_from_text(request.POST.get("kinds", "")))
        messages.success(request, f"Problem kinds saved ({len(kinds)}).")
    return redirect(reverse("manage-settings", args=[project.name]) + "#problem-kinds")
