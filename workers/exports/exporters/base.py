"""The small interface every export format implements, and the data it is given.

An exporter is pure: it receives ``ExportDemo`` values (the demonstration as it should be exported, with curation
already applied and its split assigned) and a ``BlobSource`` to read or copy blob bytes, and writes files under
an output directory. It never touches the database or Celery, so it is tested on plain values.
"""

import datetime as dt
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from annotation.lib.shapes import element_of, uid_of


@dataclass(frozen=True)
class ExportTurn:
    """One turn of the exported timeline. ``index`` is its position in the exported replay (0-based)."""

    index: int
    type: str  # "chat" | "browser"
    timestamp: float
    speaker: str = ""
    utterance: str = ""
    intent: str = ""
    arguments: dict = field(default_factory=dict)  # WebLINX arguments
    screenshot: str | None = None  # sha256 of an image blob
    page: str | None = None  # sha256 of a text/html blob
    bboxes: str | None = None  # sha256 of an application/json blob
    har: str | None = None  # step mode: sha256 of the traffic since the previous step (application/har+json)
    dom_snapshot: str | None = None  # step mode: sha256 of the DOM snapshot before the action
    screenshot_status: str = "good"  # "broken" when a reviewer marked the turn invalid
    key: str = ""  # the recorder's client id: stable however curation reorders or removes turns

    @property
    def element_uid(self) -> str | None:
        return uid_of(element_of(self.arguments))


@dataclass(frozen=True)
class ExportDemo:
    """A demonstration ready for export."""

    name: str
    project: str
    split: str
    status: str
    mode: str
    task_description: str
    websites: tuple
    category: str
    subcategory: str
    region: str
    instructor_sees_screen: bool
    navigator: str
    instructor: str
    recording_start: dt.datetime
    recording_end: dt.datetime | None
    timezone_offset_minutes: int
    user_agent: str
    recorder_version: str
    upload_date: dt.datetime
    turns: tuple = ()
    rejected: bool = False  # rejected in review: WebLINX marks it with invalid.json
    discarded: bool = False  # Mind2Web verification: the task is discarded (left out of the Mind2Web export)
    refined_task: str = ""  # Mind2Web verification: the reviewer's task description (blank = the recorded one)
    website: str = ""  # the Mind2Web website the demo's task was proposed for (blank = from its URLs)
    release_id: str = ""  # imported from a release: its id there (the export's folder name, or annotation_id)
    release_format: str = ""  # imported: the release's format (weblinx, mind2web)
    original: tuple = ()  # imported and unchanged: ((path in its folder, sha256), ...) of the release's files
    changes: dict | None = None  # imported: its entry in changes.json (docs/recuration.md)
    mind2web_steps: dict = field(default_factory=dict)  # Mind2Web: step key → its processed page part (or None)
    replay: dict | None = None  # Mind2Web: the task's last offline replay, when one was run


@dataclass
class ExportCounts:
    """What an export wrote, overall and per split."""

    demos: int = 0
    turns: int = 0
    files: int = 0
    per_split: dict = field(default_factory=dict)  # {split: {"demos": n, "turns": n}}

    def add_demo(self, split: str, turns: int) -> None:
        self.demos += 1
        self.turns += turns
        entry = self.per_split.setdefault(split, {"demos": 0, "turns": 0})
        entry["demos"] += 1
        entry["turns"] += turns

    def as_dict(self) -> dict:
        return {"demos": self.demos, "turns": self.turns, "files": self.files, "per_split": self.per_split}


class BlobSource(Protocol):
    """Read access to blob bytes by sha256."""

    def read(self, sha256: str) -> bytes: ...

    def copy_to(self, sha256: str, destination: Path | str) -> None:
        """The blob at ``destination``, its folder made when missing (a source that only notes where blobs go, for
        the archive, makes none)."""


class DirectoryBlobs:
    """Blobs stored as files named by sha256 under a folder (tests, and local storage through ``path_of``)."""

    def __init__(self, path_of: Callable[[str], Path | str]):
        self.path_of = path_of

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Nothing pending: every copy is made when asked for (remote blob sources may work in the background)."""

    def read(self, sha256: str) -> bytes:
        with open(self.path_of(sha256), "rb") as handle:
            return handle.read()

    def prefetch(self, demos):
        """The demos unchanged: files on this machine need no reading ahead (remote sources read packs here)."""
        return demos

    def copy_to(self, sha256: str, destination: Path | str) -> None:
        """A hard link when on the same file system (blobs are immutable), else a copy; the folder made if missing
        (tried after the link fails: most folders exist)."""
        source = self.path_of(sha256)
        try:
            os.link(source, destination)
        except FileNotFoundError:
            if not os.path.exists(source):
                raise
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            link_or_copy(source, destination)
        except OSError:
            shutil.copyfile(source, destination)


def link_or_copy(source: Path | str, destination: Path | str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copyfile(source, destination)


class PlannedBlobs(DirectoryBlobs):
    """Local blobs an export job archives from where they are stored: ``copy_to`` only notes which blob goes where
    (``planned``), and the archive reads each from its own file (``archive.write_archive``), so no link is made,
    listed and removed per file. Only for a folder that is archived, never read as it is."""

    def __init__(self, path_of: Callable[[str], Path | str]):
        super().__init__(path_of)
        self.planned = {}  # destination (str) → sha256
        self.paths = {}  # sha256 → its file, made once: ``files`` and ``known`` share each path's string

    def copy_to(self, sha256: str, destination: Path | str) -> None:
        self.planned[os.fspath(destination)] = sha256
        if sha256 not in self.paths:
            self.paths[sha256] = self.path_of(sha256)

    def files(self) -> Iterator[tuple[str, str]]:
        """``(destination, the blob's file)`` of every blob copied, handed over once: the plan empties as it is read,
        so an export's tens of thousands of destinations are not held past their listing (``archive.files_under``)."""
        planned, self.planned = self.planned, {}
        while planned:
            destination, sha = planned.popitem()
            yield destination, self.paths[sha]

    def known(self) -> dict:
        """``{the blob's file: its sha256}`` of every blob copied: stored under its sha256 once checked (at
        ingest), so the archive does not hash it again."""
        return {path: sha for sha, path in self.paths.items()}


class Exporter(Protocol):
    """Writes demonstrations in one format under ``out``; calls ``progress(done)`` after each demo. ``exported_id``
    names a demo as the export does (None when the format leaves it out), for the quality report."""

    format: str
    splits: tuple

    def exported_id(self, demo: ExportDemo) -> str | None: ...

    def export(
        self,
        demos: Iterable[ExportDemo],
        out: Path,
        blobs: BlobSource,
        progress: Callable[[int], None] = lambda done: None,
    ) -> ExportCounts: ...


def write_changes(out: Path, release_format: str, changes: list) -> int:
    """``changes.json`` when imported demos were exported: ``{"format", "demos": [entries by release id]}``
    (docs/recuration.md); returns the number of files written."""
    if not changes:
        return 0
    document = {"format": release_format, "demos": sorted(changes, key=lambda entry: entry["demo"])}
    (out / "changes.json").write_text(json.dumps(document, sort_keys=True, separators=(",", ":")), encoding="ascii")
    return 1
