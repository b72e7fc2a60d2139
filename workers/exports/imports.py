"""What an import job does on the worker: unpack the uploaded release in the job's work folder, import it
(``annotation.actions.exports.releases.do_import_weblinx`` or ``mind2web_releases.do_import_mind2web``) and record
the report; the upload is removed after."""

import shutil
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from annotation.actions import ActionError
from annotation.actions.exports.imports import FORMATS, LAYOUTS, is_single_file
from annotation.actions.exports.mind2web_releases import do_import_mind2web
from annotation.actions.exports.releases import NothingNew, do_import_weblinx
from annotation.lib import release_archive
from annotation.lib.mind2web_release import SPLIT_FILE
from annotation.models import ImportJob, JobStatus

from ..runners import Progress, finish_clean, run_job

UNPACK_SHARE = 0.1  # of the progress bar: copying and unpacking the archive; the rest is importing its demos


def run_import(job_id: int) -> None:
    run_job(ImportJob, job_id, import_release)


def import_release(job: ImportJob, workdir) -> None:
    """Unpack, import, finish; a release refused as a whole fails the job with the reason (nothing imported)."""
    try:
        single = is_single_file(job.format, job.archive_name)
        archive = workdir / "release" / Path(job.archive_name).name if single else workdir / "upload"
        archive.parent.mkdir(parents=True, exist_ok=True)
        try:
            with default_storage.open(job.archive.name, "rb") as source, archive.open("wb") as target:
                shutil.copyfileobj(source, target, 1024 * 1024)
        except FileNotFoundError:  # the error would name the storage's path on the server
            finish_clean(job, workdir, JobStatus.FAILED, error="the uploaded archive is gone: upload the release again")
            return
        if single:
            root = archive.parent
        else:
            try:
                root = release_archive.unpack(
                    archive, workdir / "release", settings.IMPORT_MAX_UNPACKED_BYTES, LAYOUTS[job.format]
                )
            except release_archive.BadArchive as error:
                finish_clean(job, workdir, JobStatus.FAILED, error=f"not a {FORMATS[job.format]} release: {error}")
                return
            archive.unlink()
        progress = Progress(job, UNPACK_SHARE, 1 - UNPACK_SHARE)
        progress(0, force=True)
        try:
            report = run_format(job, root, lambda done, total: progress(done / total))
        except ActionError as error:  # not a release, or nothing new (``NothingNew`` lists every item with why)
            report = {**error.report.as_dict(), "errors": error.errors} if isinstance(error, NothingNew) else {}
            finish_clean(job, workdir, JobStatus.FAILED, error=error.detail, report=report or {"errors": error.errors})
            return
        failed = report.demos == 0
        status = JobStatus.FAILED if failed else JobStatus.DONE
        error = "nothing was imported; see the report's skipped items" if failed else ""
        finish_clean(job, workdir, status, report=report.as_dict(), error=error)
    finally:
        default_storage.delete(job.archive.name)


def run_format(job: ImportJob, root: Path, progress):
    if job.format == "mind2web":
        return do_import_mind2web(split_files(root), job.project, job.owner, progress)
    return do_import_weblinx(root, job.project, job.owner, progress)


def split_files(root: Path) -> list:
    """The Mind2Web split files anywhere in the unpacked release (``train.json``, ``train/train_0.json``...)."""
    return sorted(path for path in root.rglob("*.json") if path.is_file() and SPLIT_FILE.fullmatch(path.name))
