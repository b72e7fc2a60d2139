"""Every URL pattern of the project (``get_resolver()`` walked, includes and namespaces flattened), as a route to
show and a format to fill: so a test over "every page with an id in it" covers a new pattern without being told."""

from dataclasses import dataclass

from django.urls import URLResolver, get_resolver
from django.utils.regex_helper import normalize


@dataclass(frozen=True)
class Pattern:
    route: str  # e.g. "projects/<name>/exports/<job_id>/"
    template: str  # e.g. "projects/%(name)s/exports/%(job_id)s/"
    params: tuple
    callback: object

    def url(self, values: dict) -> str:
        return "/" + self.template % values

    @property
    def model_admin(self):
        """The ``ModelAdmin`` serving this pattern (``admin/<app>/<model>/...``), or None."""
        return getattr(self.callback, "model_admin", None)

    @property
    def viewset_basename(self) -> str | None:
        """The API router's basename of this pattern's viewset (``export``, ``batch``, ...), or None."""
        return getattr(self.callback, "initkwargs", {}).get("basename")


def walk(resolver=None, prefix: str = ""):
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        regex = entry.pattern.regex.pattern.removeprefix("^")
        if isinstance(entry, URLResolver):
            yield from walk(entry, prefix + regex)
        else:
            template, params = normalize(prefix + regex)[0]
            route = template % {name: f"<{name}>" for name in params}
            yield Pattern(route, template, tuple(params), entry.callback)


def all_patterns() -> list[Pattern]:
    return list(walk())
