"""Recordings: demonstrations, their turns and video, and content-addressed blobs.

The raw capture (``Demonstration`` recording fields, ``Turn``, ``Blob``) is written once by ingest and never
changed afterwards; curation is stored as edits over it, in models of its own that refer to turns (``review``), so
the original recording can always be shown, exported or restored.
"""

import secrets
import string

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from ..lib.formats import mind2web_task_id
from .manage import Project, Role


def sha256_path(sha256: str) -> str:
    """Storage name of a blob: fanned out in two levels so no folder grows huge."""
    return f"blobs/{sha256[:2]}/{sha256[2:4]}/{sha256}"


class Blob(models.Model):
    """A content-addressed file (screenshot, page HTML, bboxes JSON, video chunk), stored once by sha256."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    media_type = models.CharField(max_length=100)
    file = models.FileField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.sha256[:12]} ({self.media_type}, {self.size} B)"


class ProjectBlob(models.Model):
    """A project's right to a blob: someone who may record in the project uploaded these bytes to it (or its turns
    referred to them before rights existed). The file is stored once whatever the number of projects; whether a
    blob is there, and referring to it from a turn or video chunk, is answered per project from these rows, so one
    project learns nothing of another's blobs and cannot reach them by their sha256."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="blob_rights")
    blob = models.ForeignKey(Blob, on_delete=models.CASCADE, related_name="rights")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "blob"], name="one_right_per_project_and_blob")]

    def __str__(self):
        return f"{self.project_id} may use {self.blob_id[:12]}"


def new_demo_name() -> str:
    """A random WebLINX-style demo name: 7 lowercase letters."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(7))


class DemoStatus(models.TextChoices):
    """The life of a demonstration: recording → recorded → in_review → validated | rejected, or returned (sent
    back to its annotator with comments) → recorded again."""

    RECORDING = "recording", "Recording"
    RECORDED = "recorded", "Recorded"
    IN_REVIEW = "in_review", "In review"
    RETURNED = "returned", "Returned to the annotator"
    VALIDATED = "validated", "Validated"
    REJECTED = "rejected", "Rejected"


# What a recording says about its task, in one list: given when it starts (by the recorder, or from a demonstration
# task), corrected in review, listed by the API (recordings and demonstrations) in this order.
TASK_METADATA = ("task_description", "websites", "category", "subcategory", "region", "instructor_sees_screen")

# What an export or a split report may select: every status but a recording still under way. Returned demos are
# exported like recorded ones; rejected ones are marked (WebLINX ``invalid.json``) or left out (Mind2Web).
EXPORTABLE_STATUSES = (
    DemoStatus.RECORDED,
    DemoStatus.IN_REVIEW,
    DemoStatus.RETURNED,
    DemoStatus.VALIDATED,
    DemoStatus.REJECTED,
)


class DemoMode(models.TextChoices):
    """Chat mode (WebLINX: instructor + navigator) or task mode (Mind2Web: navigator alone)."""

    CHAT = "chat", "Chat (instructor and navigator)"
    TASK = "task", "Task (navigator alone)"


class DemonstrationQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Demonstrations of projects where ``user`` has any role."""
        return self.filter(project__in=Project.objects.for_user(user))

    def screen_visible_to(self, user):
        """``visible_to`` minus the recordings whose screen ``user`` must not see: those they instruct without
        seeing the screen (the no-vision rule, while the recording runs)."""
        hidden = Q(status=DemoStatus.RECORDING, instructor_sees_screen=False, instructor_id=user.pk)
        return self.visible_to(user).exclude(hidden & ~Q(navigator_id=user.pk))


class TaskUuidField(models.CharField):
    """The Mind2Web ``annotation_id`` of a demo's name (``lib.formats.mind2web_task_id``), stored as the row is
    inserted (also by ``bulk_create``: Django asks each field's ``pre_save``) so a task is found by an index."""

    def pre_save(self, model_instance, add):
        value = mind2web_task_id(model_instance.name)
        setattr(model_instance, self.attname, value)
        return value


class Demonstration(models.Model):
    """One recorded session of a navigator on real websites, with its task and recording metadata."""

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="demonstrations")
    name = models.CharField(max_length=16, unique=True, default=new_demo_name, editable=False)
    client_id = models.CharField(
        max_length=64,
        help_text="Recorder-chosen id that makes starting a recording idempotent; unique per navigator.",
    )
    navigator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="demonstrations_navigated"
    )
    instructor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="demonstrations_instructed",
        null=True,
        blank=True,
    )
    mode = models.CharField(max_length=8, choices=DemoMode.choices, default=DemoMode.CHAT)
    task_description = models.TextField(blank=True)
    websites = models.JSONField(default=list, blank=True, help_text="Domains visited, e.g. ['www.bbc.com'].")
    category = models.CharField(max_length=100, blank=True)
    subcategory = models.CharField(max_length=100, blank=True)
    region = models.CharField(max_length=100, blank=True)
    instructor_sees_screen = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=DemoStatus.choices, default=DemoStatus.RECORDING)
    recording_start = models.DateTimeField()
    recording_end = models.DateTimeField(null=True, blank=True)
    timezone_offset_minutes = models.IntegerField(default=0)
    user_agent = models.CharField(max_length=500, blank=True)
    recorder_version = models.CharField(max_length=32, blank=True)
    assignment = models.ForeignKey(
        "annotation.Assignment",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="recordings",
        help_text="The form-task assignment this recording was made on (a person's form filling as a demonstration).",
    )
    discarded = models.BooleanField(
        default=False, help_text="Mind2Web verification: the task is discarded (left out of the Mind2Web export)."
    )
    refined_task = models.TextField(
        blank=True,
        help_text="Mind2Web verification: the reviewer's task description; the recorded one is kept as it was.",
    )
    replay = models.JSONField(
        null=True,
        blank=True,
        help_text="The last offline replay of the task from its HAR: {steps, replayed, first_failure, per_step, at} "
        "(docs/mind2web.md#replay).",
    )
    source_id = models.CharField(
        max_length=64,
        blank=True,
        help_text="Imported demos: the demo's id in its released benchmark (blank = recorded here); one per project.",
    )
    source = models.JSONField(
        default=dict,
        blank=True,
        help_text="Imported demos: the release's format and its own files' facts (metadata, form), as given.",
    )
    task_uuid = TaskUuidField(
        max_length=36,
        default="",
        editable=False,
        db_index=True,
        help_text="The Mind2Web annotation_id of the demo's name (uuid5), set on save: replays find a task by it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DemonstrationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "status"])]
        constraints = [
            models.CheckConstraint(condition=Q(name__regex=r"^[a-z]+$"), name="demo_name_lowercase"),
            # Per navigator, not global: another person's ids (of any project) are never an answer to anyone else.
            models.UniqueConstraint(fields=["navigator", "client_id"], name="demo_client_id_per_navigator"),
            # One release's demo once per project, ids equal but for case included (their folders would overwrite
            # each other on some systems): importing it again is refused, never a duplicate, even by two at once.
            models.UniqueConstraint(
                "project", Lower("source_id"), condition=~Q(source_id=""), name="demo_source_id_per_project"
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def is_recording(self):
        return self.status == DemoStatus.RECORDING

    def hides_screen_from(self, user):
        """The no-vision rule: while recording, the instructor of a demonstration with ``instructor_sees_screen``
        false sees none of its screen (screenshots, pages, URLs, video)."""
        return (
            self.is_recording
            and not self.instructor_sees_screen
            and user.pk == self.instructor_id
            and user.pk != self.navigator_id
        )

    def can_write(self, user):
        """May ``user`` add turns to or finish this recording? Its navigator, instructor or a project admin."""
        if user.pk in (self.navigator_id, self.instructor_id):
            return True
        return self.project.has_role(user, (Role.ADMIN,))


class TurnType(models.TextChoices):
    CHAT = "chat", "Chat"
    BROWSER = "browser", "Browser"


class Speaker(models.TextChoices):
    INSTRUCTOR = "instructor", "Instructor"
    NAVIGATOR = "navigator", "Navigator"


class ImmutableCaptureError(Exception):
    """Raised on an attempt to change a stored raw turn; curation is stored as edits instead."""


class Turn(models.Model):
    """One event of the raw capture: a chat message or a browser action, with its captured page state.

    ``arguments`` holds the WebLINX argument object (metadata, properties, element, text, value, ...);
    ``url``, ``tab_id`` and the viewport are copied out of it for filtering. Rows are immutable.
    """

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="turns")
    client_id = models.CharField(max_length=64, help_text="Recorder-chosen id; unique per demonstration.")
    seq = models.PositiveIntegerField(help_text="Arrival order within the demonstration, from 0, without gaps.")
    type = models.CharField(max_length=8, choices=TurnType.choices)
    timestamp = models.FloatField(help_text="Seconds since the recording started.")
    speaker = models.CharField(max_length=16, choices=Speaker.choices, blank=True)
    utterance = models.TextField(blank=True)
    intent = models.CharField(max_length=16, blank=True)
    arguments = models.JSONField(default=dict, blank=True)
    url = models.TextField(blank=True)
    tab_id = models.BigIntegerField(null=True, blank=True)
    viewport_width = models.PositiveIntegerField(null=True, blank=True)
    viewport_height = models.PositiveIntegerField(null=True, blank=True)
    screenshot = models.ForeignKey(Blob, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    page = models.ForeignKey(Blob, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    bboxes = models.ForeignKey(Blob, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    har = models.ForeignKey(
        Blob,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Step mode: the tab's traffic since the previous step, HAR 1.2 (docs/recorder.md#raw-dump).",
    )
    dom_snapshot = models.ForeignKey(
        Blob,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Step mode: the DOM snapshot with layout and computed styles before the action.",
    )
    frames = models.JSONField(
        default=list, blank=True, help_text="Other screenshots around the action: [{screenshot, timestamp, label}]."
    )
    label = models.CharField(
        max_length=200,
        blank=True,
        help_text="The recorder's name for the action (the element's accessible name), shown in review.",
    )
    content_sha256 = models.CharField(max_length=64, help_text="Hash of the submitted turn, to spot conflicts.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["demonstration", "timestamp", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["demonstration", "client_id"], name="turn_client_id_unique"),
            models.UniqueConstraint(fields=["demonstration", "seq"], name="turn_seq_unique"),
        ]

    def __str__(self):
        what = self.intent if self.type == TurnType.BROWSER else self.speaker
        return f"{self.demonstration_id}#{self.seq} {self.type} {what} @{self.timestamp:.2f}s"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableCaptureError("raw turns are immutable; record curation as edits")
        super().save(*args, **kwargs)

    @property
    def element_uid(self):
        """The acted element's ``data-webtasks-id``, if the turn acts on an element."""
        from ..lib.shapes import element_of, uid_of

        return uid_of(element_of(self.arguments))


class VideoChunk(models.Model):
    """One piece of a recording's tab video (WebM from MediaRecorder), in order; concatenated they are the video.

    ``started_at`` is when the MediaRecorder started, in seconds on the recording clock, so any turn's timestamp
    maps to a time in the video (``timestamp - started_at``).
    """

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="video_chunks")
    index = models.PositiveIntegerField()
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")
    started_at = models.FloatField(help_text="Seconds since the recording started when the video started.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["demonstration", "index"]
        constraints = [models.UniqueConstraint(fields=["demonstration", "index"], name="video_chunk_index_unique")]

    def __str__(self):
        return f"{self.demonstration_id} video chunk {self.index}"
