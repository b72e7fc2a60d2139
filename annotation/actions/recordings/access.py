"""Who may record in a project, read or write a demonstration, and read or upload blobs."""

from django.db import connection
from django.db.models import Q

from ...lib import schema
from ...models import RECORDING_ROLES, Blob, Demonstration, Project, Turn, VideoChunk
from ...store import hotsql
from ..errors import Forbidden, NotFound, ValidationFailed
from ..manage.access import check_project_role


def check_project_for_recording(user, project_name: str) -> Project:
    """The project ``user`` may record in; 404 when they are not a member, 403 when their role cannot record."""
    return check_project_role(user, project_name, RECORDING_ROLES, "record demonstrations (needs annotator or admin)")


def visible_demo(user, name: str) -> Demonstration:
    """The demo named ``name`` in one of ``user``'s projects (any role: ``Demonstration.objects.visible_to``), with
    their role there, in one short query (``hotsql``): the hot path of every upload."""
    if not user.is_authenticated:
        raise NotFound(f"no demonstration {name!r} among your projects")
    demo = hotsql.demo_with_role(user.pk, name)
    if demo is None or (demo.user_role is None and not user.is_superuser):
        raise NotFound(f"no demonstration {name!r} among your projects")
    demo.project.remember_role(user, demo.user_role)
    return demo


def check_demo_readable(user, name: str) -> Demonstration:
    """A demonstration of one of ``user``'s projects whose turns they may read; others are 404 so their existence
    does not leak. The instructor of a no-vision recording may not read it while it runs (the live session)."""
    demo = visible_demo(user, name)
    if demo.hides_screen_from(user):
        raise NotFound(f"demonstration {name!r} is not readable by its no-vision instructor while it records")
    return demo


def check_demo_writable(user, name: str) -> Demonstration:
    """A demonstration ``user`` may add turns to: its navigator's, instructor's or a project admin's."""
    demo = visible_demo(user, name)
    if not demo.can_write(user):
        raise Forbidden(f"demonstration {name!r} belongs to another navigator")
    return demo


def check_blob_readable(user, sha256: str) -> Blob:
    """A blob that a demonstration ``user`` may read uses: one its turns refer to (screenshot, page, bboxes, a
    frame, the MHTML snapshot) or a chunk of its video. Any other blob is a 404, whoever uploaded it."""
    blob = Blob.objects.filter(sha256=sha256).first() if schema.is_sha256(sha256) else None
    if blob is None or not blob_used_by(Demonstration.objects.screen_visible_to(user), blob):
        raise NotFound(f"no blob {sha256} in your projects")
    return blob


# ``schema.SNAPSHOT_FIELD`` (``arguments.properties.mhtml``) as a lookup into the turn's ``arguments`` JSON.
SNAPSHOT_LOOKUP = schema.SNAPSHOT_FIELD.replace(".", "__")


def blob_used_by(demos, blob: Blob) -> bool:
    """Whether a turn of ``demos`` refers to ``blob`` wherever ``schema.referenced_blobs`` finds references (the
    columns of ``schema.BLOB_FIELDS``, each frame's screenshot, the step's MHTML snapshot), or ``blob`` is a chunk
    of their video. The indexed columns are asked first; the JSON places in a second query."""
    turns = Turn.objects.filter(demonstration__in=demos)
    columns = Q()
    for name in (*schema.BLOB_FIELDS, *schema.RAW_FIELDS):
        columns |= Q(**{name: blob})
    if turns.filter(columns).exists():
        return True
    if VideoChunk.objects.filter(demonstration__in=demos, blob=blob).exists():
        return True
    snapshot = Q(**{SNAPSHOT_LOOKUP: blob.sha256})
    if connection.features.supports_json_field_contains:
        return turns.filter(Q(frames__contains=[{"screenshot": blob.sha256}]) | snapshot).exists()
    # SQLite cannot search inside JSON lists: look through the turns that have frames.
    if turns.filter(snapshot).exists():
        return True
    frame_lists = turns.exclude(frames=[]).values_list("frames", flat=True).iterator()
    return any(frame.get("screenshot") == blob.sha256 for frames in frame_lists for frame in frames)


def check_project_for_blobs(user, project_name) -> Project:
    """The project a blob request (``HEAD``, ``PUT``, ``missing``) is about: one where ``user`` may record. Blobs
    are answered per project, so the request must say which (``?project=<name>``, or ``project`` in the body)."""
    if not isinstance(project_name, str) or not project_name:
        raise ValidationFailed(
            'say which project the blobs are for: ?project=<name> (HEAD, PUT) or "project" in the body (missing); '
            "a recorder that does not send it is too old for this server",
            [{"field": "project", "message": "required"}],
        )
    return check_project_for_recording(user, project_name)


def check_demo_for_bundle(user, name: str) -> Demonstration:
    """A demonstration ``user`` may add turns to and whose project they may upload blobs to (record there), in
    one query: a batch brings both."""
    demo = check_demo_writable(user, name)
    if not demo.project.has_role(user, RECORDING_ROLES):
        raise Forbidden(f"your role in {demo.project.name!r} cannot record demonstrations (needs annotator or admin)")
    return demo
