"""What an import job does on the worker: unpack the uploaded release in the job's work folder, import it
(``annotation.actions.exports.releases.do_import_weblinx``) and record the report; the archive is removed after."""

import shutil

from django.conf import settings
from django.core.files.storage import default_storage

from annotation.actions import ActionError
from annotation.actions.exports.releases import do_import_weblinx
from annotation.lib import release_archive
from annotation.models import ImportJob, JobStatus

from ..runners import Progress, finish_clean, run_job

UNPACK_SHARE = 0.1  # of the progress bar: copying and unpacking the archive; the rest is importing its demos


def run_import(job_id: int) -> None:
    run_job(ImportJob, job_id, import_release)


def import_release(job: ImportJob, workdir) -> None:
    """Unpack, import, finish; a release refused as a whole fails the job with the reason (nothing imported)."""
    try:
        archive = workdir / "upload"
        try:
            with default_storage.open(job.archive.name, "rb") as source, archive.open("wb") as target:
                shutil.copyfileobj(source, target, 1024 * 1024)
        except FileNotFoundError:  # the error would name the storage's path on the server
            finish_clean(job, workdir, JobStatus.FAILED, error="the uploaded archive is gone: upload the release again")
            return
        try:
            root = release_archive.unpack(archive, workdir / "release", settings.IMPORT_MAX_UNPACKED_BYTES)
        except release_archive.BadArchive as error:
            finish_clean(job, workdir, JobStatus.FAILED, error=f"not a WebLINX release: {error}")
            return
        archive.unlink()
        progress = Progress(job, UNPACK_SHARE, 1 - UNPACK_SHARE)
        progress(0, force=True)
        try:
            report = do_import_weblinx(root, job.project, job.owner, lambda done, total: progress(done / total))
        except ActionError as error:
            finish_clean(job, workdir, JobStatus.FAILED, error=error.detail, report={"errors": error.errors})
            return
        failed = report.demos == 0
        status = JobStatus.FAILED if failed else JobStatus.DONE
        error = "nothing was imported; see the report's skipped items" if failed else ""
        finish_clean(job, workdir, status, report=report.as_dict(), error=error)
    finally:
        default_storage.delete(job.archive.name)
