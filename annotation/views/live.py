"""Pages of the live session: the instructor's, the navigator's web fallback, joining by invitation, and the
session's screenshots. Thin: each calls ``annotation.actions.live`` and renders."""

from django.contrib.auth.decorators import login_required
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from ..actions import live
from ..actions.review import reviewable_demos
from ..store.blobstore import stream_file
from .page_errors import Refusal, refusal_kept, refusals_as_404

NO_SESSION = "no such live session among yours"


def session_page(view):
    """A page of a live session: signed in, and every refusal the 404 page (it never says whether a session exists)."""
    return login_required(refusals_as_404(NO_SESSION)(view))


def review_url(user, demo) -> str:
    """The demo's review page if ``user`` may open it once the recording has ended (shown when it has)."""
    readable = reviewable_demos(user).filter(pk=demo.pk).exists()
    return reverse("review-demo", args=[demo.name]) if readable else ""


def page_context(request, demo, role: str) -> dict:
    return {
        "demo": demo,
        "role": role,
        "review_url": review_url(request.user, demo),
        "sees_screen": live.sees_screen(demo, role),
        "ws_path": f"/ws/sessions/{demo.name}/",
        "screenshots": reverse("live-screenshot", args=[demo.name, "sha256"]).removesuffix("sha256"),
    }


@session_page
def instruct(request, name: str):
    """The instructor's page: chat, the navigator's latest screenshot and URL (unless no-vision), presence, end."""
    demo, role = live.check_session_access(request.user, name)
    if role == live.NAVIGATOR:
        return redirect("live-navigate", name=demo.name)
    return render(request, "live/instruct.html", page_context(request, demo, role))


@session_page
def navigate(request, name: str):
    """The navigator's web fallback (the side panel is the usual place): chat, presence, the invitation link."""
    demo, role = live.check_session_access(request.user, name)
    if role == live.INSTRUCTOR:
        return redirect("live-instruct", name=demo.name)
    invitation = live.do_issue_invitation(request.user, demo)
    invite = request.build_absolute_uri(reverse("live-join", args=[invitation.code])) if invitation else ""
    context = {**page_context(request, demo, role), "invitation": invitation, "invite_url": invite}
    return render(request, "live/navigate.html", context)


@login_required
@require_POST
@refusals_as_404(NO_SESSION)
def revoke_invitation(request, name: str):
    """Revoke the invitation link (it stops working at once) and show the navigator the new one."""
    demo, _ = live.check_session_access(request.user, name)
    with refusal_kept() as refusal:
        live.do_revoke_invitation(request.user, demo)
        return redirect("live-navigate", name=demo.name)
    return refused_join(request, refusal, demo)


def refused_join(request, refusal: Refusal, demo=None):
    """The join page saying why (the refusal's status)."""
    return render(request, "live/join.html", {"demo": demo, "error": refusal.detail}, status=refusal.status)


@login_required
@require_http_methods(["GET", "POST"])
def join(request, code: str):
    """An invitation: GET shows the demonstration and a button; POST makes the user its instructor and spends the
    invitation. Used, revoked and expired invitations get a page saying so (410); unknown codes 404."""
    with refusal_kept() as refusal:
        invitation = live.find_invitation(request.user, code)
        demo = invitation.demonstration
        role = live.session_role(demo, request.user)
        if role in (live.NAVIGATOR, live.INSTRUCTOR):  # following one's own link again is harmless
            return redirect("live-navigate" if role == live.NAVIGATOR else "live-instruct", name=demo.name)
        live.check_invite(request.user, code)
    if refusal:
        return refused_join(request, refusal)
    if request.method == "POST":
        with refusal_kept() as refusal:
            live.do_join_as_instructor(request.user, code)
            return redirect("live-instruct", name=demo.name)
        return refused_join(request, refusal, demo)
    context = {"demo": demo, "invitation": invitation}
    if demo.instructor_id is not None or not demo.is_recording:
        context["error"] = "This demonstration takes no instructor any more."
    return render(request, "live/join.html", context, status=409 if "error" in context else 200)


@login_required
@refusals_as_404("no such screenshot in this session")
def screenshot(request, name: str, sha256: str):
    """A screenshot of the session, for the instructor page; refused (404) under the no-vision rule."""
    blob = live.check_session_screenshot(request.user, name, sha256)
    response = StreamingHttpResponse(stream_file(blob.file.storage, blob.file.name), content_type=blob.media_type)
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Content-Type-Options"] = "nosniff"
    return response
