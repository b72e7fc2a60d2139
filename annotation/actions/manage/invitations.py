"""Invitation links to a project (``ProjectInvitation``): a project admin (or a site admin) makes one with a preset
role; the person who opens it joins with a new account or the one they are signed in with. A link is used once, and
refused when expired (410), used (410), revoked (410), unknown (404) or when the person is already a member (409);
a refused link creates nothing. Only the token's sha256 is stored: the link is shown (and mailed, when mail is
configured) once, when it is made. Not the live session's invitations (``actions/live.py``).

The sign-up form of a link says when a username is taken (as any sign-up does), so it is throttled like sign-in:
after ``LOGIN_FAILURE_LIMIT`` refused sign-ups with one link within ``LOGIN_FAILURE_WINDOW_SECONDS``, the next is a
429 (``check_join_allowed``, ``do_note_join_failure``): nobody holding a link can ask about usernames at will.
Counted per link, not per address, so teammates behind one address (NAT) are not locked out of their own links."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from ...models import Membership, ProjectInvitation, token_digest
from ..errors import Conflict, Gone, NotFound, invalid
from .projects import check_role
from .throttle import check_failures, do_note_failure

MAX_DAYS = 30
DEFAULT_DAYS = 7


def mail_configured() -> bool:
    """Whether the platform can send mail: the same test as password reset (``EMAIL_HOST`` or ``EMAIL_BACKEND``)."""
    return settings.PASSWORD_RESET_ENABLED


def do_create_invitation(project, by, role, days=DEFAULT_DAYS, email: str = "", note: str = ""):
    """A new invitation link to ``project`` with ``role``, valid for ``days`` (1 to 30). Returns the invitation and
    its token (shown once: only its digest is kept)."""
    check_role(role)
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
        raise invalid("days", f"a whole number of days from 1 to {MAX_DAYS}")
    if len(note) > 200:
        raise invalid("note", "at most 200 characters")
    token = secrets.token_urlsafe(32)
    invitation = ProjectInvitation.objects.create(
        project=project,
        role=role,
        email=email,
        note=note,
        token_sha256=token_digest(token),
        created_by=by if by.is_authenticated else None,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return invitation, token


def do_mail_invitation(invitation, link: str) -> bool:
    """Mail the link to the invitation's address when mail is configured and an address was given; whether it was
    sent (after the invitation is stored)."""
    if not (invitation.email and mail_configured()):
        return False
    project = invitation.project
    by = invitation.created_by.username if invitation.created_by else "An administrator"
    body = (
        f"{by} invites you to the project {project.title or project.name} as {invitation.get_role_display()}.\n\n"
        f"Open this link to join (it works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC):\n{link}\n"
    )
    send_mail(f"Invitation to {project.name}", body, None, [invitation.email])
    return True


def check_invitation(token: str, for_update: bool = False) -> ProjectInvitation:
    """The open invitation of ``token``: 404 when no such link exists, 410 when it was used, revoked or expired."""
    rows = ProjectInvitation.objects.select_related("project")
    if for_update:
        rows = rows.select_for_update(of=("self",))
    invitation = rows.filter(token_sha256=token_digest(token or "")).first()
    if invitation is None:
        raise NotFound("no such invitation link: check that it was copied whole")
    state = invitation.state
    if state == "used":
        raise Gone("this invitation link was used already: each link works once; ask the project's admin for another")
    if state == "revoked":
        raise Gone("this invitation link was revoked by the project's admin")
    if state == "expired":
        raise Gone(f"this invitation link expired on {invitation.expires_at:%Y-%m-%d %H:%M} UTC; ask for a new one")
    return invitation


def check_not_member(invitation, user) -> None:
    """409 when ``user`` already belongs to the invitation's project (the link stays usable for someone else)."""
    if user.is_authenticated and invitation.project.memberships.filter(user=user).exists():
        raise Conflict(
            f"you are already a member of {invitation.project.name}; this link is left for someone else",
            [{"field": "user", "message": "already a member"}],
        )


def accept(invitation, user) -> Membership:
    check_not_member(invitation, user)
    membership = Membership.objects.create(project=invitation.project, user=user, role=invitation.role)
    invitation.used_at, invitation.used_by = timezone.now(), user
    invitation.save(update_fields=["used_at", "used_by"])
    return membership


def do_accept_invitation(token: str, user) -> Membership:
    """``user`` (signed in) joins the project with the invitation's role; the link is used up."""
    with transaction.atomic():
        return accept(check_invitation(token, for_update=True), user)


def do_join_with_new_account(token: str, username: str, password: str, email: str = ""):
    """A new account (its username and password already validated by the caller's form) that joins the project;
    nothing is created when the link is refused or the username is taken (409)."""
    with transaction.atomic():
        invitation = check_invitation(token, for_update=True)
        users = get_user_model().objects
        if users.filter(username__iexact=username).exists():
            raise Conflict(f"the username {username!r} is taken", [{"field": "username", "message": "taken"}])
        try:
            with transaction.atomic():
                user = users.create_user(username=username, password=password, email=email or invitation.email)
        except IntegrityError:
            raise Conflict(f"the username {username!r} is taken", [{"field": "username", "message": "taken"}]) from None
        return accept(invitation, user)


def join_failure_keys(invitation) -> list[str]:
    """The count a refused sign-up adds to: its link's, whatever the address. Not the address's: a lab behind one
    address (NAT) would lock every teammate out of their own link; a link is one person's and single-use, so
    probing usernames takes a link per ``LOGIN_FAILURE_LIMIT`` tries per window."""
    return [f"join-failures:invitation:{invitation.token_sha256}"]


def check_join_allowed(invitation) -> None:
    """Refuse (429) a sign-up with ``invitation``'s link after too many refused ones with it."""
    check_failures(join_failure_keys(invitation), "too many refused sign-ups with this link")


def do_note_join_failure(invitation) -> None:
    """Count a refused sign-up (a username taken, a password refused) for its link."""
    for key in join_failure_keys(invitation):
        do_note_failure(key)


def check_project_invitation(project, invitation_id) -> ProjectInvitation:
    """The project's invitation ``invitation_id`` (another project's is not found here)."""
    invitation = project.invitations.filter(pk=invitation_id).first()
    if invitation is None:
        raise NotFound(f"no invitation {invitation_id} in {project.name}")
    return invitation


def do_revoke_invitation(project, invitation_id) -> ProjectInvitation:
    """The link stops working; 409 when it was used already (remove the member instead)."""
    with transaction.atomic():
        invitation = check_project_invitation(project, invitation_id)
        if invitation.used_at:
            raise Conflict("this invitation was used already: remove the member instead")
        if not invitation.revoked_at:
            invitation.revoked_at = timezone.now()
            invitation.save(update_fields=["revoked_at"])
    return invitation


def open_invitations(project):
    return project.invitations.filter(used_at=None, revoked_at=None, expires_at__gt=timezone.now())
