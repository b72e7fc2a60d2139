"""Action errors on the app's pages, mapped in one place (``api/errors.py`` does the same for the API).

A page view wrapped in ``action_errors`` calls the actions and lets their refusals out: ``NotFound`` becomes the
404 page and ``Forbidden`` the 403 page (``handler404`` / ``handler403``), any other refusal (a conflict 409, invalid
input 400, gone 410, ...) the same styled page with its status and the action's words. Views that show a refusal on
the page itself (a form error, a message) still catch it; nothing a view lets out is ever a 500.
"""

import functools

from django.core.exceptions import PermissionDenied
from django.http import Http404

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


def action_errors(view):
    """Decorate a page view: the action errors it lets out become the app's error pages (see the module)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NotFound as error:
            raise Http404(error.detail) from None
        except Forbidden as error:
            raise PermissionDenied(error.detail) from None
        except ActionError as error:
            return refusal_page(request, error)

    return wrapped
