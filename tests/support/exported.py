"""An export job run as the worker runs it, in this process, and its tar.gz read back as a user unpacks it."""

import io
import json
import tarfile

from django.core.files.storage import default_storage

from annotation.models import ExportJob, JobStatus
from workers.exports.jobs import run_export


def archived_members(data: bytes) -> tuple[dict, dict]:
    """``{path under the top folder: (kind, link target under it, bytes)}`` of a tar.gz export, and its manifest's
    entries; ``quality.json`` left out (it carries the time it was made)."""
    members = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            name = member.name.partition("/")[2]
            link = member.linkname.partition("/")[2]
            content = tar.extractfile(member).read() if member.isfile() else b""
            members[name] = (member.type, link, content)
    manifest = json.loads(members.pop("manifest.json")[2])["files"]
    members.pop("quality.json")
    return members, {name: entry for name, entry in manifest.items() if name != "quality.json"}


def exported_archive(project, owner) -> bytes:
    """An export job of the project run as the worker runs it, in this process; its archive's bytes."""
    job = ExportJob.objects.create(project=project, owner=owner, format="weblinx", statuses=["validated"])
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    with default_storage.open(job.file.name, "rb") as handle:
        return handle.read()
