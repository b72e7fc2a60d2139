"""WebLINX export: ``splits.json`` and one folder per demonstration, loadable by the official ``weblinx`` package.

The layout is that of ``shared/specs/weblinx-format.md``; where the spec leaves a choice, what ``weblinx`` 0.3.2
reads decides it:

- ``Turn.validate`` wants ``action`` and ``state`` keys on browser turns, so a browser turn always has a ``state``
  dict (empty when nothing was captured). ``Turn.has_screenshot`` calls ``.get("state", {}).get(...)``, which fails
  on a null state, so a chat turn has no ``state`` key unless something was captured for it.
- Captures absent from a turn are left out of its state (``has_screenshot``/``has_html`` test ``is not None``).
- ``Turn.get_bboxes_path`` derives the bboxes file from the PAGE file's first number, so a turn's page, screenshot
  and bboxes files all carry N = the turn's position in ``replay.json``.
- ``Demonstration.list_all_screenshots`` only globs ``screenshot-*.png``, so screenshots are always named ``.png``.
- ``Demonstration.get_version`` does ``int()`` on every dot-separated part of ``metadata.json``'s ``version``.
- A turn's recorded traffic (step mode, or a project's ``record_traffic``) goes beside what the package reads:
  ``traffic/<N>.har`` (N as above), named by the archive's manifest, not by ``replay.json``.

Blobs are hard-linked (or copied) by the ``BlobSource``, never read here; JSON is ASCII (the package opens files
with the platform's default encoding), compact and with sorted keys, so the same demos give the same bytes.
"""

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from annotation.lib.splits import WEBLINX_SPLITS

from .base import BlobSource, ExportCounts, ExportDemo, ExportTurn, write_changes

REPLAY_VERSION = "1.0.0"
DEFAULT_VERSION = "1.0.0"
DOTTED_INTS = re.compile(r"[0-9]+(\.[0-9]+)*")
# A demo name becomes a folder name: refuse anything that could leave the export folder or need escaping.
SAFE_NAME = re.compile(r"[A-Za-z0-9_-]+")
SAFE_PATH = re.compile(r"((screenshots|pages|bboxes)/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*")
CAPTURE_FOLDERS = ("screenshots", "pages", "bboxes")
UPLOAD_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"  # what Demonstration.get_upload_date parses
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class WeblinxExporter:
    """Writes demonstrations in the WebLINX layout (see the module docstring and the format spec)."""

    format = "weblinx"
    splits = WEBLINX_SPLITS

    def export(
        self,
        demos: Iterable[ExportDemo],
        out: Path,
        blobs: BlobSource,
        progress: Callable[[int], None] = lambda done: None,
    ) -> ExportCounts:
        """Write ``demos`` under ``out`` (expected empty) and ``out/splits.json``; call ``progress`` per demo."""
        out = Path(out)
        root = out / "demonstrations"
        root.mkdir(parents=True, exist_ok=True)
        counts = ExportCounts(per_split={split: {"demos": 0, "turns": 0} for split in self.splits})
        names, seen = {split: [] for split in self.splits}, set()
        changes = []
        for demo in demos:
            folder = folder_name(demo)
            self.check_demo(demo, seen)
            seen.add(folder)
            counts.files += (
                write_original(demo, root / folder, blobs) if demo.original else write_demo(demo, root / folder, blobs)
            )
            names[demo.split].append(folder)
            counts.add_demo(demo.split, len(demo.turns))
            if demo.changes is not None:
                changes.append(demo.changes)
            progress(counts.demos)
        counts.files += write_changes(out, "weblinx", changes)
        # Written last: an export that failed half-way has no splits.json, so no loader mistakes it for complete.
        write_json(out / "splits.json", {split: sorted(members) for split, members in names.items()})
        counts.files += 1
        return counts

    def exported_id(self, demo: ExportDemo) -> str | None:
        """The demo's name in the export (its folder): every demo given is written."""
        return folder_name(demo)

    def check_demo(self, demo: ExportDemo, seen: set) -> None:
        """Refuse a demo whose split is unknown or whose name is unsafe or already exported (one folder each)."""
        if demo.split not in self.splits:
            raise ValueError(f"demo {demo.name!r}: unknown split {demo.split!r}; known: {', '.join(self.splits)}")
        folder = folder_name(demo)
        if not SAFE_NAME.fullmatch(folder):
            raise ValueError(f"demo name {folder!r} is not a safe folder name (letters, digits, _ and -)")
        if folder in seen:
            raise ValueError(f"demo name {folder!r} appears twice in the export")


def folder_name(demo: ExportDemo) -> str:
    """A demo imported from a release keeps its release id; any other is named as on the platform."""
    return demo.release_id or demo.name


def write_original(demo: ExportDemo, folder: Path, blobs: BlobSource) -> int:
    """An imported demo nobody changed: the release's own files, byte for byte; return how many."""
    for relative, sha256 in demo.original:
        if not SAFE_PATH.fullmatch(relative):  # kept by the import, which named them; checked all the same
            raise ValueError(f"demo {folder.name!r}: {relative!r} is not a path in its folder")
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        blobs.copy_to(sha256, folder / relative)
    return len(demo.original)


def write_demo(demo: ExportDemo, folder: Path, blobs: BlobSource) -> int:
    """Write one demonstration folder; return the number of files written."""
    folder.mkdir(exist_ok=True)
    for name in CAPTURE_FOLDERS:
        (folder / name).mkdir(exist_ok=True)
    turns, captures = [], []
    for n, turn in enumerate(demo.turns):  # N from the written position, whatever ExportTurn.index says
        record, files = turn_record(turn, n)
        turns.append(record)
        captures.extend(files)
    folders, base = set(CAPTURE_FOLDERS), os.fspath(folder)
    for sha256, relative in captures:
        if (parent := relative.partition("/")[0]) not in folders:  # traffic/ only when a turn has some
            (folder / parent).mkdir(exist_ok=True)
            folders.add(parent)
        blobs.copy_to(sha256, f"{base}/{relative}")  # a string: no Path made per file
    documents = {"replay.json": replay(demo, turns), "metadata.json": metadata(demo), "form.json": form(demo)}
    if demo.rejected:
        documents["invalid.json"] = {"reason": "rejected in review", "status": demo.status}
    for filename, document in documents.items():
        write_json(folder / filename, document)
    return len(captures) + len(documents)


def turn_record(turn: ExportTurn, n: int) -> tuple[dict, list]:
    """The replay.json entry of a turn written at position ``n``, and its ``(sha256, relative path)`` files."""
    state, files = capture_state(turn, n)
    record = {"type": turn.type, "timestamp": turn.timestamp}
    if turn.type == "chat":
        record.update(speaker=turn.speaker, utterance=turn.utterance)
        if state:
            record["state"] = state
        return record, files
    record["action"] = {"intent": turn.intent, "arguments": browser_arguments(turn.arguments)}
    record["state"] = state
    return record, files


def browser_arguments(arguments: dict) -> dict:
    """The turn's arguments, with the ``metadata`` dict the package's Turn properties expect on browser turns."""
    if isinstance(arguments.get("metadata"), dict):
        return arguments
    return {**arguments, "metadata": {}}


def capture_state(turn: ExportTurn, n: int) -> tuple[dict, list]:
    """The turn's ``state`` (file names of what was captured) and the files to write for it."""
    state, files = {}, []
    if turn.screenshot:
        state["screenshot"] = f"screenshot-{n}-0.png"
        # Only "good" screenshots are used by the modelling code; anything else a reviewer set means "broken".
        state["screenshot_status"] = "good" if turn.screenshot_status == "good" else "broken"
        files.append((turn.screenshot, f"screenshots/{state['screenshot']}"))
    if turn.page:
        state["page"] = f"page-{n}-0.html"
        files.append((turn.page, f"pages/{state['page']}"))
    if turn.bboxes:
        files.append((turn.bboxes, f"bboxes/bboxes-{n}.json"))
    if turn.har:  # not in the state: nothing the package reads changes
        files.append((turn.har, f"traffic/{n}.har"))
    return state, files


def replay(demo: ExportDemo, turns: list) -> dict:
    # "created" is the recording's start, not the export time, so exporting twice gives the same bytes.
    return {"version": REPLAY_VERSION, "created": epoch_ms(demo.recording_start) // 1000, "data": turns}


def metadata(demo: ExportDemo) -> dict:
    """metadata.json: recording times (ms epoch and ISO), id, time zone, user, browser and format version."""
    end = recording_end(demo)
    return {
        "recordingStart": epoch_ms(demo.recording_start),
        "recordingEnd": epoch_ms(end),
        "recordingStartISO": iso(demo.recording_start),
        "recordingEndISO": iso(end),
        "recordingId": folder_name(demo),
        "timezoneOffsetMinutes": demo.timezone_offset_minutes,
        "user": demo.navigator,
        "userAgent": demo.user_agent,
        "version": metadata_version(demo.recorder_version),
        "recorderVersion": demo.recorder_version,  # as the recorder reported it, even when not dotted integers
    }


def form(demo: ExportDemo) -> dict:
    """form.json: the task and the people, plus the facts the splits were drawn from (ignored by the package)."""
    return {
        "annotator": demo.navigator,
        "description": demo.task_description,
        "tasks": [demo.task_description] if demo.task_description else [],
        "navigator_name": demo.navigator,
        "instructor_name": demo.instructor,
        "shortcode": folder_name(demo),
        "upload_date": utc(demo.upload_date).strftime(UPLOAD_DATE_FORMAT),
        "website": demo.websites[0] if demo.websites else "",
        "websites": list(demo.websites),
        "category": demo.category,
        "subcategory": demo.subcategory,
        "region": demo.region,
        "instructor_sees_screen": demo.instructor_sees_screen,
        "split": demo.split,
        "mode": demo.mode,
    }


def metadata_version(recorder_version: str) -> str:
    """The recorder's version when it is dotted integers (what ``get_version`` parses), else ``1.0.0``."""
    return recorder_version if DOTTED_INTS.fullmatch(recorder_version or "") else DEFAULT_VERSION


def recording_end(demo: ExportDemo) -> dt.datetime:
    """The recorded end, or for a recording never finished, the start plus its last turn's timestamp."""
    if demo.recording_end is not None:
        return demo.recording_end
    last = max((turn.timestamp for turn in demo.turns), default=0.0)
    return demo.recording_start + dt.timedelta(seconds=last)


def utc(moment: dt.datetime) -> dt.datetime:
    # Django stores UTC; a naive value can only have come from there.
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the Unix epoch, computed exactly (no float rounding)."""
    return (utc(moment) - EPOCH) // dt.timedelta(milliseconds=1)


def iso(moment: dt.datetime) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``, as JavaScript's ``toISOString`` writes it."""
    return utc(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json(path: Path, document: dict) -> None:
    """One write of compact, key-sorted ASCII JSON; no per-file fsync (a crashed export is redone, not repaired)."""
    path.write_text(json.dumps(document, sort_keys=True, separators=(",", ":")), encoding="ascii")
