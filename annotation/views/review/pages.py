"""The review pages and their small JSON write endpoint (session auth + CSRF). Thin: they call
``annotation.actions.review`` and render what ``listing`` (the list) and ``demo_page`` (one demo's page) read."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from ...actions import Conflict, Forbidden, MalformedJSON, ValidationFailed, check_blob_readable, live
from ...actions import review as actions
from ...actions.exports import replays
from ...actions.exports.jobs import do_bulk_export
from ...lib import jsonsafe
from ...models import DemoMode
from ...store.blobstore import has_thumbnail, read_blob, thumbnail_path
from ..page_errors import action_errors, json_action_errors, refusal_kept, refusals_as_messages
from . import demo_page, listing

# op → function(user, demo, revision, body) -> Edit | Comment
OPS = {
    "delete": lambda u, d, r, b: actions.do_delete_turn(u, d, r, b.get("turn")),
    "restore": lambda u, d, r, b: actions.do_restore_turn(u, d, r, b.get("turn")),
    "move": lambda u, d, r, b: actions.do_move_turn(u, d, r, b.get("turn"), b.get("to_index")),
    "edit_text": lambda u, d, r, b: actions.do_edit_text(u, d, r, b.get("turn"), b.get("text")),
    "set_validity": lambda u, d, r, b: actions.do_set_validity(u, d, r, b.get("turn"), b.get("valid")),
    "retarget": lambda u, d, r, b: actions.do_retarget(u, d, r, b.get("turn"), b.get("element")),
    "choose_screenshot": lambda u, d, r, b: actions.do_choose_screenshot(u, d, r, b.get("turn"), b.get("screenshot")),
    "accept_suggestions": lambda u, d, r, b: actions.do_accept_suggestions(u, d, r),
    "edit_metadata": lambda u, d, r, b: actions.do_edit_metadata(u, d, r, b.get("fields")),
    "undo": lambda u, d, r, b: actions.do_undo(u, d, r, b.get("edit")),
    "transition": lambda u, d, r, b: actions.do_transition(u, d, r, b.get("action"), b.get("comment") or ""),
    "set_unsure": lambda u, d, r, b: actions.do_set_unsure(u, d, r, b.get("unsure")),
    "comment": lambda u, d, r, b: actions.do_comment(u, d, r, b.get("text"), b.get("turn")),
}


# What a workflow step confirms on the next page.
DONE = {
    "validate": "Validated {name}: it goes to the exports.",
    "reject": "Rejected {name}: it is left out of the exports.",
    "return": "Returned {name} to its annotator.",
    "start_review": "Started the review of {name}.",
    "reopen": "Reopened {name} for review.",
    "resubmit": "Resubmitted {name} for review.",
}


@login_required
@require_GET
def review_list(request):
    """Demonstrations to review, filtered and sorted, with counts per status and quality issues."""
    with refusal_kept(ValidationFailed) as refusal:
        return render(request, "review/list.html", listing.list_context(request.user, request.GET))
    return render(request, "review/list.html", {"bulk_error": refusal.detail, "page": []}, status=refusal.status)


@login_required
@require_GET
def review_list_live(request):
    """``GET ?names=a,b``: status and quality issue count of these demos, polled by the open list."""
    names = [name for name in request.GET.get("names", "").split(",") if name]
    return no_store(JsonResponse({"demos": listing.live_counts(request.user, names)}))


@login_required
@require_POST
def review_next(request):
    """ "Review next": a second review waiting for the reviewer first (docs/quality.md), else claim the next demo
    waiting for review and open it; back to the list when none is left."""
    second = actions.next_second_review(request.user)
    if second is not None:
        return redirect("quality-second-review", second.demonstration.name)
    demo = actions.do_claim_next(request.user)
    if demo is None:
        messages.info(request, "Nothing left to review for you now: every waiting demo is held, assigned or yours.")
        return redirect("review-list")
    return redirect("review-demo", demo.name)


BULK = {
    "assign": lambda user, post: actions.do_assign(user, post.getlist("names"), post.get("assignee", "").strip()),
    "return": lambda user, post: actions.do_bulk_return(user, post.getlist("names"), post.get("comment", "").strip()),
    "export": lambda user, post: do_bulk_export(user, post.getlist("names"), post.get("format", "weblinx")),
}


@login_required
@require_POST
def review_bulk(request):
    """The list's bulk actions on the selected demos: ``assign`` (to ``assignee``, blank = nobody), ``return``
    (with ``comment``) or ``export`` (in ``format``: one export job per project, then its progress page).
    Refused as a whole (4xx, the list again with the reason) when any demo may not be."""
    action = request.POST.get("action")
    with refusal_kept() as refusal:
        if action not in BULK:
            raise ValidationFailed(f"unknown action {action!r}", [{"field": "action", "message": ", ".join(BULK)}])
        result = BULK[action](request.user, request.POST)
    if refusal:
        context = listing.list_context(request.user, request.GET)
        return render(request, "review/list.html", {**context, "bulk_error": refusal.detail}, status=refusal.status)
    if action == "export":
        return exports_started(request, result)
    done = "assigned" if action == "assign" else "returned to their annotators"
    messages.success(request, f"{result} demonstration{'' if result == 1 else 's'} {done}.")
    return redirect(reverse("review-list") + (f"?{request.GET.urlencode()}" if request.GET else ""))


def exports_started(request, jobs):
    """After "Export selection": the export's progress page, or with several projects their exports pages."""
    if len(jobs) == 1:
        return redirect("exports-export", name=jobs[0].project.name, job_id=jobs[0].pk)
    started = ", ".join(f"{job.project.name} (export {job.pk}, {len(job.demos)} demos)" for job in jobs)
    messages.success(request, f"Exports started, one per project: {started}. Follow them under each project's Exports.")
    return redirect(reverse("review-list") + (f"?{request.GET.urlencode()}" if request.GET else ""))


@login_required
@require_GET
@action_errors
def review_demo(request, name):
    """The review page of one demonstration."""
    demo = actions.check_demo_reviewable(request.user, name)
    context = demo_page.page_context(request.user, demo, read_blob)
    extra = {"session_url": session_url(request.user, demo), "replay": replays.replay_offer(request.user, demo)}
    return render(request, "review/demo.html", {**context, **extra})


@login_required
@require_POST
@action_errors
def review_replay(request, name):
    """The "Replay offline" button: queue a replay of the task from its HAR (docs/mind2web.md#replay)."""
    demo = actions.check_demo_reviewable(request.user, name)
    with refusals_as_messages(request, Conflict):  # no traffic: said on the page; others: the 403/404 pages
        replays.do_request_replay(request.user, demo.project.name, {"task": replays.task_id(demo)})
        messages.success(request, "Replay queued: its result shows here when the worker is done.")
    return redirect("review-demo", name=demo.name)


def session_url(user, demo) -> str:
    """The live session page of a chat-mode demo (its chat history) if ``user`` has a place in that session."""
    role = live.session_role(demo, user) if demo.mode == DemoMode.CHAT else None
    if role is None:
        return ""
    return reverse("live-navigate" if role == live.NAVIGATOR else "live-instruct", args=[demo.name])


def parse_body(request) -> dict:
    try:
        body = jsonsafe.loads(request.body or b"{}")
    except jsonsafe.JSONProblem as problem:
        raise MalformedJSON.of(problem) from None
    if not isinstance(body, dict) or body.get("op") not in OPS:
        raise ValidationFailed("expected a JSON object with an op", [{"field": "op", "message": ", ".join(OPS)}])
    if (where := jsonsafe.nul_path(body)) is not None:  # PostgreSQL stores no NUL (a comment, metadata, a text)
        raise ValidationFailed(
            f"{where}: a NUL character is not text", [{"field": where, "message": "a NUL character is not text"}]
        )
    return body


@login_required
@require_POST
@json_action_errors
def review_edit(request, name):
    """``POST {op, revision, ...}``: one curation or workflow operation; answers the new revision (409 when stale)."""
    demo = actions.check_demo_reviewable(request.user, name)
    body = parse_body(request)
    result = OPS[body["op"]](request.user, demo, body.get("revision"), body)
    if body["op"] == "transition" and body.get("action") in DONE:
        # the confirmation, shown on the page that opens next (the next demo to review, the list, or this one)
        messages.success(request, DONE[body["action"]].format(name=demo.name))
    return JsonResponse({"revision": actions.review_of(demo).revision, "id": result.pk, "status": demo.status})


@login_required
@require_GET
@json_action_errors
def review_revision(request, name):
    """``GET``: the demo's revision, status and latest edit; the open review page polls it and offers a reload
    when someone else changed the demo."""
    demo = actions.check_demo_reviewable(request.user, name)
    return no_store(JsonResponse(demo_page.revision_state(request.user, demo)))


@login_required
@require_GET
@json_action_errors
def review_live(request, name):
    """``GET ?pending=sha,sha``: which of these thumbnails are ready, whether the suggestions are computed, the
    issue count; the open review page polls it while the worker prepares the demo."""
    demo = actions.check_demo_reviewable(request.user, name)
    pending = [sha for sha in request.GET.get("pending", "").split(",") if sha]
    return no_store(JsonResponse(demo_page.live_state(demo, pending)))


def no_store(response):
    response["Cache-Control"] = "no-store"
    return response


PAGE_CSP = (
    "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'self'"
)


@login_required
@require_GET
@xframe_options_sameorigin  # framed by our review page only
@action_errors
def review_turn_page(request, name, turn_id):
    """The turn's recorded page HTML, inline for a sandboxed iframe: hostile content, so no scripts, a unique
    opaque origin (CSP ``sandbox``) and nothing loaded from anywhere."""
    demo = actions.check_demo_reviewable(request.user, name)
    turn = demo.turns.filter(pk=turn_id).select_related("page").first()
    if turn is None or turn.page is None:
        raise Http404("this turn has no recorded page")
    with turn.page.file.storage.open(turn.page.file.name, "rb") as handle:
        response = HttpResponse(handle.read(), content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = PAGE_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
@require_GET
@json_action_errors
def review_turn_elements(request, name, turn_id):
    """``GET``: the turn's page elements (uid, tag, text, box) for the "Change target" picker; curators only."""
    demo = actions.check_demo_reviewable(request.user, name)
    if not actions.can_curate(request.user, demo):
        raise Forbidden("only the project's reviewers and admins can change a turn's target")
    return no_store(JsonResponse(actions.turn_elements(demo, turn_id)))


# Shown at about a third of its size in the timeline: the text is large enough to stay readable there.
PLACEHOLDER = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="180"><rect width="100%" height="100%" '
    'fill="#e5e7eb"/><text x="50%" text-anchor="middle" fill="#4b5563" font-family="sans-serif" font-size="38">'
    '<tspan x="50%" y="82">thumbnail</tspan><tspan x="50%" y="128">pending</tspan></text></svg>'
)


@login_required
@require_GET
@action_errors
def review_thumbnail(request, sha256):
    """A screenshot's thumbnail once the worker made it, a placeholder until then."""
    check_blob_readable(request.user, sha256)
    if not has_thumbnail(sha256):
        response = HttpResponse(PLACEHOLDER, content_type="image/svg+xml")
        response["Cache-Control"] = "no-store"
        response["X-Thumbnail"] = "pending"
        return response
    with default_storage.open(thumbnail_path(sha256), "rb") as handle:
        response = HttpResponse(handle.read(), content_type="image/webp")
    response["Cache-Control"] = "private, max-age=86400, immutable"
    return response
