"""Projects, their members and the members' roles: who may do what, and where."""

import hashlib

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    """What a member may do in a project."""

    ANNOTATOR = "annotator", "Annotator"  # records demonstrations
    REVIEWER = "reviewer", "Reviewer"  # curates and accepts / rejects them
    RESEARCHER = "researcher", "Researcher"  # reads and exports them
    ADMIN = "admin", "Admin"  # all of the above, and manages members


# Which roles may do what; checked by ``Project.has_role``.
RECORDING_ROLES = (Role.ANNOTATOR, Role.ADMIN)
READ_ROLES = (Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)


class ProjectQuerySet(models.QuerySet):
    def for_user(self, user, roles=READ_ROLES):
        """Projects in which ``user`` has one of ``roles`` (every project for a superuser, none for anonymous)."""
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self.all()
        return self.filter(memberships__user=user, memberships__role__in=roles).distinct()


class Project(models.Model):
    """A body of work (e.g. one benchmark) with its own members, demonstrations and splits."""

    name = models.SlugField(max_length=64, unique=True, help_text="Short identifier used in URLs and the API.")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    # Suggestions offered (as a datalist) where a demo's category, subcategory or region is entered; free text stays
    # allowed, so a list can grow without breaking older recordings.
    category_choices = models.JSONField(default=list, blank=True, help_text="Suggested categories.")
    subcategory_choices = models.JSONField(default=list, blank=True, help_text="Suggested subcategories.")
    region_choices = models.JSONField(default=list, blank=True, help_text="Suggested regions.")
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")
    proposal_similarity_threshold = models.PositiveSmallIntegerField(
        default=85,
        validators=[MaxValueValidator(100)],
        help_text="Mind2Web screening: a proposed task whose token-set ratio with a seed or accepted task of its "
        "website reaches this (0-100) is marked too similar.",
    )
    demonstrations_to_pool = models.BooleanField(
        default=False,
        help_text="Mind2Web: an accepted proposal goes to the pool of annotators instead of to its proposer.",
    )
    record_traffic = models.BooleanField(
        default=False,
        help_text="WebLINX recordings keep the tab's network traffic as HAR 1.2 per action turn (step mode always "
        "does; docs/recorder.md#raw-dump).",
    )
    second_review_percent = models.PositiveSmallIntegerField(
        default=0,
        validators=[MaxValueValidator(100)],
        help_text="Demonstrations: this share (0-100 %) of reviewed demos also goes to a second reviewer, whose "
        "decision is kept apart for agreement (docs/quality.md).",
    )

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def role_of(self, user):
        """The user's role here, ``admin`` for a superuser, or None for a non-member. Read from the database each
        time, unless the query that loaded this instance read it already (``remember_role``)."""
        if not user.is_authenticated:
            return None
        if user.is_superuser:
            return Role.ADMIN
        known = self.__dict__.get("_roles", {})
        if user.pk in known:
            return known[user.pk]
        membership = self.memberships.filter(user=user).first()
        return membership.role if membership else None

    def remember_role(self, user, role) -> None:
        """Keep ``user``'s role here as the caller's query read it (for the rest of one request)."""
        self.__dict__.setdefault("_roles", {})[user.pk] = role

    def has_role(self, user, roles):
        return self.role_of(user) in roles


class Membership(models.Model):
    """A user's role in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_role_per_project")]

    def __str__(self):
        return f"{self.user} is {self.role} in {self.project}"


def token_digest(token: str) -> str:
    """How an invitation link's token is looked up: its sha256 (the token itself is never stored)."""
    return hashlib.sha256(token.encode()).hexdigest()


class ProjectInvitation(models.Model):
    """An invitation link to join a project with a preset role: one use, until it expires or is revoked. Only the
    token's sha256 is stored; the link is shown (or mailed) once, when it is made."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Role.choices)
    email = models.EmailField(blank=True, help_text="Where the link was mailed, if it was.")
    note = models.CharField(max_length=200, blank=True, help_text="Who it is for (shown to admins only).")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="project_invitations_made"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="project_invitations_used",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"invitation to {self.project} as {self.role} ({self.state})"

    @property
    def state(self) -> str:
        """``used``, ``revoked``, ``expired`` or ``open``."""
        if self.used_at:
            return "used"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "open"
