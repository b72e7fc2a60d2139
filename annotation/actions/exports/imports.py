"""Import jobs: a release archive uploaded to a project, checked, stored and imported by the worker
(``workers/exports/imports.py`` runs ``releases.do_import_weblinx`` on it)."""

import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction

from ...lib import release_archive
from ...models import ImportJob
from .. import queue
from ..errors import TooLarge, ValidationFailed
from ..manage.access import check_not_other_role
from .jobs import enqueue
from .releases import IMPORT_CANNOT

IMPORTS_PREFIX = "imports/"
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


def check_job_not_other_role(user, pk) -> None:
    """403 when import ``pk`` is in a project where ``user`` has a role that may not import; else the caller's 404."""
    check_not_other_role(user, ImportJob.objects, pk, IMPORT_CANNOT)


def check_import_upload(upload) -> None:
    """The uploaded file: present, within ``IMPORT_MAX_UPLOAD_BYTES`` (413), an archive holding a release's layout
    (400 naming the first wrong part)."""
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
        check_archive(Path(path() if path else copy.name))
    upload.seek(0)


def check_archive(path: Path) -> None:
    try:
        release_archive.check_members(release_archive.members(path), settings.IMPORT_MAX_UNPACKED_BYTES)
    except release_archive.BadArchive as error:
        refusal = TooLarge if error.too_large else ValidationFailed
        raise refusal(f"not a WebLINX release: {error}; nothing was imported", [field(str(error))]) from None


def field(message: str) -> dict:
    return {"field": "file", "message": message}


def do_create_import(user, project, upload) -> ImportJob:
    """Store the checked archive and enqueue its import; the job (queued) is returned."""
    suffix = next((s for s in ARCHIVE_SUFFIXES if upload.name.lower().endswith(s)), ".archive")
    name = default_storage.save(f"{IMPORTS_PREFIX}{uuid.uuid4().hex}{suffix}", upload)
    with transaction.atomic():
        job = ImportJob.objects.create(
            project=project, owner=user, archive=name, archive_name=upload.name[:200], size=upload.size
        )
        enqueue(queue.IMPORT, job)
    return job
