"""Old page paths of renamed pages: a ``308 Permanent Redirect`` to the new path, with the query string, so a bookmark
opens the new page and a form posted to the old path is posted again, body and method kept, to the new one. Kept
for one release (docs/api.md, "Old paths")."""

from django.http import HttpResponsePermanentRedirect
from django.urls import path, reverse
from django.views import View


class PermanentRedirect308(HttpResponsePermanentRedirect):
    status_code = 308


class Moved(View):
    """Every method answers 308 to ``pattern_name`` with the same URL arguments and query string."""

    pattern_name = ""

    def dispatch(self, request, *args, **kwargs):
        url = reverse(self.pattern_name, args=args, kwargs=kwargs)
        if query := request.META.get("QUERY_STRING", ""):
            url = f"{url}?{query}"
        return PermanentRedirect308(url)


def moved(route: str, new_name: str):
    """A URL pattern for ``route`` (an old path) that redirects to the page named ``new_name``."""
    return path(route, Moved.as_view(pattern_name=new_name))
