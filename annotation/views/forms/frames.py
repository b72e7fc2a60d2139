"""The task frames: form-task pages served to the sandboxed iframe (or top-level, for agents), authorised by their
URL's token, never by the session; each response carries the sandboxing CSP (``forms.forms.frames``).

Thin: each checks its token, calls one action and renders ``forms.forms.render``. Refusals are small pages with
the right status (404 wrong token, 409 already ended, 410 expired, 403 when the worker may no longer work on the
batch, 400/413 bad body) that also tell the assignment page around them, so nothing is ever stored from a refused
request. The frame is authorised by its URL, so what the worker may do is asked again at every opening and
submission (``forms.do_end_without_access``, ``forms.do_submit``).
"""

import logging

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from ...actions import forms
from ...models import AssignmentStatus
from ..page_errors import refusal_kept

log = logging.getLogger(__name__)


def frame_response(page: str, status: int = 200, form_action: str | None = None) -> HttpResponse:
    headers = forms.frame_headers(form_action)
    return HttpResponse(page, status=status, content_type="text/html; charset=utf-8", headers=headers)


def refused(status: int, state: str, message: str) -> HttpResponse:
    return frame_response(forms.result_page(state, message), status=status)


@xframe_options_exempt  # framing is governed by the CSP's frame-ancestors
@require_GET
def preview_frame(request, task_id: int):
    """A task's preview (TurkingBench's ``/task/<id>/iframe/``): the template in ``mturk_form``, submit disabled."""
    with refusal_kept() as refusal:
        task = forms.check_preview_token(task_id, request.GET.get("token"))
    if refusal:
        return refused(404, "invalid", refusal.detail)
    return frame_response(forms.task_page(task.batch, task, action="#", mode="preview", sized=True))


@csrf_exempt  # authorised by the assignment's token (the frame's opaque origin sends no session cookie)
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
def work_frame(request, assignment_id: int, token: str):
    """GET: the task of an active assignment. POST: its submission (once)."""
    with refusal_kept() as refusal:
        assignment = forms.check_work_token(assignment_id, token)
    if refusal:
        return refused(404, "invalid", refusal.detail)
    if request.method == "POST":
        return submit(request, assignment)
    if assignment.status != AssignmentStatus.ACTIVE:
        if assignment.ended_reason:
            return refused(409, assignment.status, f"This task was taken back: {assignment.ended_reason}.")
        return refused(409, assignment.status, f"This assignment is {assignment.status}.")
    if timezone.now() >= assignment.expires_at:
        forms.do_expire(assignment.pk)
        return refused(410, "expired", "This assignment has expired.")
    reason = forms.do_end_without_access(assignment)
    if reason is not None:
        return refused(403, "refused", f"This task was taken back: {reason}. Nothing was stored.")
    action = forms.work_url(assignment)
    page = forms.task_page(assignment.task.batch, assignment.task, action=action, mode="work", sized=True)
    return frame_response(page, form_action=request.build_absolute_uri(action))


def submit(request, assignment) -> HttpResponse:
    try:
        answers = forms.answers_from_request(request)
    except RequestDataTooBig:
        return refused(413, "invalid", "The answers are too large; nothing was stored.")
    except SuspiciousOperation as error:  # e.g. more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS
        return refused(400, "invalid", f"The answers could not be read ({error}); nothing was stored.")
    with refusal_kept() as refusal:
        forms.check_answers(answers, assignment.task.batch.html_template)
        forms.do_submit(assignment.pk, answers)
    if isinstance(refusal.error, forms.AssignmentExpired):
        return refused(410, "expired", "This assignment expired before it was submitted; nothing was stored.")
    if refusal:
        return refused(refusal.status, "refused", refusal.detail)
    log.info("assignment %s of task %s submitted", assignment.pk, assignment.task_id)
    stop = forms.why_no_more(assignment.worker, assignment.task.batch)
    message = "Your answers were submitted."
    if stop is not None:  # e.g. this very submission blocked them: say so instead of a bare refusal of the next
        message = f"Your answers were submitted, but you can take no more tasks of this batch: {stop}."
    return frame_response(forms.result_page("submitted", message))


@xframe_options_exempt
@require_GET
def view_frame(request, assignment_id: int):
    """Submitted work, read-only: the task with the stored answers put back and every control disabled."""
    with refusal_kept() as refusal:
        assignment = forms.check_view_token(assignment_id, request.GET.get("token"))
    if refusal:
        return refused(404, "invalid", refusal.detail)
    if assignment.status != AssignmentStatus.SUBMITTED:
        return refused(409, assignment.status, f"This assignment is {assignment.status}; it has no answers.")
    task = assignment.task
    return frame_response(forms.task_page(task.batch, task, "#", "read_only", assignment.answers, sized=True))
