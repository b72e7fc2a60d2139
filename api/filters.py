"""Filters that refuse what cannot match: an unknown project is a 400 naming the parameter, not an empty list."""

from django_filters.rest_framework import DjangoFilterBackend

from annotation.actions import ValidationFailed
from annotation.models import Project


class CheckedFilterBackend(DjangoFilterBackend):
    """django-filter, plus: ``project__name`` must name one of your projects (a typo would otherwise answer 200
    with an empty list); a NUL character in any parameter is a 400 naming it. Choice fields (``status``,
    ``format``, ...) are already refused by django-filter."""

    def filter_queryset(self, request, queryset, view):
        for key, value in request.query_params.items():
            if "\x00" in value or "\x00" in key:  # PostgreSQL refuses NUL in text: a 400, never a 500
                raise ValidationFailed(
                    f"{key[:40]!r} holds a NUL character", [{"field": key[:40], "message": "NUL is not allowed"}]
                )
        name = request.query_params.get("project__name")
        if name and not Project.objects.for_user(request.user).filter(name=name).exists():
            raise ValidationFailed(
                f"project__name {name!r} is none of your projects",
                [{"field": "project__name", "message": f"no project {name!r} among yours"}],
            )
        return super().filter_queryset(request, queryset, view)
