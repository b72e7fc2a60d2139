"""Reading a WebLINX release (pure): the layout the official ``weblinx`` package reads, as recorder-shaped turns.

``<dir>/splits.json`` and ``<dir>/demonstrations/<demo>/`` with ``replay.json``, ``metadata.json``, ``form.json``
(``invalid.json`` when the release rejected the demo) and the ``screenshots/``, ``pages/`` and ``bboxes/`` files
its turns' states name (``shared/specs/weblinx-format.md``). Nothing is stored here: the import action
(``annotation/actions/exports/releases.py``) checks each file as the recorder's uploads are checked and writes.

- A directory that is not this layout raises ``NotARelease`` naming the first missing or wrong part.
- A demo that fails its checks (bad JSON, a turn the ingest schema refuses, a file named outside its folder) is
  listed in ``Release.skipped`` with why; the others are read.
- A capture a turn names but the release lacks (a missing screenshot, a page without its bboxes) leaves the turn
  without it and is noted on the demo.

Turns get the recorder's shape (``schema.validate_turn``), the client id being the turn's position in the replay;
their ``screenshot``, ``page`` and ``bboxes`` hold the file's path in the demo folder until the action replaces it
by the file's sha256.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import jsonsafe, schema
from .splits import WEBLINX_SPLITS

DEMO_ID = re.compile(r"[A-Za-z0-9_-]{1,48}")  # a folder name, short enough for the recorder's client id
FILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,120}")
PAGE_NAME = re.compile(r"page-([0-9]+)-[0-9]+\.html")
REQUIRED_FILES = ("replay.json", "metadata.json", "form.json")
MEDIA_TYPES = {"screenshot": "image/png", "page": "text/html", "bboxes": "application/json"}


class NotARelease(ValueError):
    """The directory is not a WebLINX release: ``part`` is the first missing or wrong part."""

    def __init__(self, part: str, message: str):
        super().__init__(f"{part}: {message}")
        self.part, self.message = part, message


class BadDemo(ValueError):
    """One demo fails its checks: the message says where and why."""


@dataclass
class ReleaseDemo:
    """One demo as read: its files' facts, its turns (captures as paths in ``folder``), notes on what is left out."""

    id: str
    folder: Path
    metadata: dict
    form: dict
    invalid: dict | None
    turns: list
    files: dict = field(default_factory=dict)  # relative path -> media type
    notes: list = field(default_factory=list)
    broken: list = field(default_factory=list)  # turn positions whose screenshot_status is "broken"
    split: str = ""


@dataclass
class Release:
    splits: dict
    demos: list
    skipped: list = field(default_factory=list)  # [{"item", "why"}]


def read_release(directory: Path, max_demos: int, max_turns: int, max_json_bytes: int) -> Release:
    """The release under ``directory``; ``NotARelease`` when its layout is wrong, bad demos in ``skipped``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NotARelease("directory", f"{directory} is not a directory")
    splits = read_splits(directory / "splits.json", max_json_bytes)
    root = directory / "demonstrations"
    if not root.is_dir():
        raise NotARelease("demonstrations/", "missing: the release keeps one folder per demo there")
    folders = sorted(path for path in root.iterdir() if path.is_dir())
    if not folders:
        raise NotARelease("demonstrations/", "holds no demo folder")
    if len(folders) > max_demos:
        raise NotARelease("demonstrations/", f"{len(folders)} demo folders; at most {max_demos} per import")
    split_of = {name: split for split, names in splits.items() for name in names}
    release = Release(splits=splits, demos=[])
    for folder in folders:
        try:
            demo = read_demo(folder, max_turns, max_json_bytes)
        except BadDemo as problem:
            release.skipped.append({"item": folder.name, "why": str(problem)})
            continue
        demo.split = split_of.get(demo.id, "")
        release.demos.append(demo)
    present = {folder.name for folder in folders}
    for name, split in split_of.items():
        if name not in present:
            why = f"listed in splits.json ({split}) but demonstrations/{name}/ is missing"
            release.skipped.append({"item": name, "why": why})
    return release


def read_splits(path: Path, max_bytes: int) -> dict:
    """``{split: [demo ids]}`` from ``splits.json``: known WebLINX splits, lists of ids, each id in one split."""
    if not path.is_file():
        raise NotARelease("splits.json", "missing: the release's split file")
    try:
        value = read_json(path, max_bytes)
    except BadDemo as problem:
        raise NotARelease("splits.json", str(problem).removeprefix("splits.json: ")) from None
    if not isinstance(value, dict):
        raise NotARelease("splits.json", "expected an object {split: [demo names]}")
    seen = {}
    for split, names in value.items():
        if split not in WEBLINX_SPLITS:
            raise NotARelease(f"splits.json.{split}", f"unknown split; known: {', '.join(WEBLINX_SPLITS)}")
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise NotARelease(f"splits.json.{split}", "expected a list of demo names")
        for name in names:
            if name in seen:
                raise NotARelease(f"splits.json.{split}", f"demo {name!r} is also in {seen[name]}")
            seen[name] = split
    return value


def read_json(path: Path, max_bytes: int):
    """A JSON file of at most ``max_bytes``, parsed with the API's rules (depth, finite numbers, valid Unicode)."""
    where = path.name
    if path.stat().st_size > max_bytes:
        raise BadDemo(f"{where}: {path.stat().st_size} bytes; at most {max_bytes} allowed")
    try:
        value = jsonsafe.loads(path.read_bytes(), where)
    except jsonsafe.JSONProblem as problem:
        raise BadDemo(f"{where}: not valid JSON: {problem.message}") from None
    if holds_nul(value):  # PostgreSQL stores no NUL, in text or JSON
        raise BadDemo(f"{where}: a string holds a NUL character (\\u0000)")
    return value


def holds_nul(value) -> bool:
    """Whether a NUL is in any string or key of a parsed JSON value (iterative: a deep value needs no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def read_demo(folder: Path, max_turns: int, max_json_bytes: int) -> ReleaseDemo:
    if not DEMO_ID.fullmatch(folder.name):
        raise BadDemo("demo name: expected 1 to 48 letters, digits, _ or -")
    for name in (*REQUIRED_FILES, "invalid.json"):
        if (folder / name).is_file() and out_of_release(folder, folder / name):
            raise BadDemo(f"{name}: a link out of the release")
    for name in REQUIRED_FILES:
        if not (folder / name).is_file():
            raise BadDemo(f"{name}: missing")
    documents = {name: read_json(folder / name, max_json_bytes) for name in REQUIRED_FILES}
    for name in ("metadata.json", "form.json"):
        if not isinstance(documents[name], dict):
            raise BadDemo(f"{name}: expected an object")
    invalid = read_json(folder / "invalid.json", max_json_bytes) if (folder / "invalid.json").is_file() else None
    data = documents["replay.json"].get("data") if isinstance(documents["replay.json"], dict) else None
    if not isinstance(data, list) or not data:
        raise BadDemo("replay.json.data: expected a non-empty list of turns")
    if len(data) > max_turns:
        raise BadDemo(f"replay.json.data: {len(data)} turns; at most {max_turns} per demo")
    demo = ReleaseDemo(
        id=folder.name,
        folder=folder,
        metadata=documents["metadata.json"],
        form=documents["form.json"],
        invalid=invalid if isinstance(invalid, dict) else ({"value": invalid} if invalid is not None else None),
        turns=[],
    )
    for n, record in enumerate(data):
        demo.turns.append(read_turn(demo, record, n))
    return demo


def read_turn(demo: ReleaseDemo, record, n: int) -> dict:
    """The recorder-shaped turn of ``replay.json``'s ``data[n]``; ``BadDemo`` naming the field the schema refuses."""
    where = f"replay.json.data[{n}]"
    if not isinstance(record, dict):
        raise BadDemo(f"{where}: expected an object")
    turn = {"client_id": str(n), "type": record.get("type"), "timestamp": record.get("timestamp")}
    if record.get("type") == "chat":
        turn.update(speaker=record.get("speaker"), utterance=record.get("utterance"))
    elif record.get("type") == "browser":
        action = record.get("action")
        if not isinstance(action, dict):
            raise BadDemo(f"{where}.action: required on a browser turn; expected an object")
        turn.update(intent=action.get("intent"), arguments=action.get("arguments"))
        drop_snapshot(demo, turn, n)
        state = record.get("state") or {}
        if not isinstance(state, dict):
            raise BadDemo(f"{where}.state: expected an object")
        turn.update(captures(demo, state, n))
    # Validated with a stand-in address for each capture: the files' own checks come in the import action.
    errors = schema.validate_turn({**turn, **{key: "0" * 64 for key in MEDIA_TYPES if turn.get(key)}}, where)
    if errors:
        raise BadDemo(f"{release_field(errors[0].field, where)}: {errors[0].message}")
    return turn


def release_field(name: str, where: str) -> str:
    """A schema error's field as the release spells it (``data[3].action.arguments…``, ``data[3].action.intent``)."""
    for key in ("arguments", "intent"):
        name = name.replace(f"{where}.{key}", f"{where}.action.{key}")
    return name


def drop_snapshot(demo: ReleaseDemo, turn: dict, n: int) -> None:
    """A raw MHTML snapshot is a platform blob the release does not carry: left out, noted."""
    properties = turn["arguments"].get("properties") if isinstance(turn["arguments"], dict) else None
    if isinstance(properties, dict) and "mhtml" in properties:
        turn["arguments"] = {**turn["arguments"], "properties": {k: v for k, v in properties.items() if k != "mhtml"}}
        demo.notes.append(f"turn {n}: its MHTML snapshot is not part of the release; left out")


def captures(demo: ReleaseDemo, state: dict, n: int) -> dict:
    """The turn's screenshot, page and bboxes as paths in the demo folder, when the files are there."""
    found = {}
    if state.get("screenshot_status") == "broken":
        demo.broken.append(n)
    screenshot = capture_path(demo, "screenshots", state.get("screenshot"), n)
    if screenshot:
        found["screenshot"] = screenshot
    page = capture_path(demo, "pages", state.get("page"), n)
    named = PAGE_NAME.fullmatch(Path(page).name) if page else None
    bboxes = f"bboxes/bboxes-{named.group(1) if named else n}.json"  # the package derives it from the page's N
    if not (demo.folder / bboxes).is_file() or out_of_release(demo.folder, demo.folder / bboxes):
        if page:
            demo.notes.append(f"turn {n}: {page} has no {bboxes}; page left out")
        bboxes = page = None
    if page:
        found["page"] = page
    if bboxes and (page or not state.get("page")):
        found["bboxes"] = bboxes
    for role, path in found.items():
        demo.files[path] = MEDIA_TYPES[role]
    return found


def capture_path(demo: ReleaseDemo, folder: str, name, n: int) -> str | None:
    """``folder/name`` when the state names a file that is there; a name that is no plain file name fails the demo."""
    if name is None or name == "":
        return None
    if not isinstance(name, str) or not FILE_NAME.fullmatch(name) or name.startswith("."):
        raise BadDemo(f"replay.json.data[{n}].state: {name!r} is not a file name in {folder}/")
    if not (demo.folder / folder / name).is_file():
        demo.notes.append(f"turn {n}: {folder}/{name} is missing; imported without it")
        return None
    if out_of_release(demo.folder, demo.folder / folder / name):
        demo.notes.append(f"turn {n}: {folder}/{name} is a link out of the release; imported without it")
        return None
    return f"{folder}/{name}"


def out_of_release(folder: Path, path: Path) -> bool:
    """Whether ``path`` in demo ``folder`` (``<release>/demonstrations/<id>``) leads out of the release through a
    link (a release unpacked by hand keeps its links): a server's file would be imported as the release's."""
    return not path.resolve().is_relative_to(folder.parent.parent.resolve())
