"""Quality control of form work: qualifications (a named score per worker in a project), the qualifications a batch
requires, and the workers a batch blocked for their gold accuracy. The review state of an assignment and a batch's
gold and onboarding settings are fields of ``Assignment``, ``Task`` and ``Batch`` (``forms.py``)."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from .forms import Assignment, Batch, ReviewState
from .manage import Project


class Qualification(models.Model):
    """A named score per worker in one project (MTurk's qualification type): earned in an onboarding batch or
    granted by an admin; batches may require it with a minimum score."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="qualifications")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="qualification_name_unique")]

    def __str__(self):
        return f"{self.project.name}/{self.name}"


class QualificationScore(models.Model):
    """One worker's score (0–1) of one qualification; no row means the worker does not hold it."""

    class Source(models.TextChoices):
        ADMIN = "admin", "Granted by an admin"
        ONBOARDING = "onboarding", "Earned in an onboarding batch"

    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="scores")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualifications")
    score = models.FloatField()
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ADMIN)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["qualification", "worker"]
        constraints = [
            models.UniqueConstraint(fields=["qualification", "worker"], name="one_score_per_worker"),
            models.CheckConstraint(condition=Q(score__gte=0) & Q(score__lte=1), name="qualification_score_range"),
        ]

    def __str__(self):
        return f"{self.qualification_id}: {self.worker_id} = {self.score:g}"


class BatchRequirement(models.Model):
    """Batch ``batch`` is for workers holding ``qualification`` with a score of at least ``min_score``."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="requirements")
    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="required_by")
    min_score = models.FloatField(default=0.0)

    class Meta:
        ordering = ["batch", "qualification"]
        constraints = [models.UniqueConstraint(fields=["batch", "qualification"], name="one_requirement_per_batch")]

    def __str__(self):
        return f"batch {self.batch_id} requires {self.qualification_id} ≥ {self.min_score:g}"


class BatchBlock(models.Model):
    """A worker blocked from a batch: their running gold accuracy fell below the batch's threshold. A block in force
    has no ``lifted_at``; a manager who unblocks the worker lifts it (who, when, why), and the row stays as the
    record. A worker has at most one block in force per batch."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="blocks")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batch_blocks")
    reason = models.CharField(max_length=300)
    accuracy = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True, help_text="When a manager unblocked the worker.")
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    lift_reason = models.CharField(max_length=500, blank=True, help_text="Why, as the worker reads it.")

    class Meta:
        ordering = ["batch", "worker", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "worker"], condition=Q(lifted_at__isnull=True), name="one_block_in_force_per_worker"
            )
        ]

    def __str__(self):
        state = "unblocked" if self.lifted_at else "blocked"
        return f"{self.worker_id} {state} from batch {self.batch_id}"


class FiguresVersion(models.Model):
    """The version of a form batch's quality figures (agreement, aggregation, gold accuracy): a new random token,
    written in the transaction of every action that changes one of their inputs (answers, review decisions, gold
    marks and values, batch settings, the template). Cached figures are kept under the token they were computed at,
    so a change is seen by the next read, in every process, and a token never comes back (a database reset or a
    reused batch id cannot meet an old cache entry)."""

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, primary_key=True, related_name="+")
    token = models.CharField(max_length=32)

    def __str__(self):
        return f"figures of batch {self.batch_id}: {self.token}"


class DecisionKind(models.TextChoices):
    """What made a trail entry (``Decision``)."""

    MANUAL = "manual", "Decided"
    BULK = "bulk", "Decided in bulk"
    CSV = "csv", "Decided in the results CSV"
    AUTO = "auto", "Approved automatically"
    REOPEN = "reopen", "Reopened"
    UNDO = "undo", "Undone"


class Decision(models.Model):
    """One entry of an assignment's decision trail: every change of its review (approved or rejected by a person,
    one by one, in bulk, by the results CSV uploaded back or automatically; reopened) and every undo of one, with
    who, when, the review state before and after and the feedback (or the undo's reason). An undo points at the
    decision it undid (``undoes``); a decision is undone at most once."""

    Kind = DecisionKind

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="decisions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    from_state = models.CharField(max_length=16, choices=ReviewState.choices)
    to_state = models.CharField(max_length=16, choices=ReviewState.choices)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who decided; empty for the automatic approval.",
    )
    at = models.DateTimeField()
    feedback = models.TextField(blank=True, help_text="The feedback the decision gave, or why it was undone.")
    undoes = models.OneToOneField(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="undone_by", help_text="An undo's target."
    )

    class Meta:
        ordering = ["assignment", "at", "pk"]
        indexes = [models.Index(fields=["assignment", "at"], name="decision_trail")]

    def __str__(self):
        return f"{self.kind} of assignment {self.assignment_id}: {self.from_state} → {self.to_state}"
