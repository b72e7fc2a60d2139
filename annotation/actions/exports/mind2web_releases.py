"""Importing a released Mind2Web benchmark (its split JSON files) into a project, for re-curation
(docs/recuration.md).

The files are read (``annotation/lib/mind2web_release.py``) and every task checked before anything is written: its
pages, boxes and MHTML snapshots as the recorder's uploads are checked, its turns by the ingest schema. Each task is
then one task-mode demonstration written in its own transaction through the recording path, stored as a recorded
Mind2Web demonstration is (a browser turn per action, with its page, boxes and acted element), so review,
verification and the Mind2Web export read it unchanged. What the WebLINX import does for a demo it does for a task:
the release id as ``source_id`` (here ``annotation_id``), the split as a fixed split, an id in the project already
skipped (nothing new: 409), the report (``ImportReport``). The task's JSON object is kept byte for byte as a blob
(``source["files"]["task.json"]``) unless secrets were masked in it; its website, domain and subdomain are the
project's ``Website`` of that name.
"""

import copy
import datetime as dt
import hashlib
import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from ...lib import schema
from ...lib.formats import mind2web_task_id
from ...lib.mind2web_release import BadTask, Mind2WebRelease, ReleaseTask, TaskRef, load_task, read_release, task_name
from ...lib.weblinx_release import NotARelease
from ...models import DemoMode, Demonstration, DemoStatus, Project, Website
from ..errors import ActionError, ValidationFailed
from ..recordings import check_blob_references, do_finish_recording, do_ingest_turns, do_start_recording
from ..recordings.blobs import check_blob_bytes, do_store_blob, do_store_parsed_json
from .releases import ImportReport, check_something_new, fix_split, present_ids

MAX_RELEASE_TASKS = 10_000  # tasks per import (Mind2Web has 2,350)
MAX_SPLIT_FILE_BYTES = 1024**3  # one split file, parsed whole (Mind2Web ships its splits as files of less)
MHTML = schema.SNAPSHOT_MEDIA_TYPE


@dataclass
class CheckedTask:
    task: ReleaseTask
    turns: list  # recorder turns, pages, boxes and snapshots as sha256s
    blobs: dict = field(default_factory=dict)  # sha256 -> (bytes or path, media type)


def check_mind2web_release(paths: list) -> Mind2WebRelease:
    """The split files read; 400 naming the first missing or wrong part when one is not a split file."""
    try:
        return read_release(paths, MAX_RELEASE_TASKS, MAX_SPLIT_FILE_BYTES)
    except NotARelease as error:
        raise ValidationFailed(
            f"not a Mind2Web release: {error}; nothing was imported", [{"field": error.part, "message": error.message}]
        ) from None


def check_task_files(task: ReleaseTask, project: Project) -> CheckedTask:
    """Each page, boxes file and snapshot checked as an upload is; the turns pointed at their sha256s and checked."""
    checked, turns = CheckedTask(task, []), copy.deepcopy(task.turns)
    for n, turn in enumerate(turns):
        where = f"actions[{n}]"
        if n in task.pages:
            page, boxes = task.pages[n]
            turn["page"] = keep(checked, page, "text/html", f"{where}.raw_html")
            turn["bboxes"] = keep(checked, boxes, "application/json", f"{where}.raw_html (boxes)")
        if n in task.snapshots:
            data = task.snapshots[n].read_bytes()
            turn["arguments"]["properties"] = {"mhtml": keep(checked, data, MHTML, f"{where} snapshot")}
        errors = schema.validate_turn(turn, where)
        if errors:
            raise ValidationFailed(f"{errors[0].field}: {errors[0].message}")
    errors = check_blob_references(turns, project, {sha: media for sha, (_, media) in checked.blobs.items()})
    if errors:
        raise ValidationFailed(f"{errors[0].field}: {errors[0].message}")
    checked.turns = turns
    return checked


def keep(checked: CheckedTask, data: bytes, media_type: str, where: str) -> str:
    """``data`` checked as an upload of ``media_type`` is (size, content) and kept for the write; its sha256."""
    if len(data) > settings.INGEST_MAX_BLOB_BYTES:
        raise ValidationFailed(f"{where}: {len(data)} bytes; at most {settings.INGEST_MAX_BLOB_BYTES} allowed")
    try:
        check_blob_bytes(data, media_type)
    except ValidationFailed as error:
        raise ValidationFailed(f"{where}: {error.detail}") from None
    sha = hashlib.sha256(data).hexdigest()
    checked.blobs[sha] = (data, media_type)
    return sha


def check_task(ref: TaskRef, project: Project) -> CheckedTask:
    """The task read and its files checked; ``ValidationFailed`` saying where and why it fails."""
    try:
        return check_task_files(load_task(ref), project)
    except BadTask as problem:
        raise ValidationFailed(str(problem)) from None


def check_mind2web_import(project: Project, release: Mind2WebRelease) -> tuple[list, ImportReport]:
    """Every task checked before anything is written: where the ones to write are, and a report listing the others
    (a task is read again when written: one task's pages in memory at a time)."""
    report, names = ImportReport(), {ref: task_name(ref.original()) for ref in release.tasks}
    present = present_ids(project, [name for name in names.values() if name])
    present.update(recorded_task_ids(project))
    ready, seen, there = [], {}, []
    for ref in release.tasks:
        name = names[ref]
        if name.lower() in present:
            report.skipped.append({"item": name, "why": f"{present[name.lower()]}; not imported"})
            there.append(name)
        elif name and name.lower() in seen:
            but = " (ids equal but for case)" if seen[name.lower()] != name else ""
            why = f"{ref.where}: the release has task {seen[name.lower()]} already{but}"
            report.skipped.append({"item": name, "why": f"{why}; not imported"})
        else:
            seen[name.lower()] = name
            try:
                check_task(ref, project)
                ready.append(ref)
            except ValidationFailed as error:
                report.skipped.append({"item": name or ref.where, "why": error.detail})
    check_something_new(project, ready, report, there, "task")
    return ready, report


def recorded_task_ids(project: Project) -> dict:
    """``{annotation_id: why}`` of the ids a Mind2Web export gives the project's recorded demos (derived from their
    names): a release task with one of them would be exported as a second task of that id."""
    recorded = Demonstration.objects.filter(project=project, source_id="").values_list("name", flat=True)
    return {mind2web_task_id(name): f"the Mind2Web export gives recorded demo {name} this id" for name in recorded}


def do_import_mind2web(
    paths: list, project: Project, by_user, progress: Callable[[int, int], None] = lambda done, total: None
) -> ImportReport:
    """Import the Mind2Web split files ``paths`` into ``project`` as demos demonstrated by ``by_user``.

    Raises ``ValidationFailed`` (a file is not a split file) or ``NothingNew`` (nothing left, some imported already)
    with nothing written; otherwise returns the report. ``progress(done, total)`` is called after each task."""
    ready, report = check_mind2web_import(project, check_mind2web_release([Path(p) for p in paths]))
    for done, ref in enumerate(ready, start=1):
        name = task_name(ref.original())
        try:
            write_task(check_task(ref, project), project, by_user, report)
        except IntegrityError:  # the same task imported meanwhile by someone else
            report.skipped.append({"item": name, "why": "imported into this project meanwhile"})
        except ActionError as error:  # a file changed or storage failed between the check and the write
            report.skipped.append({"item": name, "why": error.detail})
        progress(done, len(ready))
    return report


def write_task(checked: CheckedTask, project: Project, user, report: ImportReport) -> None:
    """One task in one transaction: its blobs, the recording and its turns, its website, release facts, split."""
    task = checked.task
    with transaction.atomic():
        for sha, (data, media_type) in checked.blobs.items():
            do_store_blob(sha, media_type, io.BytesIO(data), len(data), project, user)
        website = website_of(project, task)
        start = dt.datetime.now(dt.UTC)
        row, _ = do_start_recording(
            user,
            project,
            client_id=f"import:{uuid.uuid4().hex}",
            mode=DemoMode.TASK,
            task_description=task.task,
            websites=[website.name],
            category=task.domain,
            subcategory=task.subdomain,
            recording_start=start,
        )
        turns = copy.deepcopy(checked.turns)
        do_ingest_turns(row, turns, checked=True)  # masks secrets and password values in place
        do_finish_recording(row, recording_end=start + dt.timedelta(seconds=len(turns)))
        source = {"format": "mind2web", "id": task.id, "split": task.split, "website": website.name, "files": {}}
        if task.masked or turns != checked.turns:  # secrets masked: the release's object is not kept (regenerated)
            source["masked"] = True
        else:
            source["files"]["task.json"] = do_store_parsed_json(task.original, project, user).sha256
        Demonstration.objects.filter(pk=row.pk).update(source_id=task.id, source=source, status=DemoStatus.RECORDED)
        fix_split(project, "mind2web", row.name, task.split)
    report.demos += 1
    report.turns += len(turns)
    report.pages += len(task.pages)
    report.imported.append({"item": task.id, "demo": row.name, "split": task.split})
    report.notes += [{"item": task.id, "note": note} for note in task.notes]


def website_of(project: Project, task: ReleaseTask) -> Website:
    """The project's website of the task's name, created with its domain and subdomain when new."""
    website, _ = Website.objects.get_or_create(
        project=project,
        name=task.website,
        defaults={"url": f"https://{task.website}/", "domain": task.domain, "subdomain": task.subdomain},
    )
    return website
