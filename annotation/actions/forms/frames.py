"""The task frames' security: the capability URLs that authorise them and the CSP they are served with.

Templates are third-party HTML whose scripts must run, so a task page never runs with the app's origin: it is
served with ``Content-Security-Policy: sandbox allow-scripts allow-forms ...`` (no ``allow-same-origin``), which
gives it a unique opaque origin even when opened top-level; the app pages embed it in an ``<iframe sandbox>`` with
the same flags. From there it cannot read the app's cookies or storage, nor call the API as the worker (no session
cookie goes with its requests: the cookie is SameSite=Lax and the frame is cross-site; ``connect-src 'none'``).

So the frames are authorised by URLs, not by the session:

- **work** ``/forms/assignments/<id>/<token>/``: ``token`` is the assignment's HMAC (``Assignment.token``); GET shows
  the task, POST submits it, once (a replay is 409, after expiry 410, a wrong token 404);
- **preview** ``/forms/tasks/<id>/iframe/?token=…``: a signed, expiring token for one task that the app pages and
  the agent harness mint (``preview_token``); the page is Turkle's preview iframe (submit disabled);
- **read-only** ``/forms/assignments/<id>/view/?token=…``: a signed, expiring token for one submitted assignment.
"""

from urllib.parse import urlencode

from django.conf import settings
from django.core import signing
from django.urls import reverse

from ...models import Assignment, BatchKind, Task
from ..errors import NotFound

PREVIEW_SALT = "form-task-preview"
VIEW_SALT = "form-assignment-view"
VIEW_MAX_AGE = 12 * 3600
SANDBOX = "allow-scripts allow-forms allow-popups allow-modals"  # never allow-same-origin
NOT_AVAILABLE = "ASSIGNMENT_ID_NOT_AVAILABLE"  # MTurk's assignmentId in a preview


def form_assignments():
    """Only form batches have task frames: a Mind2Web round or demonstration is never shown or submitted as a form."""
    return Assignment.objects.filter(task__batch__kind=BatchKind.FORM)


def preview_token(task: Task) -> str:
    """A token that lets anyone holding it load this task's preview until it expires."""
    return signing.dumps(task.pk, salt=PREVIEW_SALT)


def check_preview_token(task_id: int, token: str, max_age=None) -> Task:
    max_age = settings.FORM_PREVIEW_TOKEN_MAX_AGE_SECONDS if max_age is None else max_age
    try:
        signed = signing.loads(token or "", salt=PREVIEW_SALT, max_age=max_age)
    except signing.BadSignature:  # also SignatureExpired
        signed = None
    forms = Task.objects.select_related("batch").filter(batch__kind=BatchKind.FORM)
    task = forms.filter(pk=task_id).first() if signed == task_id else None
    if task is None:
        raise NotFound("this preview link is wrong or has expired")
    return task


def preview_url(task: Task, token: str | None = None) -> str:
    """The preview's URL (relative), with MTurk's preview parameters for templates that read them."""
    query = {"token": token or preview_token(task), "assignmentId": NOT_AVAILABLE, "hitId": task.pk}
    return f"{reverse('forms-preview-frame', args=[task.pk])}?{urlencode(query)}"


def work_url(assignment: Assignment) -> str:
    """The task frame of an assignment; its path is also where the form posts."""
    return reverse("forms-work-frame", args=[assignment.pk, assignment.token])


def work_frame_url(assignment: Assignment) -> str:
    query = {"assignmentId": assignment.pk, "hitId": assignment.task_id, "workerId": assignment.worker_id}
    return f"{work_url(assignment)}?{urlencode(query)}"


def check_work_token(assignment_id: int, token: str) -> Assignment:
    assignment = (
        form_assignments().select_related("task__batch", "worker").filter(pk=assignment_id).first()
        if isinstance(assignment_id, int)
        else None
    )
    if assignment is None or not assignment.token_matches(token):
        raise NotFound("this task link is wrong")
    return assignment


def view_url(assignment: Assignment) -> str:
    token = signing.dumps(assignment.pk, salt=VIEW_SALT)
    return f"{reverse('forms-view-frame', args=[assignment.pk])}?{urlencode({'token': token})}"


def check_view_token(assignment_id: int, token: str) -> Assignment:
    try:
        signed = signing.loads(token or "", salt=VIEW_SALT, max_age=VIEW_MAX_AGE)
    except signing.BadSignature:
        signed = None
    assignment = (
        form_assignments().select_related("task__batch").filter(pk=assignment_id).first()
        if signed == assignment_id
        else None
    )
    if assignment is None:
        raise NotFound("this link is wrong or has expired")
    return assignment


def frame_csp(form_action: str | None) -> str:
    """The frame's policy: sandboxed (opaque origin), scripts and styles inline or from the page's own server (the
    vendored template libraries under ``/static/vendor/``: every URL of ``agents.vendor.URL_MAP`` is served there),
    plus ``FORM_TASK_ASSET_SOURCES`` when set (nothing by default), no network access from scripts, posting only to
    ``form_action`` (an absolute URL; None: nowhere)."""
    assets = ["'self'", *settings.FORM_TASK_ASSET_SOURCES.split()]

    def sources(*base):
        return " ".join([*base, *assets]) or "'none'"

    return "; ".join(
        [
            f"sandbox {SANDBOX}",
            "default-src 'none'",
            "script-src " + sources("'unsafe-inline'", "'unsafe-eval'"),
            "style-src " + sources("'unsafe-inline'"),
            "img-src " + sources("data:", "blob:"),
            "font-src " + sources("data:"),
            "media-src " + sources("data:", "blob:"),
            "frame-src " + sources(),
            "connect-src 'none'",
            "form-action " + (form_action or "'none'"),
            "base-uri 'none'",
            "frame-ancestors 'self'",
        ]
    )


def frame_headers(form_action: str | None = None) -> dict[str, str]:
    """Every header a task page is served with, wherever it is served: the web app's frames
    (``views/forms/frames.py``) and the loopback server of agent runs (``workers.agents.runs``), so a template's
    scripts are as confined in an agent's browser as in a worker's."""
    return {
        "Content-Security-Policy": frame_csp(form_action),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Robots-Tag": "noindex",
    }


def app_page_csp() -> str:
    """The policy of the app pages that embed task frames: our own scripts and styles only, frames of our origin."""
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "frame-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
    )
