"""What researchers take out of the platform: split configuration, export jobs and evaluations.

Background work is a row: the API creates the row, a thin Celery task does the work and records status, progress
and errors on it. The Celery result is never the record.
"""

import datetime as dt

from django.conf import settings
from django.db import models
from django.utils import timezone

from .manage import Project
from .recordings import Demonstration


class SplitConfig(models.Model):
    """How a project's demonstrations are divided into benchmark splits (see ``annotation/lib/splits.py``).

    WebLINX: demos whose instructor could not see the screen → test_vis; held-out subcategories → test_cat;
    held-out websites → test_web; held-out regions → test_geo; of the rest, a seeded draw per demo name gives
    valid / test_iid / train. Mind2Web: held-out domains (categories) → test_domain; held-out websites →
    test_website; a seeded draw gives test_task / train. A demo's split depends only on its own facts and this
    configuration, so adding demos never moves an existing one.
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="split_config")
    seed = models.IntegerField(default=0)
    valid_fraction = models.FloatField(default=0.1)
    test_iid_fraction = models.FloatField(default=0.1)
    held_out_websites = models.JSONField(default=list, blank=True)
    held_out_subcategories = models.JSONField(default=list, blank=True)
    held_out_regions = models.JSONField(default=list, blank=True)
    held_out_domains = models.JSONField(default=list, blank=True, help_text="Mind2Web test_domain (categories).")
    test_task_fraction = models.FloatField(default=0.2, help_text="Mind2Web test_task.")
    form_task_splits = models.JSONField(
        default=dict,
        blank=True,
        help_text="TurkingBench split lists: {list name (file stem, e.g. evaluation_tasks_easy): [task names]}.",
    )
    fixed_splits = models.JSONField(
        default=dict,
        blank=True,
        help_text="Splits given, not drawn: {scheme: {demo name: split}} (an imported release's split file); these "
        "demos keep them whatever the rules say.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"splits of {self.project}"

    @classmethod
    def for_project(cls, project):
        """The project's configuration, created with the defaults on first use."""
        return cls.objects.get_or_create(project=project)[0]

    def rules(self):
        from ..lib.splits import SplitRules

        return SplitRules(
            seed=self.seed,
            valid_fraction=self.valid_fraction,
            test_iid_fraction=self.test_iid_fraction,
            held_out_websites=frozenset(self.held_out_websites),
            held_out_subcategories=frozenset(self.held_out_subcategories),
            held_out_regions=frozenset(self.held_out_regions),
            held_out_domains=frozenset(self.held_out_domains),
            test_task_fraction=self.test_task_fraction,
            fixed=self.fixed_splits or {},
        )


class ExportFormat(models.TextChoices):
    WEBLINX = "weblinx", "WebLINX"
    MIND2WEB = "mind2web", "Mind2Web"
    TURKINGBENCH = "turkingbench", "TurkingBench (form batches)"


class JobStatus(models.TextChoices):
    """queued → running → done | failed | cancelled."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
IMPORT_HOLDING_STATUSES = ("queued", "running", "done")  # an import job in these holds its file


class JobQuerySet(models.QuerySet):
    def visible_to(self, user):
        return self.filter(project__in=Project.objects.for_user(user))


class Job(models.Model):
    """Fields shared by background jobs: who, status, progress, error, timing and a worker heartbeat."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0 to 1.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life from the worker.")

    objects = JobQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def is_active(self):
        return self.status in ACTIVE_STATUSES

    def is_stale(self, now=None):
        """A running job whose worker has not reported for ``JOB_STALE_SECONDS`` has died (killed, crashed)."""
        if self.status != JobStatus.RUNNING or self.heartbeat_at is None:
            return False
        now = now or timezone.now()
        return now - self.heartbeat_at > dt.timedelta(seconds=settings.JOB_STALE_SECONDS)


class ExportJob(Job):
    """One export of a project's demonstrations in a benchmark format, published as an archive with a manifest."""

    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    splits = models.JSONField(default=list, blank=True, help_text="Splits to include; empty = all.")
    statuses = models.JSONField(default=list, help_text="Demo statuses included, e.g. ['validated'].")
    demos = models.JSONField(
        default=list, blank=True, help_text="Names of the demonstrations to export (a selection); empty = all."
    )
    archive_format = models.CharField(max_length=8, default="tar.gz", choices=[("tar.gz", "tar.gz"), ("zip", "zip")])
    # TurkingBench (form batches): which work goes into each batch.csv, and how its cells are written.
    batches = models.ManyToManyField(
        "annotation.Batch",
        blank=True,
        related_name="+",
        help_text="TurkingBench: the form batches exported, fixed when the job is created (empty: every form batch of "
        "the project, for jobs made before the choice existed).",
    )
    review_states = models.JSONField(
        default=list,
        blank=True,
        help_text="TurkingBench: review states of the submitted work written as answer rows, e.g. "
        "['approved', 'pending'].",
    )
    include_gold = models.BooleanField(
        default=False, help_text="TurkingBench: also write the gold rows (the known answers imported with a batch)."
    )
    exact_cells = models.BooleanField(
        default=False,
        help_text="TurkingBench: batch.csv cells written verbatim, as TurkingBench's tools read them (not escaped "
        "for spreadsheets).",
    )
    counts = models.JSONField(default=dict, blank=True, help_text="Demos, turns and files per split.")
    file = models.FileField(max_length=300, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    size = models.PositiveBigIntegerField(null=True, blank=True)

    def __str__(self):
        return f"export {self.pk} of {self.project} ({self.format}, {self.status})"

    @property
    def filename(self):
        return f"{self.project.name}-{self.format}-{self.pk}.{self.archive_format}"

    @property
    def is_downloadable(self):
        return self.status == JobStatus.DONE and bool(self.file)


class Evaluation(Job):
    """Scores of uploaded model predictions against one split of a project, per turn and aggregated."""

    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    split = models.CharField(max_length=32)
    predictions = models.JSONField(help_text="The uploaded predictions, as sent.")
    results = models.JSONField(default=dict, blank=True, help_text='{"per_turn": [...], "aggregate": {...}}')
    data_version = models.CharField(
        max_length=64, blank=True, help_text="sha256 over the exported demos it scored (paths and file hashes)."
    )

    def __str__(self):
        return f"evaluation {self.pk} of {self.project} {self.split} ({self.status})"


class ImportJob(Job):
    """The import of an uploaded release archive into a project (docs/recuration.md), run by the worker."""

    format = models.CharField(
        max_length=16, choices=[("weblinx", "WebLINX"), ("mind2web", "Mind2Web")], default="weblinx"
    )
    archive = models.FileField(max_length=300, blank=True, help_text="The uploaded archive; removed once run.")
    archive_name = models.CharField(max_length=200, blank=True, help_text="The uploaded file's name.")
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, help_text="The uploaded file's SHA-256.")
    report = models.JSONField(
        default=dict, blank=True, help_text="Counts, demos imported, items skipped and notes (``ImportReport``)."
    )
    file_freed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the same file was uploaded again after every demo this job imported had been deleted: the "
        "job holds the file no more.",
    )

    class Meta(Job.Meta):
        constraints = [
            # One queued, running or done job per file and project: the same file uploaded again (or twice at once)
            # is refused at submission; a failed or cancelled job does not hold the file, nor a freed one.
            models.UniqueConstraint(
                fields=["project", "sha256"],
                condition=models.Q(status__in=IMPORT_HOLDING_STATUSES, file_freed_at__isnull=True)
                & ~models.Q(sha256=""),
                name="import_job_file_once",
            )
        ]

    def __str__(self):
        return f"import {self.pk} into {self.project} ({self.format}, {self.status})"


class Mind2WebStep(models.Model):
    """One step of a demonstration as the Mind2Web export writes it, processed by the worker once the demo is
    validated (``workers/exports/mind2web_steps.py``). ``key`` is a digest of everything the step is made from (the
    exporter's version, the action id, the turn's page, bboxes and arguments): the export uses a row whose key it
    computes again, and processes any other step on the fly, so a stale row is never written."""

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="mind2web_steps")
    key = models.CharField(max_length=64)
    skipped = models.BooleanField(default=False, help_text="Neither its page nor the element's outerHTML exists.")
    op = models.CharField(max_length=16, blank=True)
    original_op = models.CharField(max_length=16, blank=True)
    value = models.TextField(blank=True)
    action_repr = models.TextField(blank=True)
    action = models.TextField(blank=True, help_text="The step's ``actions`` entry, as JSON text ready to write.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["demonstration", "key"], name="mind2web_step_key")]

    def __str__(self):
        return f"Mind2Web step {self.key[:12]} of demo {self.demonstration_id}"
