"""Access ends the moment a grant ends: the model signals (connected in ``annotation/apps.py``) that catch every way a
person's access changes, whichever page, API, command or admin form made the change.

- A membership removed or its role changed (the members page and API, the admin, a project deleted): the person's
  live-session sockets check their access again (``events.on_commit_recheck``) and those that lost it close.
- An account deactivated, or its password changed (the account page, a password reset, the admin, ``manage.py
  changepassword``): its API tokens are deleted (make a new one on the token page) and its sockets check again.
- An API token deleted (revoked or rotated on the token page, deleted in the admin), a sign-out: its sockets check
  again (a socket joined with that token, or with that session, closes).

Pages and the API need nothing more: they look the membership, the session and the token up on every request.
"""

from django.contrib.auth.hashers import is_password_usable
from rest_framework.authtoken.models import Token

from ..events import on_commit_recheck

CHECKED_FIELDS = frozenset({"password", "is_active", "is_superuser", "is_staff"})


def note_user_before_save(user, update_fields) -> None:
    """Keep the stored password hash, ``is_active``, ``is_superuser`` and ``is_staff`` of an account about to be
    saved (``user_saved`` compares)."""
    user._stored_before = None
    if user.pk is None or (update_fields is not None and not CHECKED_FIELDS & set(update_fields)):
        return
    user._stored_before = type(user).objects.filter(pk=user.pk).values(*CHECKED_FIELDS).first()


def password_changed(user, before: dict, update_fields) -> bool:
    """A new password was set (or made unusable). Not a re-hash on sign-in: Django saves a stronger hash of the same
    password with ``update_fields=["password"]`` after clearing the raw password it keeps (``_password``) until the
    save, the attribute its own ``password_changed`` hook reads. Not a first password on an account created without
    one (made with a token by an admin or a script, then given a password): it had no password to steal."""
    if before["password"] == user.password:
        return False
    if not before["password"] or not is_password_usable(before["password"]):
        return False  # a first password (the account had none that signs in): no credential of it to end
    rehash = update_fields is not None and set(update_fields) == {"password"}
    return not rehash or getattr(user, "_password", None) is not None


def user_saved(user, created: bool, update_fields) -> None:
    before = getattr(user, "_stored_before", None)
    user._stored_before = None
    if created or before is None:
        return
    deactivated = before["is_active"] and not user.is_active
    if deactivated or password_changed(user, before, update_fields):
        do_end_api_tokens(user)
    if any(before[name] != getattr(user, name) for name in CHECKED_FIELDS):  # a superuser's place may be gone too
        on_commit_recheck(user.pk)


def do_end_api_tokens(user) -> bool:
    """Delete the account's API token (the token page makes a new one); True when it had one."""
    return bool(Token.objects.filter(user=user).delete()[0])


def membership_changed(membership, created: bool = False) -> None:
    """A role changed or a membership went: the person's sockets check again (a new membership grants, so no)."""
    if not created:
        on_commit_recheck(membership.user_id)


def token_deleted(token) -> None:
    on_commit_recheck(token.user_id)


def signed_out(user) -> None:
    if user is not None:
        on_commit_recheck(user.pk)
