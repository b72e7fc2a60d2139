"""Filters that refuse what cannot match: an unknown project is a 400 naming the parameter, not an empty list."""

from django_filters.rest_framework import DjangoFilterBackend

from annotation.actions import ValidationFailed
from annotation.models import Project


class CheckedFilterBackend(DjangoFilterBackend):
    """django-filter, plus: ``project__name`` must name one of your projects (a typo would otherwise answer 200
    with an empty list). Choice fields (``status``, ``format``, ...) are already refused by django-filter."""

    def filter_queryset(self, request, queryset, view):
        name = request.query_params.get("project__name")
        if name and not Project.objects.for_user(request.user).filter(name=name).exists():
            raise ValidationFailed(
                f"project__name {name!r} is none of your projects",
                [{"field": "project__name", "message": f"no project {name!r} among yours"}],
            )
        return super().filter_queryset(request, queryset, view)
