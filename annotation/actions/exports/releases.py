"""Importing a released benchmark (WebLINX) into a project, for re-curation (docs/recuration.md).

The release is read (``annotation/lib/weblinx_release.py``) and every demo checked before anything is written: its
files as the recorder's uploads are checked (size, hash, PNG, UTF-8 HTML, bboxes), its turns by the ingest schema.
Then each demo is written in its own transaction through the recording path (blobs, start, turns, finish), so its
turns are raw turns like recorded ones, never changed afterwards: review edits layer over them. A demo that fails
is listed with why and skipped; nothing of it is stored. The release's splits become the project's fixed splits.

The demo keeps its release id as ``source_id`` (its platform name is a new one: names are unique across projects).
A release id already in the project is skipped and listed; when nothing is left to import the import is refused
(409), so importing the same release twice never duplicates a demo.
"""

import copy
import datetime as dt
import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower

from ...lib import schema
from ...lib.weblinx_release import NotARelease, Release, ReleaseDemo, read_release
from ...models import DemoMode, Demonstration, DemoStatus, Project, SplitConfig
from ..errors import ActionError, Conflict, ValidationFailed
from ..manage.access import check_project_role
from ..recordings import check_blob_references, do_finish_recording, do_ingest_turns, do_start_recording
from ..recordings.blobs import check_blob_bytes, do_store_blob, do_store_parsed_json
from .jobs import EXPORT_ROLES

log = logging.getLogger(__name__)

IMPORT_CANNOT = "import a release (needs researcher or admin)"
MAX_RELEASE_DEMOS = 5000  # demo folders per import (WebLINX has 2,337 demos)
MAX_DEMO_TURNS = 5000  # turns per demo
MAX_JSON_BYTES = 16 * 1024 * 1024  # replay.json, metadata.json, form.json, splits.json each
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)  # times a release may give: 1970 to 9998, in UTC
LATEST_MS = (LATEST - EPOCH) // dt.timedelta(milliseconds=1)
DOCUMENTS = ("replay.json", "metadata.json", "form.json", "invalid.json")  # kept byte for byte, with the captures


@dataclass
class ImportReport:
    """What an import did: counts of what was written, the demos written, and each item skipped or noted, with why."""

    demos: int = 0
    turns: int = 0
    screenshots: int = 0
    pages: int = 0
    imported: list = field(default_factory=list)  # [{"item": release id, "demo": platform name, "split"}]
    skipped: list = field(default_factory=list)  # [{"item", "why"}]
    notes: list = field(default_factory=list)  # [{"item", "note"}]: what was left out of an imported demo

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CheckedDemo:
    demo: ReleaseDemo
    turns: list  # recorder turns, captures as sha256s
    blobs: dict  # sha256 -> (path, media type, size)
    documents: tuple = ()  # the JSON files of DOCUMENTS the demo has (read again when written)
    files: dict = field(default_factory=dict)  # relative path -> sha256 of every file kept (the export's originals)


def check_project_for_import(user, project_name: str) -> Project:
    """The project ``user`` may import into: 404 for non-members, 403 for roles other than researcher and admin."""
    return check_project_role(user, project_name, EXPORT_ROLES, IMPORT_CANNOT)


def check_release(directory: Path) -> Release:
    """The release read; 400 naming the first missing or wrong part when the directory is not one."""
    try:
        return read_release(Path(directory), MAX_RELEASE_DEMOS, MAX_DEMO_TURNS, MAX_JSON_BYTES)
    except NotARelease as error:
        raise ValidationFailed(
            f"not a WebLINX release: {error}; nothing was imported", [{"field": error.part, "message": error.message}]
        ) from None


def check_demo_files(demo: ReleaseDemo, project: Project) -> CheckedDemo:
    """Every file the demo's turns use, checked as an upload is (size, content); turns pointed at their sha256s; its
    turns in time order (the platform orders a demo's turns by time)."""
    check_turn_order(demo)
    blobs, shas = {}, {}
    for relative, media_type in demo.files.items():
        path = demo.folder / relative
        size = path.stat().st_size
        if size > settings.INGEST_MAX_BLOB_BYTES:
            raise ValidationFailed(f"{relative}: {size} bytes; at most {settings.INGEST_MAX_BLOB_BYTES} allowed")
        if size == 0:
            raise ValidationFailed(f"{relative}: empty")
        data = path.read_bytes()
        try:
            check_blob_bytes(data, media_type)
        except ValidationFailed as error:
            raise ValidationFailed(f"{relative}: {error.detail}") from None
        sha = hashlib.sha256(data).hexdigest()
        blobs[sha], shas[relative] = (path, media_type, size), sha
    turns = [{**turn, **{key: shas[turn[key]] for key in schema.BLOB_FIELDS if turn.get(key)}} for turn in demo.turns]
    errors = check_blob_references(turns, project, {sha: media for sha, (_, media, _) in blobs.items()})
    if errors:
        raise ValidationFailed(f"{errors[0].field}: {errors[0].message}")
    documents = tuple(name for name in DOCUMENTS if (demo.folder / name).is_file())
    files = {**shas, **{name: hashlib.sha256((demo.folder / name).read_bytes()).hexdigest() for name in documents}}
    return CheckedDemo(demo, turns, blobs, documents, dict(sorted(files.items())))


def check_turn_order(demo: ReleaseDemo) -> None:
    times = [turn.get("timestamp") for turn in demo.turns]
    times = [time if isinstance(time, int | float) and not isinstance(time, bool) else None for time in times]
    for n in range(1, len(times)):
        if times[n] is not None and times[n - 1] is not None and times[n] < times[n - 1]:
            why = f"replay.json: turn {n}'s timestamp {times[n]} is before turn {n - 1}'s {times[n - 1]}"
            raise ValidationFailed(f"{why} (the platform keeps turns in time order)")


def present_ids(project: Project, ids) -> dict:
    """``{release id, case-folded: what it clashes with}``: ids imported into ``project`` already, and demo names of
    the project (an export names an imported demo by its release id, a recorded one by its name; folders whose names
    differ only in case overwrite each other on some systems)."""
    folded = sorted({demo_id.lower() for demo_id in ids})
    rows = Demonstration.objects.annotate(lid=Lower("source_id"), lname=Lower("name")).filter(project=project)
    present = {}
    for source_id, name in rows.filter(lid__in=folded).values_list("source_id", "name"):
        present[source_id.lower()] = f"already imported into this project as demo {name}"
    for (name,) in rows.filter(lname__in=folded).values_list("name"):
        present.setdefault(name.lower(), f"the project has a demo named {name} already")
    return present


def check_import(project: Project, release: Release) -> tuple[list, ImportReport]:
    """Every demo checked before anything is written: the ones to write, and a report listing the others."""
    report = ImportReport(skipped=list(release.skipped))
    present = present_ids(project, [demo.id for demo in release.demos])
    ready, seen, there = [], {}, []
    for demo in release.demos:
        if demo.id.lower() in present:
            report.skipped.append({"item": demo.id, "why": f"{present[demo.id.lower()]}; not imported"})
            there.append(demo.id)
            continue
        if demo.id.lower() in seen:
            why = f"differs from demo {seen[demo.id.lower()]} of this release only in case; not imported"
            report.skipped.append({"item": demo.id, "why": why})
            continue
        seen[demo.id.lower()] = demo.id
        try:
            ready.append(check_demo_files(demo, project))
        except ValidationFailed as error:
            report.skipped.append({"item": demo.id, "why": error.detail})
    check_something_new(project, ready, report, there)
    return ready, report


class NothingNew(Conflict):
    """409, nothing written: no item of the release is left to import, some because they are in the project
    already; ``report`` lists every item with why."""

    def __init__(self, detail: str, errors: list, report: ImportReport):
        super().__init__(detail, errors)
        self.report = report


def check_something_new(project: Project, ready: list, report: ImportReport, there: list, what: str = "demo") -> None:
    """``NothingNew`` (409) when nothing is left to import and some of the release's items (``there``) are in the
    project already."""
    if ready or not there:
        return
    others = len(report.skipped) - len(there)
    detail = f"every {what} of this release is in project {project.name!r} already; nothing was imported"
    if others:
        detail = (
            f"no {what} of this release is left to import: {len(there)} in project {project.name!r} already, "
            f"{others} skipped for other reasons (see the report); nothing was imported"
        )
    errors = [{"field": "demonstrations", "message": f"already there: {', '.join(sorted(there))}"}]
    raise NothingNew(detail, errors, report)


def do_import_weblinx(
    directory: Path, project: Project, by_user, progress: Callable[[int, int], None] = lambda done, total: None
) -> ImportReport:
    """Import the WebLINX release in ``directory`` into ``project`` as demos navigated by ``by_user``.

    Raises ``ValidationFailed`` (not a release) or ``NothingNew`` (nothing left, some imported already) with nothing
    written; otherwise returns the report. ``progress(done, total)`` is called after each demo."""
    ready, report = check_import(project, check_release(directory))
    for done, checked in enumerate(ready, start=1):
        try:
            write_demo(checked, project, by_user, report)
        except IntegrityError:  # the same release id imported meanwhile by someone else
            report.skipped.append({"item": checked.demo.id, "why": "imported into this project meanwhile"})
        except ActionError as error:  # a file changed or storage failed between the check and the write
            report.skipped.append({"item": checked.demo.id, "why": error.detail})
        progress(done, len(ready))
    return report


def write_demo(checked: CheckedDemo, project: Project, user, report: ImportReport) -> None:
    """One demo in one transaction: its blobs, the recording and its turns, its release facts and fixed split."""
    demo = checked.demo
    with transaction.atomic():
        for sha, (path, media_type, size) in checked.blobs.items():
            with path.open("rb") as stream:
                do_store_blob(sha, media_type, stream, size, project, user)
        for name in checked.documents:
            if do_store_parsed_json((demo.folder / name).read_bytes(), project, user).sha256 != checked.files[name]:
                raise ValidationFailed(f"{name}: changed while it was imported")
        fields = demo_fields(demo)
        # A client id no client can guess: a recording someone started before is never taken over.
        row, _ = do_start_recording(user, project, client_id=f"import:{uuid.uuid4().hex}", **fields)
        turns = copy.deepcopy(checked.turns)
        given = json.dumps(turns, sort_keys=True)
        do_ingest_turns(row, turns, checked=True)  # masks secrets and password values in place
        files = checked.files
        if json.dumps(turns, sort_keys=True) != given:  # masked: the release's replay.json is not exported as it is
            files = {path: sha for path, sha in files.items() if path != "replay.json"}
        do_finish_recording(row, recording_end=fields["recording_end"])
        status = DemoStatus.REJECTED if demo.invalid is not None else DemoStatus.RECORDED
        Demonstration.objects.filter(pk=row.pk).update(
            source_id=demo.id, source=source_facts(demo, files, masked=files is not checked.files), status=status
        )
        if demo.split:
            fix_split(project, "weblinx", row.name, demo.split)
    report.demos += 1
    report.turns += len(checked.turns)
    report.screenshots += sum(1 for turn in checked.turns if turn.get("screenshot"))
    report.pages += sum(1 for turn in checked.turns if turn.get("page"))
    report.imported.append({"item": demo.id, "demo": row.name, "split": demo.split})
    report.notes += [{"item": demo.id, "note": note} for note in demo.notes]


def fix_split(project: Project, scheme: str, name: str, split: str) -> None:
    """The demo keeps the release's ``split`` in ``scheme`` whatever the project's split rules say."""
    config = SplitConfig.for_project(project)
    config = SplitConfig.objects.select_for_update().get(pk=config.pk)
    config.fixed_splits.setdefault(scheme, {})[name] = split
    config.save(update_fields=["fixed_splits", "updated_at"])


def source_facts(demo: ReleaseDemo, files: dict, masked: bool = False) -> dict:
    """What the release said of the demo that has no column: its files' facts as given, the broken screenshots, and
    ``files``: each file kept, ``{path in the demo folder: sha256}`` (an unchanged demo is exported from them);
    ``masked``: the import masked secrets in its turns (so its replay.json is not kept)."""
    facts = {"format": "weblinx", "id": demo.id, "metadata": demo.metadata, "form": demo.form, "files": files}
    if masked:
        facts["masked"] = True
    if demo.invalid is not None:
        facts["invalid"] = demo.invalid
    if demo.broken:
        facts["broken_screenshots"] = demo.broken
    return facts


def demo_fields(demo: ReleaseDemo) -> dict:
    """The demonstration's columns from ``metadata.json`` and ``form.json`` (as the WebLINX export writes them)."""
    meta, form = demo.metadata, demo.form
    websites = form.get("websites") if isinstance(form.get("websites"), list) else [form.get("website")]
    start = moment(meta.get("recordingStart"), meta.get("recordingStartISO")) or dt.datetime.now(dt.UTC)
    return {
        "mode": form.get("mode") if form.get("mode") in DemoMode.values else DemoMode.CHAT,
        "task_description": text(form.get("description")) or first_task(form),
        "websites": [site for site in websites if isinstance(site, str) and site],
        "category": text(form.get("category"))[:100],
        "subcategory": text(form.get("subcategory"))[:100],
        "region": text(form.get("region"))[:100],
        "instructor_sees_screen": form.get("instructor_sees_screen") is not False,
        "recording_start": start,
        "recording_end": moment(meta.get("recordingEnd"), meta.get("recordingEndISO")) or start,
        "timezone_offset_minutes": whole(meta.get("timezoneOffsetMinutes")),
        "user_agent": text(meta.get("userAgent"))[:500],
        "recorder_version": text(meta.get("recorderVersion") or meta.get("version"))[:32],
    }


def text(value) -> str:
    return value if isinstance(value, str) else ""


def first_task(form: dict) -> str:
    tasks = form.get("tasks")
    return text(tasks[0]) if isinstance(tasks, list) and tasks else ""


def whole(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 24 * 60 else 0


def moment(epoch_ms, iso) -> dt.datetime | None:
    """A time from milliseconds since the epoch, else from ISO 8601, else None."""
    if isinstance(epoch_ms, int | float) and not isinstance(epoch_ms, bool) and 0 <= epoch_ms < LATEST_MS:
        return EPOCH + dt.timedelta(milliseconds=epoch_ms)
    try:
        parsed = dt.datetime.fromisoformat(iso.replace("Z", "+00:00")) if isinstance(iso, str) else None
        parsed = parsed if parsed is None or parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        return parsed if parsed is None or EPOCH <= parsed.astimezone(dt.UTC) < LATEST else None
    except (ValueError, OverflowError):
        return None
