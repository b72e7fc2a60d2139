"""Action errors on the app's pages, mapped in one place (``api/errors.py`` does the same for the API).

- ``action_errors``: a page view calls the actions and lets their refusals out: ``NotFound`` becomes the 404 page and
  ``Forbidden`` the 403 page (``handler404`` / ``handler403``), any other refusal (a conflict 409, invalid input 400,
  gone 410, ...) the same styled page with its status and the action's words.
- ``refusals_as_404``: every refusal is the 404 page, on purpose: the live session's pages never tell someone outside
  a session whether it (or a screenshot in it) exists.
- ``json_action_errors``: the pages' own JSON endpoints (the review page's edits and polls) answer a refusal in the
  API's error shape with its status.
- ``form_error``: a view that shows the refusal on its form (the field it names, else above the form) catches it and
  calls this; ``refusals_as_messages`` / ``refusal_message``: the refusal as the next page's error message, with the
  fields it names.

Views that show a refusal on the page itself (a form error, a message) still catch it; nothing a view lets out is
ever a 500. The task frames (``views/forms/frames.py``) answer their own small sandboxed pages: they are not app pages.
"""

import contextlib
import functools

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse

from ..actions import ActionError, Forbidden, NotFound
from .errors import error_page

TITLES = {
    400: "Not accepted",
    409: "Conflict",
    410: "No longer available",
    413: "Too large",
    415: "Unsupported type",
    429: "Too many requests",
    503: "Try again later",
}


def refusal_page(request, error: ActionError):
    """The styled error page of a refusal other than 404 and 403, with its status (and ``Retry-After``)."""
    response = error_page(request, error.status, TITLES.get(error.status, "Refused"), error.detail)
    if hasattr(error, "retry_after"):
        response["Retry-After"] = str(error.retry_after)
    return response


def answering_refusals(answer):
    """A decorator for views whose action errors are answered by ``answer(request, error)`` (a response, or it raises
    Django's 404 / 403): the one place a view's refusals are turned into what the browser gets."""

    def decorate(view):
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            try:
                return view(request, *args, **kwargs)
            except ActionError as error:
                return answer(request, error)

        return wrapped

    return decorate


def error_pages(request, error: ActionError):
    """``NotFound`` the 404 page, ``Forbidden`` the 403 page, any other refusal its styled page."""
    if isinstance(error, NotFound):
        raise Http404(error.detail) from None
    if isinstance(error, Forbidden):
        raise PermissionDenied(error.detail) from None
    return refusal_page(request, error)


# Decorate a page view: the action errors it lets out become the app's error pages (see the module).
action_errors = answering_refusals(error_pages)

# Decorate a page's JSON endpoint: an action error it lets out is answered in the API's error shape.
json_action_errors = answering_refusals(lambda request, error: JsonResponse(error.as_dict(), status=error.status))


def refusals_as_404(detail: str):
    """Decorate a page view: any action error it lets out is the 404 page saying ``detail`` (see the module)."""

    def not_found(request, error):
        raise Http404(detail) from None

    return answering_refusals(not_found)


def form_error(form, error: ActionError) -> None:
    """Show an action's refusal on the form: on the field it names, else above the form."""
    for entry in error.errors or [{"field": None, "message": error.detail}]:
        field, message = entry.get("field") or "", entry.get("message") or error.detail
        base = field.split("[")[0]  # statuses[1] is shown on the statuses field
        if base != field or base not in form.fields:
            message = f"{error.detail} ({message})" if message != error.detail else message
        form.add_error(base if base in form.fields else None, message)


def refusal_message(request, error: ActionError) -> None:
    """Show an action's refusal as the next page's error message, with the fields it names."""
    fields = "; ".join(f"{e['field']}: {e['message']}" for e in error.errors[:5])
    messages.error(request, f"{error.detail}" + (f" ({fields})" if fields and fields not in error.detail else ""))


@contextlib.contextmanager
def refusals_as_messages(request):
    """Inside: a refusal is shown as the next page's error message (``refusal_message``) instead of raised, and the
    view goes on to its redirect; nothing the refused action would have stored is stored."""
    try:
        yield
    except ActionError as error:
        refusal_message(request, error)
