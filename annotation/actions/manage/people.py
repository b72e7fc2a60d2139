"""Accounts, for site admins (``is_staff`` or superuser): create an account, deactivate and reactivate one. A
deactivated account cannot sign in, its sessions end (Django refuses inactive users), its API token is deleted and
its live-session sockets close (``grants``); its memberships and work stay. Passwords are validated by the caller's form
(``AUTH_PASSWORD_VALIDATORS``)."""

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from ..errors import Conflict, Forbidden, NotFound


def is_site_admin(user) -> bool:
    return user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser)


def check_site_admin(user) -> None:
    if not is_site_admin(user):
        raise Forbidden("only site administrators manage accounts")


def do_create_account(actor, username: str, password: str, email: str = ""):
    check_site_admin(actor)
    users = get_user_model().objects
    if users.filter(username__iexact=username).exists():
        raise Conflict(f"the username {username!r} is taken", [{"field": "username", "message": "taken"}])
    try:
        with transaction.atomic():
            return users.create_user(username=username, password=password, email=email)
    except IntegrityError:
        raise Conflict(f"the username {username!r} is taken", [{"field": "username", "message": "taken"}]) from None


def do_set_active(actor, user_id, active: bool):
    """Deactivate (``active=False``) or reactivate an account. Nobody deactivates themselves (409); only a
    superuser changes a superuser (403)."""
    check_site_admin(actor)
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().filter(pk=user_id).first()
        if user is None:
            raise NotFound(f"no account {user_id}")
        if user.pk == actor.pk and not active:
            raise Conflict("you cannot deactivate your own account")
        if user.is_superuser and not actor.is_superuser:
            raise Forbidden("only a superuser can change a superuser's account")
        if user.is_active != active:
            user.is_active = active
            user.save(update_fields=["is_active"])
    return user


def accounts():
    return get_user_model().objects.order_by("username").prefetch_related("memberships__project")
