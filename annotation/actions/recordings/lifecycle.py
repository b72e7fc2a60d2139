"""Starting a recording (idempotent per ``client_id``) and finishing it."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from ...models import TASK_METADATA, Demonstration, DemoStatus, Project, new_demo_name
from ..errors import Conflict
from ..events import on_commit_send
from ..forms.queue import do_submit_recording
from .background import enqueue_after_recording

RECORDING_FIELDS = (
    "mode",
    *TASK_METADATA,
    "recording_start",
    "timezone_offset_minutes",
    "user_agent",
    "recorder_version",
    "instructor",
    "assignment",
)


def unused_demo_name() -> str:
    while True:
        name = new_demo_name()
        if not Demonstration.objects.filter(name=name).exists():
            return name


def do_start_recording(user, project: Project, client_id: str, **fields) -> tuple[Demonstration, bool]:
    """Start a demonstration, or return the one this ``client_id`` already started (a retried request).

    Returns ``(demonstration, created)``. Client ids are the navigator's own: the same id used by someone else
    (in this project or another) is unrelated and never mentioned, so no answer reveals another person's ids. The
    navigator's own id re-sent for another project is a conflict.
    """
    existing = Demonstration.objects.filter(navigator=user, client_id=client_id).select_related("project").first()
    if existing is not None:
        if existing.project_id != project.pk:
            raise Conflict(
                f"client_id already started a recording in project {existing.project.name!r}",
                [{"field": "project", "message": f"differs from the recording's project {existing.project.name!r}"}],
            )
        return existing, False
    values = {key: fields[key] for key in RECORDING_FIELDS if fields.get(key) is not None}
    values.setdefault("recording_start", timezone.now())
    try:
        with transaction.atomic():
            demo = Demonstration.objects.create(
                project=project, navigator=user, client_id=client_id, name=unused_demo_name(), **values
            )
    except IntegrityError:  # the same client_id raced in from a concurrent retry
        return Demonstration.objects.get(client_id=client_id, navigator=user), False
    return demo, True


def do_finish_recording(demo: Demonstration, recording_end=None, task_description=None) -> Demonstration:
    """Mark a recording as recorded, with the task description as confirmed at the end when one is given, and have
    the worker prepare it for review (thumbnails, quality checks, screenshot suggestions). Finishing again changes
    nothing (the recorder may retry)."""
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=demo.pk)
        if demo.status == DemoStatus.RECORDING:
            demo.status = DemoStatus.RECORDED
            demo.recording_end = recording_end or timezone.now()
            if task_description is not None:
                demo.task_description = task_description.strip()
            demo.save(update_fields=["status", "recording_end", "task_description", "updated_at"])
            on_commit_send(demo.name, {"type": "session.ended", "status": demo.status})
            if demo.assignment_id is not None:
                do_submit_recording(demo.assignment, demo.name)
            enqueue_after_recording(demo)
    return demo
