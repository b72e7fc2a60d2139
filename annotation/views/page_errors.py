"""Action errors on the app's pages, mapped in one place (``api/errors.py`` does the same for the API). No other
module under ``annotation/views`` catches an ``ActionError`` (``tests/platform/test_page_errors_lint.py``); a view
says what a refusal becomes with one of these:

- ``action_errors`` (decorator): a page view calls the actions and lets their refusals out: ``NotFound`` becomes the
  404 page and ``Forbidden`` the 403 page (``handler404`` / ``handler403``), any other refusal (a conflict 409, invalid
  input 400, gone 410, ...) the same styled page with its status and the action's words.
- ``refusals_as_pages(titles)`` (decorator): every refusal is the styled page with its status, titled per status (the
  invitation links: an unknown link is a page saying so, not the generic 404 page).
- ``refusals_as_404`` (decorator): every refusal is the 404 page, on purpose: the live session's pages never tell
  someone outside a session whether it (or a screenshot in it) exists.
- ``json_action_errors`` (decorator): the pages' own JSON endpoints (the review page's edits and polls) answer a
  refusal in the API's error shape with its status.
- ``refusals_on_form(form)`` (context manager): the refusal is shown on the form (``form_error``: the field it names,
  else above the form) and the view goes on to render the form again.
- ``refusals_as_messages(request)`` (context manager): the refusal is the next page's error message
  (``refusal_message``, with the fields it names) and the view goes on to its redirect.
- ``refusal_kept()`` (context manager): the refusal is kept on the yielded ``Refusal`` for a view that shows it on its
  own page (its template, its status): the project page of Mind2Web, the review list, the task frames, the throttled
  sign-in.

Each context manager takes the refusal classes it handles (any ``ActionError`` by default); others go out to the
view's decorator. Nothing a view lets out is ever a 500. The task frames (``views/forms/frames.py``) answer their own
small sandboxed pages: they are not app pages.
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


def refusal_page(request, error: ActionError, titles: dict | None = None):
    """The styled error page of a refusal with its status (and ``Retry-After``), titled by ``titles`` (else
    ``TITLES``) for its status."""
    title = (titles or {}).get(error.status) or TITLES.get(error.status, "Refused")
    response = error_page(request, error.status, title, error.detail)
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


def refusals_as_pages(titles: dict):
    """Decorate a page view: any action error it lets out is the styled page with its status, titled by ``titles``
    for its status (see ``refusal_page``)."""
    return answering_refusals(lambda request, error: refusal_page(request, error, titles))


class Refusal:
    """What ``refusal_kept`` (and ``refusals_as_messages``) caught, if anything: true when there was a refusal."""

    error: ActionError | None = None

    def __bool__(self) -> bool:
        return self.error is not None

    @property
    def detail(self) -> str:
        return self.error.detail if self.error else ""

    @property
    def status(self) -> int:
        return self.error.status if self.error else 200

    @property
    def fields(self) -> dict:
        """``{field: message}`` of the fields the refusal names."""
        return {e.get("field"): e.get("message") for e in (self.error.errors if self.error else []) if e.get("field")}


@contextlib.contextmanager
def refusal_kept(*kinds: type[ActionError], let_out: tuple = ()):
    """Inside: a refusal of ``kinds`` (any ``ActionError`` by default) is kept on the yielded ``Refusal`` instead of
    raised, for the view to show on its own page; a refusal of ``let_out`` (e.g. ``(Forbidden, NotFound)``: the 403
    and 404 pages) goes out as it came."""
    refusal = Refusal()
    try:
        yield refusal
    except ActionError as error:
        if (kinds and not isinstance(error, kinds)) or isinstance(error, let_out):
            raise
        refusal.error = error


@contextlib.contextmanager
def refusals_on_form(form, *kinds: type[ActionError], fields: tuple | None = None):
    """Inside: a refusal of ``kinds`` (any ``ActionError`` by default) is shown on ``form`` (``form_error``, or the
    form's own ``add_action_error``) instead of raised, and the view goes on to render the form again. With
    ``fields``, only a refusal naming one of them is shown on the form; any other goes out."""
    try:
        yield
    except ActionError as error:
        if kinds and not isinstance(error, kinds):
            raise
        if fields is not None and not any(entry.get("field") in fields for entry in error.errors):
            raise
        show = getattr(form, "add_action_error", None)
        if show is not None:
            show(error)
        else:
            form_error(form, error)


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
def refusals_as_messages(request, *kinds: type[ActionError]):
    """Inside: a refusal of ``kinds`` (any ``ActionError`` by default) is shown as the next page's error message
    (``refusal_message``) instead of raised, and the view goes on to its redirect; nothing the refused action would
    have stored is stored. Yields a ``Refusal`` for a view that answers with the refusal's status."""
    refusal = Refusal()
    try:
        yield refusal
    except ActionError as error:
        if kinds and not isinstance(error, kinds):
            raise
        refusal_message(request, error)
        refusal.error = error
