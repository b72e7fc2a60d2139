"""Import jobs: a release uploaded to a project, checked, stored and imported by the worker
(``workers/exports/imports.py`` runs ``releases.do_import_weblinx`` or ``mind2web_releases.do_import_mind2web``).

A WebLINX release is a ``.zip`` or ``.tar.gz``; a Mind2Web release one split ``.json`` file or such an archive of
split files."""

import hashlib
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from ...lib import release_archive
from ...lib.mind2web_release import spans, split_of
from ...lib.weblinx_release import NotARelease
from ...models import Demonstration, ImportJob, JobStatus
from ...models.exports import IMPORT_HOLDING_STATUSES
from .. import queue
from ..errors import Conflict, TooLarge, ValidationFailed
from ..manage.access import check_not_other_role
from .jobs import enqueue
from .mind2web_releases import MAX_RELEASE_TASKS
from .releases import IMPORT_CANNOT

IMPORTS_PREFIX = "imports/"
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
FORMATS = {"weblinx": "WebLINX", "mind2web": "Mind2Web"}
CHECKED_SPLIT_BYTES = 64 * 1024 * 1024  # a split file uploaded alone is parsed in the request up to this size
MAX_NAME = ImportJob._meta.get_field("archive_name").max_length
LAYOUTS = {"weblinx": release_archive.weblinx_root, "mind2web": release_archive.mind2web_root}


def check_import_format(value) -> str:
    """The release's format (``weblinx`` when not given); 400 naming ``format`` otherwise."""
    if value in (None, ""):
        return "weblinx"
    if value not in FORMATS:
        raise ValidationFailed(
            f"unknown format {str(value)[:40]!r}", [{"field": "format", "message": "weblinx or mind2web"}]
        )
    return value


def is_single_file(release_format: str, name: str) -> bool:
    """A Mind2Web release uploaded as one split file rather than an archive."""
    return release_format == "mind2web" and name.lower().endswith(".json")


def check_job_not_other_role(user, pk) -> None:
    """403 when import ``pk`` is in a project where ``user`` has a role that may not import; else the caller's 404."""
    check_not_other_role(user, ImportJob.objects, pk, IMPORT_CANNOT)


def check_import_upload(upload, release_format: str = "weblinx") -> None:
    """The uploaded file: present, within ``IMPORT_MAX_UPLOAD_BYTES`` (413), an archive holding a release's layout
    or (Mind2Web) a split file (400 naming the first wrong part)."""
    if upload is None:
        raise ValidationFailed("no file; send the release as a .zip or .tar.gz in `file`", [field("required")])
    limit = settings.IMPORT_MAX_UPLOAD_BYTES
    if upload.size > limit:
        raise TooLarge(f"file of {upload.size} bytes exceeds IMPORT_MAX_UPLOAD_BYTES ({limit} bytes)", [field("size")])
    path = getattr(upload, "temporary_file_path", None)
    with tempfile.NamedTemporaryFile(suffix=".upload") as copy:
        if path is None:  # small uploads are held in memory: the archive readers need a file
            for chunk in upload.chunks():
                copy.write(chunk)
            copy.flush()
        if is_single_file(release_format, upload.name):
            check_split_file(Path(path() if path else copy.name), upload.name)
        else:
            check_archive(Path(path() if path else copy.name), release_format)
    upload.seek(0)


def check_archive(path: Path, release_format: str = "weblinx") -> None:
    try:
        found = release_archive.members(path)
        release_archive.check_members(found, settings.IMPORT_MAX_UNPACKED_BYTES, LAYOUTS[release_format])
    except release_archive.BadArchive as error:
        refusal = TooLarge if error.too_large else ValidationFailed
        what = FORMATS[release_format]
        raise refusal(f"not a {what} release: {error}; nothing was imported", [field(str(error))]) from None


def check_split_file(path: Path, name: str) -> None:
    """One Mind2Web split file: named after its split, a JSON list of task records (read whole up to
    ``CHECKED_SPLIT_BYTES``; a larger one's list is checked by the worker, whose job fails naming the part)."""
    try:
        split_of(Path(name))
        if len(name) > MAX_NAME:  # the job keeps this much of the name, and the worker reads the split from it
            raise NotARelease("file", f"a name of {len(name)} characters; at most {MAX_NAME}")
        if path.stat().st_size > CHECKED_SPLIT_BYTES:
            with path.open("rb") as handle:
                if handle.read(4096).lstrip()[:1] != b"[":
                    raise NotARelease(Path(name).name, "expected a JSON list of task records")
            return
        spans(path.read_bytes(), Path(name).name, MAX_RELEASE_TASKS)
    except NotARelease as error:
        raise ValidationFailed(
            f"not a Mind2Web release: {error}; nothing was imported", [{"field": error.part, "message": error.message}]
        ) from None


def field(message: str) -> dict:
    return {"field": "file", "message": message}


def upload_sha256(upload) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def holding_job(project, sha256: str):
    """The project's queued, running or done import job holding this file, if any."""
    holding = ImportJob.objects.filter(project=project, sha256=sha256, status__in=IMPORT_HOLDING_STATUSES)
    return holding.filter(file_freed_at__isnull=True).first()


def imported_names(job) -> list[str] | None:
    """The names of the demos the job's report lists as imported; None when it lists none or not each as an object
    with a demo name (a report the worker did not write: which demos the file gave is unknown, so it is never
    freed)."""
    report = job.report if isinstance(job.report, dict) else {}
    items = report.get("imported")
    if not isinstance(items, list) or not items:
        return None
    names = [item.get("demo") if isinstance(item, dict) else None for item in items]
    return names if all(isinstance(name, str) and name for name in names) else None


def imported_demos(job, names: list[str]):
    """The demos the job imported (``names``) that are still in its project."""
    return Demonstration.objects.filter(project_id=job.project_id, name__in=names)


def check_file_not_taken(project, sha256: str) -> None:
    """409 naming the job when a queued, running or done import job of ``project`` took this very file (a failed or
    cancelled one does not count: the file may be tried again; nor a done one whose demos were all deleted, which
    ``do_create_import`` frees); a done one's refusal says how many of its demos to delete."""
    earlier = holding_job(project, sha256)
    if earlier is None:
        return
    todo, names = f"See /api/imports/{earlier.pk}/", imported_names(earlier)
    if earlier.status == JobStatus.DONE and names is not None:
        todo = f"Delete its {imported_demos(earlier, names).count()} demonstrations to import it again ({todo[4:]})"
    raise Conflict(
        f"this file was uploaded to project {project.name!r} already: import {earlier.pk} ({earlier.status}, "
        f"{earlier.archive_name!r}) took it; nothing was imported. {todo}",
        [{"field": "file", "message": f"the same file as import {earlier.pk}"}],
    )


def free_emptied_job(project, sha256: str) -> None:
    """A done job of this file none of whose demos remain lets the file go (``file_freed_at``), so the file can be
    imported again. Under the job row's lock: of two uploads at once, one frees it and the constraint then lets one
    of the two new jobs in."""
    with transaction.atomic():
        earlier = holding_job(project, sha256)
        if earlier is None or earlier.status != JobStatus.DONE:
            return
        earlier = ImportJob.objects.select_for_update().get(pk=earlier.pk)
        names = imported_names(earlier)
        if earlier.file_freed_at is None and names is not None and not imported_demos(earlier, names).exists():
            earlier.file_freed_at = timezone.now()
            earlier.save(update_fields=["file_freed_at"])


def do_create_import(user, project, upload, release_format: str = "weblinx") -> ImportJob:
    """Store the checked archive (or split file) and enqueue its import; the job (queued) is returned. 409 when a
    queued, running or done job of the project took the same file (two such uploads at once: one wins, by the
    ``import_job_file_once`` constraint). A done job whose demos were all deleted lets its file go first."""
    sha256 = upload_sha256(upload)
    free_emptied_job(project, sha256)
    check_file_not_taken(project, sha256)
    suffixes = (*ARCHIVE_SUFFIXES, ".json") if release_format == "mind2web" else ARCHIVE_SUFFIXES
    suffix = next((s for s in suffixes if upload.name.lower().endswith(s)), ".archive")
    name = default_storage.save(f"{IMPORTS_PREFIX}{uuid.uuid4().hex}{suffix}", upload)
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                project=project,
                owner=user,
                format=release_format,
                archive=name,
                archive_name=upload.name[:200],
                size=upload.size,
                sha256=sha256,
            )
            enqueue(queue.IMPORT, job)
    except IntegrityError:  # the same file uploaded at the same moment: the other upload's job holds it
        default_storage.delete(name)
        check_file_not_taken(project, sha256)
        raise
    return job
