"""The header's navigation fits the person: ``nav_roles`` (a context processor, ``config/settings.py``) is the set of
roles the signed-in person holds in any project (every role for a superuser), read once per page and only when a
template asks; ``templates/base.html`` shows a link only to the roles that may use its page."""

from django.utils.functional import SimpleLazyObject

from ..models import Membership, Role


def roles(request):
    user = getattr(request, "user", None)

    def held() -> frozenset:
        if user is None or not user.is_authenticated:
            return frozenset()
        if user.is_superuser:
            return frozenset(Role.values)
        return frozenset(Membership.objects.filter(user=user).values_list("role", flat=True).distinct())

    return {"nav_roles": SimpleLazyObject(held)}
