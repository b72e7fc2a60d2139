"""Accounts, projects and memberships the operator's commands make, with no person acting (``runplatform``'s first
admin and sample data, ``synth_demos``' synthetic annotators, ``import_turkingbench``'s project): each is made once and
found again on the next run, so running a command twice changes nothing."""

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token

from ...models import Demonstration, DemoStatus, Membership, Project


def do_create_first_admin(username: str, email: str, password: str):
    """``(superuser, its API token)``: the site's first admin account."""
    with transaction.atomic():
        admin = get_user_model().objects.create_superuser(username, email, password)
        return admin, Token.objects.create(user=admin)


def do_ensure_project(name: str, title: str = "", description: str = "") -> tuple[Project, bool]:
    """``(project, created)``: the project ``name``, made with ``title`` and ``description`` when it does not exist."""
    return Project.objects.get_or_create(name=name, defaults={"title": title, "description": description})


def do_ensure_account(username: str, password: str | None = None):
    """``(user, created)``: the account ``username``; a new one gets ``password`` (None: it cannot sign in)."""
    with transaction.atomic():
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            if password is None:
                user.set_unusable_password()
            else:
                user.set_password(password)
            user.save(update_fields=["password"])
    return user, created


def do_ensure_member(project: Project, user, role) -> Membership:
    """``user``'s membership of ``project``: with ``role`` when it is new; an existing one keeps its role."""
    return Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})[0]


def do_validate_sample_demos(project: Project, names) -> int:
    """The sample project's demonstrations ``names`` marked validated without a review (exports take validated
    demos by default, so a first run has something to export). Only for the sample data ``runplatform`` makes."""
    return Demonstration.objects.filter(project=project, name__in=list(names)).update(status=DemoStatus.VALIDATED)
