"""What an export or an evaluation job does on the worker (``workers/runners.py`` runs it: claim, heartbeat, finish).

Exports are written into a private temporary folder, archived there, and only then moved into storage and
marked done in one conditional update; a failed, cancelled or killed job never leaves a downloadable file.
"""

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

from annotation.actions.forms import split_tasks
from annotation.actions.quality.demos import demo_quality_items
from annotation.lib.formats import ARCHIVE_MEDIA_TYPES
from annotation.models import Batch, BatchKind, Evaluation, ExportJob, JobStatus
from annotation.store.blobstore import is_s3

from ..runners import JobStopped, Progress, finish_clean, run_job, sweep_job_folders
from . import dataset, form_dataset, form_quality
from .archive import DeflatedFiles, HashingWriter, file_sha256, write_archive
from .exporters import get_exporter, turkingbench
from .quality import write_quality_report
from .s3upload import MultipartWriter, abandoned_uploads, abort_upload

log = logging.getLogger(__name__)
EXPORT_SHARE = 0.6  # of the progress bar: writing the export; the rest is archiving it
EXPORTS_PREFIX = "exports/"


def sweep_export_folders() -> int:
    """What beat runs every EXPORT_SWEEP_SECONDS: the work folders of jobs no longer running (``sweep_job_folders``),
    then what a killed export worker left in storage (``sweep_export_files``). Returns how many folders and files
    were removed."""
    return sweep_job_folders() + sweep_export_files()


def sweep_export_files() -> int:
    """Remove what a killed export worker left in storage: archives under ``exports/<pk>/`` that no finished job
    names (killed between upload and marking the job done), and on S3 incomplete multipart uploads of jobs that are
    not running (killed mid-upload). Listed before the jobs are read, as for the folders. Returns how many."""
    uploads = list(abandoned_uploads(default_storage, EXPORTS_PREFIX)) if is_s3(default_storage) else []
    stored = stored_exports()
    running = set(ExportJob.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))
    published = set(ExportJob.objects.filter(status=JobStatus.DONE).exclude(file="").values_list("file", flat=True))
    removed = 0
    for key, upload_id in uploads:
        if export_pk(key.rpartition(EXPORTS_PREFIX)[2]) not in running:
            abort_upload(default_storage, key, upload_id)
            log.info("aborted the incomplete upload of %s (its job is not running)", key)
            removed += 1
    for name in stored:
        if name not in published and export_pk(name.removeprefix(EXPORTS_PREFIX)) not in running:
            default_storage.delete(name)
            log.info("removed %s (no finished export job names it)", name)
            removed += 1
    return removed


def stored_exports() -> list[str]:
    """Storage names of every file under ``exports/<pk>/``."""
    try:
        folders, _ = default_storage.listdir(EXPORTS_PREFIX)
    except FileNotFoundError:
        return []
    return [
        f"{EXPORTS_PREFIX}{pk}/{file}" for pk in folders for file in default_storage.listdir(EXPORTS_PREFIX + pk)[1]
    ]


def export_pk(relative: str) -> int | None:
    """The job pk of ``<pk>/<file>`` (a name under ``exports/``), None when it is not one."""
    pk = relative.partition("/")[0]
    return int(pk) if pk.isdecimal() else None


def run_export(job_id: int) -> None:
    run_job(ExportJob, job_id, export_and_publish)


def count_demos(project, scheme: str, statuses, splits, names=()) -> int:
    """How many demos an export will write (for the progress bar)."""
    split = dataset.split_of(project, scheme)
    demos = dataset.selected_demos(project, statuses)
    if names:
        demos = demos.filter(name__in=names)
    return max(1, sum(1 for demo in demos if not splits or split(demo) in splits))


def export_and_publish(job: ExportJob, workdir: Path) -> None:
    out = workdir / job.filename.removesuffix(f".{job.archive_format}")
    if job.format == "turkingbench":
        return export_form_batches(job, out, workdir)
    total = count_demos(job.project, job.format, job.statuses, job.splits, job.demos)
    exporting = Progress(job, 0.0, EXPORT_SHARE)
    demos = dataset.export_demos(job.project, job.format, job.statuses, job.splits, names=job.demos)
    # a tar.gz takes the largest files (Mind2Web's split files) deflated as they were written
    deflated = DeflatedFiles(workdir / "deflated") if job.archive_format == "tar.gz" else None
    with dataset.storage_blobs(workdir / "blobs", planned=True) as blobs:
        # read ahead of the exporter; on S3 each demo's blobs read from its pack ahead of it too. Closed here, not
        # when the generator is collected: an exporter's exception (kept by a logger, or alive while the job is
        # marked failed) holds this frame, and with it a thread still reading on its own connection
        with contextlib.closing(dataset.read_ahead(blobs.prefetch(demos))) as ahead:
            exporter = get_exporter(job.format, deflated)
            counts = export_with_quality(
                exporter, ahead, out, blobs, lambda done: exporting(done / total), job.project.name
            )
        # archived from the blobs' own files (local storage) or from the cache as the last packs arrive (S3)
        archive_and_publish(job, out, workdir, counts, blobs, deflated.files() if deflated is not None else None)


def export_with_quality(exporter, demos, out: Path, blobs, progress, project: str) -> dict:
    """Write ``demos`` with ``exporter`` under ``out`` and the quality report ``out/quality.json`` beside them
    (docs/quality.md); the export's counts, with the report's totals under ``"quality"``."""
    exported = {}  # demo name → (its id in the export, turns exported), in export order

    def noting(demos):
        for demo in demos:
            if (exported_id := exporter.exported_id(demo)) is not None:
                exported[demo.name] = (exported_id, len(demo.turns))
            yield demo

    counts = exporter.export(noting(demos), out, blobs, progress).as_dict()
    items, extra = demo_quality_items(exported)
    extras = getattr(exporter, "quality_extras", {})  # per item, what a format adds (Mind2Web: its raw dump)
    for item in items:
        item.update(extras.get(item["id"], {}))
    counts["quality"] = write_quality_report(out, exporter.format, project, items, extra)
    return counts


def export_form_batches(job: ExportJob, out: Path, workdir: Path) -> None:
    """A TurkingBench export of the project's form batches (``workers.exports.exporters.turkingbench``) with the
    job's filters: its batches (none stored: every form batch, jobs made before the choice), the review states of
    the work written, gold rows, exact cells."""
    lists = form_dataset.split_lists(job.project)
    batch_ids = list(job.batches.values_list("pk", flat=True))
    exported = form_dataset.selected_batches(job.project, lists, job.splits, batch_ids)
    total = max(1, exported.count())
    exporting = Progress(job, 0.0, EXPORT_SHARE)
    batches = form_dataset.export_batches(job.project, job.include_gold, job.splits, batch_ids, job.review_states)
    selected = {name: lists[name] for name in job.splits if name in lists} if job.splits else lists
    counts = turkingbench.export(batches, out, selected, lambda done: exporting(done / total), job.exact_cells)
    # quality.json: agreement and aggregated answers per exported task (docs/quality.md)
    counts["quality"] = form_quality.write_form_quality(job.project, exported, out, job.include_gold)
    archive_and_publish(job, out, workdir, counts)


def move_into_storage(path: Path, name: str) -> str:
    """Move a finished file into storage under ``name``: a rename on local disk (atomic), else an upload."""
    try:
        target = Path(default_storage.path(name))
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        return name
    except (NotImplementedError, OSError):  # remote storage, or another file system
        with path.open("rb") as handle:
            return default_storage.save(name, File(handle))


def archive_and_publish(
    job: ExportJob, out: Path, workdir: Path, counts: dict, blobs=None, deflated: dict | None = None
) -> None:
    """Archive the export folder ``out`` into storage under ``exports/<pk>/<filename>`` and mark the job done; on S3
    the archive is uploaded while it is made (``archive_into_s3``), else written beside ``out`` and moved in.
    ``blobs``: the export's planned blobs (``PlannedBlobs``, or ``dataset.RemoteStorageBlobs`` still fetching them
    into its cache), archived from their own files (``planned_blobs``); every fetch has ended before the job is
    published. ``deflated``: files kept deflated (``archive.DeflatedFiles``), taken as they are."""
    name, archiving = export_name(job), Progress(job, EXPORT_SHARE, 1 - EXPORT_SHARE)
    if is_s3(default_storage):
        counts["files"], sha256, size = archive_into_s3(job, out, name, archiving, blobs, deflated)
    else:
        archive = workdir / job.filename
        counts["files"], sha256, size = write_local_archive(
            out, archive, job.archive_format, archiving, blobs, deflated
        )
        wait_for_fetches(blobs)
        Progress(job, 0.99, 0)(1, force=True)  # last chance to notice a cancel before publishing
        name = move_into_storage(archive, name)
    if not finish_clean(job, workdir, JobStatus.DONE, file=name, sha256=sha256, size=size, counts=counts):
        default_storage.delete(name)  # cancelled at the last moment: nothing may stay downloadable
        raise JobStopped(f"job {job.pk} was cancelled before publishing")


def write_local_archive(
    out: Path, archive: Path, archive_format: str, progress: Progress, blobs, deflated: dict | None = None
) -> tuple[int, str, int]:
    """The archive of ``out`` written at ``archive``; (files archived, sha256, size). A tar.gz is hashed as it is
    written; a zip, which goes back into its file to finish each entry, is read again."""
    planned = planned_blobs(blobs)
    if archive_format != "tar.gz":
        manifest = write_archive(out, archive, archive_format, progress, **planned)
        return len(manifest), file_sha256(archive), archive.stat().st_size
    with archive.open("wb") as handle:
        output, top = HashingWriter(handle), archive.name.removesuffix(".tar.gz")
        manifest = write_archive(out, output, archive_format, progress, top=top, deflated=deflated, **planned)
    return len(manifest), output.digest.hexdigest(), output.size


def planned_blobs(blobs) -> dict:
    """``write_archive``'s arguments for an export's planned blobs: read from their own files (local storage), or
    from the cache as they arrive and not hashed again (remote storage: ``dataset.RemoteStorageBlobs``)."""
    if blobs is None:
        return {}
    if isinstance(blobs, dataset.RemoteStorageBlobs):
        return {"planned": blobs.end_plan(), "known": blobs.checked, "arriving": blobs}
    return {"planned": blobs.files(), "known": blobs.known()}


def wait_for_fetches(blobs) -> None:
    """Fetches no file needed (remote blobs read ahead for nothing) end before publishing; raise their failure."""
    if isinstance(blobs, dataset.RemoteStorageBlobs):
        blobs.wait_all()


def export_name(job: ExportJob) -> str:
    return f"{EXPORTS_PREFIX}{job.pk}/{job.filename}"


def archive_into_s3(
    job: ExportJob, out: Path, name: str, progress: Progress, blobs=None, deflated: dict | None = None
) -> tuple[int, str, int]:
    """Stream the archive into an S3 multipart upload as it is made (no local archive, bounded memory); it appears
    under ``name`` only once complete. Returns (files archived, sha256, size)."""
    top = job.filename.removesuffix(f".{job.archive_format}")
    media_type = ARCHIVE_MEDIA_TYPES[job.archive_format]
    upload = MultipartWriter(default_storage, name, media_type, settings.S3_PART_BYTES, settings.S3_UPLOAD_CONCURRENCY)
    try:
        manifest = write_archive(
            out, upload, job.archive_format, progress, top=top, deflated=deflated, **planned_blobs(blobs)
        )
        wait_for_fetches(blobs)
        Progress(job, 0.99, 0)(1, force=True)  # last chance to notice a cancel before publishing
        upload.complete()
    except BaseException:
        upload.abort()
        raise
    return len(manifest), upload.digest.hexdigest(), upload.size


def run_evaluation(evaluation_id: int) -> None:
    run_job(Evaluation, evaluation_id, evaluate)


def evaluate(evaluation: Evaluation, workdir: Path) -> None:
    """Export the evaluated split with the same exporter researchers download, then score it."""
    from .metrics import mind2web, weblinx
    from .metrics.weblinx_data import split_turns

    if evaluation.format == "turkingbench":
        return evaluate_form_tasks(evaluation, workdir)

    out, splits, statuses = workdir / "data", [evaluation.split], dataset.DEFAULT_STATUSES
    total = count_demos(evaluation.project, evaluation.format, statuses, splits)
    exporting = Progress(evaluation, 0, 0.5)
    demos = dataset.export_demos(evaluation.project, evaluation.format, statuses, splits)
    with dataset.storage_blobs(workdir / "blobs") as blobs:
        demos = blobs.prefetch(demos)
        get_exporter(evaluation.format).export(demos, out, blobs, lambda done: exporting(done / total))
    if evaluation.format == "weblinx":
        results = weblinx.evaluate(out, evaluation.split, evaluation.predictions)  # the official protocol
        turns, outside = len(split_turns(out, evaluation.split)), len(results["outside"])
    else:
        records = json.loads((out / f"{evaluation.split}.json").read_text())
        results = mind2web.evaluate(records, evaluation.predictions)
        turns, outside = len(results["per_step"]), 0
    # The evaluators refuse repeated or unknown turns, so every prediction names a distinct turn of the split.
    results["coverage"] = {"turns": turns, "predicted": len(evaluation.predictions) - outside}
    finish_clean(evaluation, workdir, JobStatus.DONE, results=results, data_version=tree_sha256(out))


def tree_sha256(root: Path) -> str:
    """The data version of an export folder: sha256 over its files' relative paths and contents' sha256, in path
    order, so the same demos exported again give the same value and any change to them gives another."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root).as_posix()}\0{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def evaluate_form_tasks(evaluation: Evaluation, workdir: Path) -> None:
    """TurkingBench predictions: the form batches' gold rows written as a TurkingBench directory, the predictions
    applied on its pages in this worker's headless Chromium and scored by the official scorer (``agents``)."""
    from agents.offline import evaluate as score_predictions

    names = {entry["task"] for entry in evaluation.predictions}
    batches = Batch.objects.filter(project=evaluation.project, kind=BatchKind.FORM, name__in=names).order_by("name")
    if evaluation.split:  # checked when created; checked again in case the split lists changed since
        allowed = set(split_tasks(evaluation.project, evaluation.split))
        batches = [batch for batch in batches if batch.name in allowed]
    data = form_dataset.gold_directory(list(batches), workdir / "data")
    scoring = Progress(evaluation, 0, 1)
    results = score_predictions(
        data,
        evaluation.predictions,
        progress=lambda done, total: scoring(done / total),
        scripts=settings.TEMPLATE_SCRIPTS,
    )
    finish_clean(evaluation, workdir, JobStatus.DONE, results=results, data_version=tree_sha256(workdir / "data"))
