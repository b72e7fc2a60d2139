"""Invitations to instruct a live chat-mode demonstration (``/sessions/join/<code>``)."""

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


def code_digest(code: str) -> str:
    """How a code is looked up: its sha256 (the code itself is never stored)."""
    return hashlib.sha256(code.encode()).hexdigest()


class InvitationQuerySet(models.QuerySet):
    def active(self):
        """Invitations that can still be used: not revoked, not used, not expired."""
        return self.filter(revoked_at=None, used_at=None, expires_at__gt=timezone.now())


class Invitation(models.Model):
    """A random, expiring, revocable, single-use invitation to become a demonstration's instructor.

    Neither the code nor anything that alone gives it is stored: the code is an HMAC of a random ``nonce`` under
    the ``SECRET_KEY``, and the row keeps the nonce (so the link can be shown to the navigator again) and the
    code's sha256 (to look it up). A database dump without the key, or the key without the database, gives no code.
    """

    demonstration = models.ForeignKey("annotation.Demonstration", on_delete=models.CASCADE, related_name="invitations")
    nonce = models.CharField(max_length=64, default=secrets.token_hex, editable=False)
    code_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"invitation to {self.demonstration_id} ({self.state})"

    @classmethod
    def new(cls, demonstration, created_by, expires_at) -> "Invitation":
        """An unsaved invitation with a fresh nonce and its code's digest (ready for ``save`` or ``bulk_create``)."""
        invitation = cls(demonstration=demonstration, created_by=created_by, expires_at=expires_at)
        invitation.code_sha256 = code_digest(invitation.code)
        return invitation

    @property
    def code(self) -> str:
        """The code of the link, derived from the stored nonce with the secret key."""
        mac = hmac.new(settings.SECRET_KEY.encode(), f"invitation:{self.nonce}".encode(), hashlib.sha256)
        return mac.hexdigest()[:40]

    @property
    def state(self) -> str:
        """``active``, ``used``, ``revoked`` or ``expired``."""
        if self.used_at is not None:
            return "used"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "active"
