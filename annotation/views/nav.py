"""The header's navigation fits the person: ``nav_roles`` (a context processor, ``config/settings.py``) is the set of
roles the signed-in person holds in any project (every role for a superuser), read once per page and only when a
template asks; ``templates/base.html`` shows a link only to the roles that may use its page:

- *Review*: reviewers, researchers and admins, who read every demonstration of their projects (an annotator opens
  the demos returned to them from the home page; the list would only offer them "Review next", which is not theirs);
- *Mind2Web* (``nav_mind2web``): researchers and admins, who add websites to their projects, and anyone else only
  in a project that collects Mind2Web tasks (it has websites: something to propose, demonstrate or review);
- *Agent runs*: researchers and admins; *People*: site admins; *Admin*: staff.
"""

from django.db.models import Q
from django.utils.functional import SimpleLazyObject

from ..models import Membership, Role

MIND2WEB_MANAGE = (Role.RESEARCHER, Role.ADMIN)


def roles(request):
    user = getattr(request, "user", None)

    def held() -> frozenset:
        if user is None or not user.is_authenticated:
            return frozenset()
        if user.is_superuser:
            return frozenset(Role.values)
        return frozenset(Membership.objects.filter(user=user).values_list("role", flat=True).distinct())

    def mind2web() -> bool:
        if user is None or not user.is_authenticated:
            return False
        if user.is_superuser:
            return True
        collecting = Q(role__in=MIND2WEB_MANAGE) | Q(project__websites__isnull=False)
        return Membership.objects.filter(collecting, user=user).exists()

    return {"nav_roles": SimpleLazyObject(held), "nav_mind2web": SimpleLazyObject(mind2web)}
