"""Distributed work: batches of tasks, and the assignments that hand one task to one worker (Turkle's model).

A ``Batch`` is one unit of distributed work in a project: for ``form`` batches an MTurk/Turkle HTML template with
``${var}`` placeholders and one ``Task`` per distinct row of input values. Each task is worked on by up to
``assignments_per_task`` different workers; an ``Assignment`` is one worker's turn at one task, from acceptance to
submission (or return, skip, expiry). The rules (who gets what next, accept/submit/skip/return/expire) live in
``annotation.actions.forms``, independent of the form-specific rendering, so later kinds of batch reuse them.

Counters on ``Task`` (``taken``, ``submitted``) are kept in the same transaction as the assignment changes, under
the task's row lock, so two workers accepting at once never get a slot beyond the batch's assignments per task.
"""

import secrets

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q
from django.utils.crypto import constant_time_compare, salted_hmac

from .manage import Project


class BatchKind(models.TextChoices):
    """What a batch's tasks are. Later kinds (proposals, demonstrations) reuse the same queue."""

    FORM = "form", "Form (HTML template, Turkle/MTurk style)"
    PROPOSAL = "proposal", "Mind2Web task proposal (one task per website)"
    DEMONSTRATION = "demonstration", "Mind2Web task demonstration (one task per accepted proposal)"


class BatchQuerySet(models.QuerySet):
    def in_projects_of(self, user):
        """Batches of the projects where ``user`` has any role."""
        return self.filter(project__in=Project.objects.for_user(user))

    def forms(self):
        """Form batches only: the work pages serve these; Mind2Web batches have their own pages and API."""
        return self.filter(kind=BatchKind.FORM)


class Batch(models.Model):
    """A batch of tasks in a project: the template, how many workers do each task, for how long, and who may."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="batches")
    name = models.CharField(max_length=200, help_text="Unique in the project; a TurkingBench task's directory name.")
    kind = models.CharField(max_length=16, choices=BatchKind.choices, default=BatchKind.FORM)
    description = models.TextField(blank=True, help_text="Instructions shown above the task.")
    source_name = models.CharField(
        max_length=200, blank=True, help_text="The TurkingBench task this batch was imported from (its directory)."
    )
    html_template = models.TextField(help_text="The MTurk/Turkle HTML fragment with ${var} placeholders.")
    template_fields = models.JSONField(default=list, help_text="The ${var} names the template uses, sorted.")
    has_submit_button = models.BooleanField(default=False, help_text="The template brings its own submit button.")
    uses_crowd_elements = models.BooleanField(default=False, help_text="<crowd-*> elements, which are not rendered.")
    external_scripts = models.JSONField(
        default=list,
        blank=True,
        help_text="The template's scripts and stylesheets from other sites: [{url, kind, local}], local = the "
        "vendored copy under /static/vendor/ that serves it, or null (agents/vendor.py).",
    )
    import_warnings = models.JSONField(
        default=list, blank=True, help_text="What the import noticed that does not stop it (warnings_for)."
    )
    csv_filename = models.CharField(max_length=255, blank=True)
    csv_columns = models.JSONField(
        default=list, help_text="The uploaded CSV's header, in file order (inputs and Answer.* columns)."
    )
    assignments_per_task = models.PositiveIntegerField(default=1, help_text="How many workers do each task (≥ 1).")
    allotted_seconds = models.PositiveIntegerField(
        default=24 * 3600, help_text="Time a worker has for one assignment before it expires."
    )
    published = models.BooleanField(default=True, help_text="Workers see the batch (unpublished: admins preview).")
    active = models.BooleanField(default=True, help_text="Inactive batches hand out no work.")
    completed = models.BooleanField(default=False, help_text="Every task has all its submitted assignments.")
    # Counters kept with the tasks (set when tasks are stored, moved when one completes), so that pages and the API
    # never count a batch's tasks per request: a batch may hold a million.
    tasks_total = models.PositiveIntegerField(default=0, editable=False, help_text="How many tasks the batch has.")
    tasks_done = models.PositiveIntegerField(default=0, editable=False, help_text="How many of them are complete.")
    workers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="work_batches",
        help_text="Only these users (and groups) may work on it; nobody named = the project's annotators and admins.",
    )
    worker_groups = models.ManyToManyField(Group, blank=True, related_name="work_batches")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Quality control (docs/quality.md): review of submitted work, gold tasks, blocking and onboarding.
    auto_approve_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=3 * 24 * 3600,
        help_text="Submitted work not reviewed within this many seconds is approved (empty: never).",
    )
    gold_rate = models.FloatField(default=0.0, help_text="Share (0–1) of a worker's tasks that are gold tasks.")
    gold_threshold = models.FloatField(
        null=True, blank=True, help_text="A worker whose gold accuracy falls below this (0–1) is blocked."
    )
    gold_min_answers = models.PositiveIntegerField(
        default=3, help_text="Gold answers a worker gives before the threshold applies."
    )
    grants_qualification = models.ForeignKey(
        "annotation.Qualification",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="onboarding_batches",
        help_text="Onboarding: workers whose gold accuracy reaches grant_threshold earn this qualification.",
    )
    grant_threshold = models.FloatField(default=0.8, help_text="Gold accuracy (0–1) that earns the qualification.")

    objects = BatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "batches"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="batch_name_unique_in_project"),
            models.CheckConstraint(condition=Q(assignments_per_task__gte=1), name="batch_assignments_at_least_one"),
            models.CheckConstraint(condition=Q(allotted_seconds__gte=1), name="batch_allotted_time_positive"),
        ]

    def __str__(self):
        return f"{self.project.name}/{self.name}"

    @property
    def is_open(self):
        """Hands out work: published, active and not completed."""
        return self.published and self.active and not self.completed

    @property
    def input_columns(self) -> list[str]:
        return [c for c in self.csv_columns if not c.startswith("Answer.")]

    @property
    def answer_columns(self) -> list[str]:
        return [c for c in self.csv_columns if c.startswith("Answer.")]

    @property
    def csv_basename(self) -> str:
        return self.csv_filename.removesuffix(".csv") or "batch"

    @property
    def is_restricted(self):
        """Named users or groups only (else: the project's annotators and admins)."""
        return self.workers.exists() or self.worker_groups.exists()


class Task(models.Model):
    """One instance of a batch: its input values and, when imported with them, its gold answers.

    ``index`` is the 0-based order of the distinct instance in the uploaded CSV (TurkingBench predictions name
    instances by it; every page, file and API numbers tasks by it). ``gold`` holds one entry per annotator row of the
    CSV, in file order: ``{"row": <0-based data row>, "answers": {field: value or [values]}}`` (the TurkingBench
    export's gold rows). The task is gold (``is_gold``) when it has known answers (``gold_answers``): the non-blank
    values of those rows, or of one assignment's answers (``annotation.lib.agreement.known_answers``).
    """

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="tasks")
    index = models.PositiveIntegerField()
    inputs = models.JSONField(help_text="{column: value} of the non-Answer columns (order: Batch.csv_columns).")
    gold = models.JSONField(default=list, blank=True)
    taken = models.PositiveIntegerField(default=0, help_text="Active + submitted assignments.")
    submitted = models.PositiveIntegerField(default=0, help_text="Submitted assignments.")
    completed = models.BooleanField(default=False)
    is_gold = models.BooleanField(
        default=False, help_text="A gold task: it has at least one non-blank known answer, which scores its workers."
    )
    gold_answers = models.JSONField(
        default=dict, blank=True, help_text="A gold task's known answers: {field: [non-blank accepted values]}."
    )

    class Meta:
        ordering = ["batch", "index"]
        constraints = [models.UniqueConstraint(fields=["batch", "index"], name="task_index_unique_in_batch")]
        indexes = [
            models.Index(fields=["batch", "completed", "index"], name="task_queue"),
            # the gold tasks of a batch, found without reading its other tasks (the queue serves them by schedule)
            models.Index(fields=["batch", "completed"], condition=Q(is_gold=True), name="task_gold"),
        ]

    def __str__(self):
        return f"{self.batch_id}#{self.index}"


class AssignmentStatus(models.TextChoices):
    """active → submitted | returned | skipped | expired."""

    ACTIVE = "active", "Active"
    SUBMITTED = "submitted", "Submitted"
    RETURNED = "returned", "Returned"
    SKIPPED = "skipped", "Skipped"
    EXPIRED = "expired", "Expired"


class ReviewState(models.TextChoices):
    """The requester's decision on submitted work (MTurk's Submitted → Approved | Rejected)."""

    PENDING = "pending", "Submitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


# An assignment in these states holds one of its task's slots (``Task.taken``).
HOLDING_STATUSES = (AssignmentStatus.ACTIVE, AssignmentStatus.SUBMITTED)


def new_token_nonce() -> str:
    return secrets.token_urlsafe(16)


class Assignment(models.Model):
    """One worker's turn at one task: accepted, then submitted with answers, or returned, skipped or expired.

    ``answers`` is what the form submitted: ``{name: value}``, or ``{name: [values]}`` in form order when a name
    was sent several times (a checkbox group). The task frame and its submission are authorised by ``token``, an
    HMAC of the assignment and a random nonce (nothing secret is stored in the row).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.ACTIVE)
    answers = models.JSONField(default=dict, blank=True)
    accepted_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When it was submitted, returned, ... expired.")
    work_seconds = models.FloatField(null=True, blank=True, help_text="Submitted − accepted, in seconds.")
    token_nonce = models.CharField(max_length=32, default=new_token_nonce, editable=False)
    # Requester review of submitted work (annotation.actions.quality): a state beside ``status``.
    review = models.CharField(max_length=16, choices=ReviewState.choices, default=ReviewState.PENDING)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    feedback = models.TextField(blank=True, help_text="The reason the worker sees (a rejection's, or a note).")
    reopened_at = models.DateTimeField(
        null=True, blank=True, help_text="A rejected assignment reopened: its slot went back to the queue."
    )
    gold_score = models.FloatField(null=True, blank=True, help_text="Score of the answers of a gold task (0–1).")
    flagged = models.CharField(max_length=200, blank=True, help_text="Why this work needs a human review.")
    ended_reason = models.CharField(
        max_length=400,
        blank=True,
        help_text="Why the platform took the assignment back (the worker's access ended, or they were blocked).",
    )

    class Meta:
        ordering = ["-accepted_at", "-pk"]
        constraints = [
            # A worker never holds the same task twice (Turkle's rule), whatever races.
            models.UniqueConstraint(
                fields=["task", "worker"],
                condition=Q(status__in=["active", "submitted"]),
                name="one_held_assignment_per_worker_and_task",
            ),
        ]
        indexes = [
            models.Index(fields=["worker", "status"], name="assignment_worker_status"),
            models.Index(fields=["status", "expires_at"], name="assignment_expiry"),
            models.Index(fields=["task", "status"], name="assignment_task_status"),
            models.Index(fields=["status", "review"], name="assignment_review"),
        ]

    def __str__(self):
        return f"assignment {self.pk} of task {self.task_id} to {self.worker_id} ({self.status})"

    @property
    def token(self) -> str:
        """The secret that authorises this assignment's task frame and its one submission."""
        return salted_hmac("form-assignment", f"{self.pk}:{self.token_nonce}").hexdigest()

    def token_matches(self, token: str) -> bool:
        return isinstance(token, str) and constant_time_compare(token, self.token)

    @property
    def is_active(self):
        return self.status == AssignmentStatus.ACTIVE
