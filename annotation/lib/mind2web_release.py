"""Reading a Mind2Web release (pure): the split JSON files, each a list of task records
(``shared/specs/mind2web-format.md``), as recorder-shaped demonstrations.

A split file is named after its split (``train.json``, ``test_task_3.json``, ``test_website/...``); a file that is
not a JSON list of objects, or names no Mind2Web split, raises ``NotARelease`` naming the part. A task failing its
checks is listed in ``skipped`` with why; the others are read. Each task keeps its JSON object byte for byte
(``ReleaseTask.original``) so an unchanged task can be written again as it came.

Each action becomes one browser turn the platform's Mind2Web export reads back the same way: the page is the
action's ``raw_html`` with every element's ``backend_node_id`` as its ``data-webtasks-id`` and its
``bounding_box_rect`` in the page's bboxes; the acted element is the original target among the positive
candidates; CLICK is a click (``HOVER`` a hover, ``ENTER`` a submit), TYPE a textInput, SELECT a change. The raw
dump's MHTML snapshot (``task/<annotation_id>/processed/snapshots/<action_uid>_before.mhtml`` beside the split
files) is the turn's snapshot when present (not in a task where a password was typed: it cannot be masked). An
action without its page keeps its element alone (noted).
"""

import json
import math
import os
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from lxml import etree

from . import jsonsafe
from .redact import MASK
from .splits import MIND2WEB_SPLITS
from .weblinx_release import NotARelease, holds_nul

SPLIT_FILE = re.compile(r"(train|test_task|test_website|test_domain)(_[0-9]+)?\.json")
TASK_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # also the demo's client ids' length limit
OPERATIONS = {"CLICK", "TYPE", "SELECT"}
POINTER_INTENTS = {"HOVER": "hover", "ENTER": "submit"}  # CLICK's original_op → intent; any other is a click
UID = "data-webtasks-id"
XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # characters XML 1.0 (and lxml) will not hold
PASSWORD_TAG = re.compile(r"""\stype=["']?password\b""", re.IGNORECASE)  # in the acted element's start tag
HTML_TAG = re.compile(r"<[^<>]*>")  # as lxml writes a page: no "<" or ">" inside one (escaped in values)
QUOTED_VALUE = re.compile(r"""(=[\t\n\f\r ]*)("[^"]*"|'[^']*')""")
MIN_SECRET = 4  # a shorter password is masked as a whole value only (the recorder's MIN_TEXT_LENGTH)
TEXT_FIELDS = ("website", "domain", "subdomain", "confirmed_task")


class BadTask(ValueError):
    """One task fails its checks: the message says where and why."""


@dataclass
class ReleaseTask:
    """One task as read: its record's facts, its turns (pages and boxes as bytes to store), notes."""

    id: str
    split: str
    website: str
    domain: str
    subdomain: str
    task: str
    original: bytes  # the task's JSON object, byte for byte as in its split file
    turns: list
    pages: dict = field(default_factory=dict)  # turn position -> (page bytes, bboxes bytes)
    snapshots: dict = field(default_factory=dict)  # turn position -> MHTML path
    notes: list = field(default_factory=list)
    shown: set = field(default_factory=set)  # values a password field on a page shows (autofilled): masked too
    masked: bool = False  # a password typed in the task was masked in its pages (the original is not kept)


@dataclass(frozen=True)
class TaskRef:
    """Where a task's JSON object is in its split file (bytes ``start`` to ``end``): tasks are read one at a time,
    so an import holds one task's pages in memory, never the release's."""

    path: Path
    start: int
    end: int
    split: str
    n: int
    label: str = ""  # the file's path from the folder all the release's files are in (its name when alone)

    @property
    def where(self) -> str:
        return f"{self.label or self.path.name}[{self.n}]"

    def original(self) -> bytes:
        with self.path.open("rb") as handle:
            handle.seek(self.start)
            return handle.read(self.end - self.start)


@dataclass
class Mind2WebRelease:
    tasks: list  # TaskRef, in file then list order


def split_of(path: Path) -> str:
    """The split a file holds, from its name (``train.json``, ``test_task_2.json``); ``NotARelease`` if none."""
    found = SPLIT_FILE.fullmatch(path.name)
    if not found:
        raise NotARelease(path.name, f"not a split file: expected {', '.join(MIND2WEB_SPLITS)} (.json, or _N.json)")
    return found.group(1)


def spans(data: bytes, name: str, max_tasks: int) -> list[tuple[int, int]]:
    """``(start, end)`` bytes of each object of the file's top-level list; ``NotARelease`` when it is no such list."""
    try:
        value = jsonsafe.loads(data, name)
        text = data.decode("utf-8")
    except (jsonsafe.JSONProblem, UnicodeDecodeError) as problem:
        raise NotARelease(name, f"not valid JSON: {getattr(problem, 'message', problem)}") from None
    if not isinstance(value, list):
        raise NotARelease(name, "expected a JSON list of task records")
    if len(value) > max_tasks:
        raise NotARelease(name, f"{len(value)} tasks; at most {max_tasks} per import")
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise NotARelease(f"{name}[{n}]", "expected a task record (an object)")
    count = len(value)
    del value
    decoder, found, at = json.JSONDecoder(), [], text.index("[") + 1
    byte_at, char_at = len(text[:at].encode()), at
    for _ in range(count):
        while text[at] in " \t\r\n,":
            at += 1
        _, end = decoder.raw_decode(text, at)
        byte_at += len(text[char_at:at].encode())
        length = len(text[at:end].encode())
        found.append((byte_at, byte_at + length))
        byte_at, char_at, at = byte_at + length, end, end
    return found


def read_release(paths: list, max_tasks: int, max_bytes: int) -> Mind2WebRelease:
    """Where the tasks of the split files ``paths`` are; ``NotARelease`` for a file that is not a split file."""
    if not paths:
        raise NotARelease("file", "no split file (train.json, test_task.json, test_website.json, test_domain.json)")
    release = Mind2WebRelease(tasks=[])
    files = sorted(Path(p).absolute() for p in paths)
    common = Path(os.path.commonpath([path.parent for path in files]))
    for path in files:
        label = path.relative_to(common).as_posix()  # two folders' train.json are told apart in the report
        if not path.is_file():
            raise NotARelease(label, "missing")
        split = split_of(path)
        if path.stat().st_size > max_bytes:
            raise NotARelease(label, f"{path.stat().st_size} bytes; at most {max_bytes} per split file")
        found = spans(path.read_bytes(), label, max_tasks)
        release.tasks += [TaskRef(path, start, end, split, n, label) for n, (start, end) in enumerate(found)]
        if len(release.tasks) > max_tasks:
            raise NotARelease("file", f"more than {max_tasks} tasks; at most {max_tasks} per import")
    return release


def task_name(original: bytes) -> str:
    """The task's ``annotation_id`` when it is a usable one, else ""."""
    value = json.loads(original).get("annotation_id")
    return value if isinstance(value, str) and TASK_ID.fullmatch(value) else ""


def load_task(ref: TaskRef) -> ReleaseTask:
    """The task ``ref`` points at, read; ``BadTask`` naming where and why it fails its checks."""
    try:
        return read_task(ref.original(), ref.split, ref.path.parent)
    except BadTask as problem:
        raise BadTask(f"{ref.where}: {problem}") from None


def read_task(original: bytes, split: str, folder: Path) -> ReleaseTask:
    record = json.loads(original)
    if holds_nul(record):  # PostgreSQL stores no NUL, in text or JSON
        raise BadTask("a string holds a NUL character (\\u0000)")
    if not isinstance(record.get("annotation_id"), str) or not TASK_ID.fullmatch(record["annotation_id"]):
        raise BadTask("annotation_id: expected 1 to 64 letters, digits, _ or -")
    for name in TEXT_FIELDS:
        if not isinstance(record.get(name), str):
            raise BadTask(f"{name}: expected a string")
    if not record["website"].strip() or not record["confirmed_task"].strip():
        raise BadTask("website and confirmed_task: must not be empty")
    actions, reprs = record.get("actions"), record.get("action_reprs")
    if not isinstance(actions, list) or not actions:
        raise BadTask("actions: expected a non-empty list")
    if not isinstance(reprs, list) or len(reprs) != len(actions) or not all(isinstance(r, str) for r in reprs):
        raise BadTask("action_reprs: expected one string per action")
    task = ReleaseTask(
        id=record["annotation_id"],
        split=split,
        website=record["website"][:100],
        domain=record["domain"][:100],
        subdomain=record["subdomain"][:100],
        task=record["confirmed_task"],
        original=original,
        turns=[],
    )
    seen = set()
    for n, action in enumerate(actions):
        task.turns.append(read_action(task, action, n, folder, seen))
    mask_passwords(task)
    return task


def mask_passwords(task: ReleaseTask) -> None:
    """A value typed into (or shown in, ``value``/``input_value``) a password field is masked wherever the task
    shows it, as the recorder masks a private value: its pages, every turn's arguments (the element's attributes,
    HTML and text; other fields it was typed in) and the task's text; in HTML, in text and attribute values only.
    One shorter than ``MIN_SECRET`` is masked only as a whole value (an attribute's, a field's)."""
    secrets = set()
    for turn in task.turns:
        attributes, start = turn["arguments"]["element"]["attributes"], turn["arguments"]["element"]["outerHTML"]
        password = str(attributes.get("type", "")).strip().lower() == "password"
        if not password and not PASSWORD_TAG.search(start.split(">", 1)[0]):  # or the page says what it is
            continue
        values = (turn["arguments"].get("text"), attributes.get("value"), attributes.get("input_value"))
        secrets |= {value for value in values if isinstance(value, str) and value.strip() and value != MASK}
    secrets |= {value for value in task.shown if value.strip() and value != MASK}
    if not secrets:
        return
    mask = masker(secrets)
    for n, (page, boxes) in list(task.pages.items()):
        task.pages[n] = (mask_html(page.decode(), mask).encode(), boxes)
    for turn in task.turns:
        turn["arguments"] = masked_strings(turn["arguments"], mask)
    task.task, task.masked = mask(task.task), True
    if task.snapshots:  # MHTML encodes its parts: a password in one cannot be found to mask it
        task.notes.append(f"{len(task.snapshots)} MHTML snapshot(s) not imported: a password was typed in this task")
        task.snapshots = {}


def masker(secrets: set):
    """A function masking ``secrets`` in a text: anywhere (a long one, as typed or HTML-escaped) or as the whole
    text (a short one)."""
    forms = {f for s in secrets for f in (s, escape(s), escape(s, quote=True))}
    long = sorted((f for f in forms if len(f.strip()) >= MIN_SECRET), key=len, reverse=True)
    anywhere = re.compile("|".join(map(re.escape, long))) if long else None

    def mask(text: str) -> str:
        if text in forms:
            return MASK
        return anywhere.sub(MASK, text) if anywhere else text

    return mask


def mask_html(html: str, mask) -> str:
    """``mask`` on an HTML text's text and attribute values only: a password ``input`` or ``body`` leaves the tags
    and attribute names whole."""
    value = lambda q: f"{q[1]}{q[2][0]}{mask(q[2][1:-1])}{q[2][-1]}"  # noqa: E731
    out, at = [], 0
    for tag in HTML_TAG.finditer(html):
        out += [mask(html[at : tag.start()]), QUOTED_VALUE.sub(value, tag[0])]
        at = tag.end()
    return "".join([*out, mask(html[at:])])


def masked_strings(value, mask, key: str = ""):
    """``value`` (JSON) with ``mask`` applied to each of its strings (``mask_html`` to an ``outerHTML``)."""
    if isinstance(value, dict):
        return {name: masked_strings(item, mask, name) for name, item in value.items()}
    if isinstance(value, list):
        return [masked_strings(item, mask) for item in value]
    if isinstance(value, str):
        return mask_html(value, mask) if key == "outerHTML" else mask(value)
    return value


def read_action(task: ReleaseTask, action, n: int, folder: Path, seen: set) -> dict:
    where = f"actions[{n}]"
    if not isinstance(action, dict):
        raise BadTask(f"{where}: expected an object")
    uid = action.get("action_uid")
    if not isinstance(uid, str) or not TASK_ID.fullmatch(uid) or uid in seen:
        raise BadTask(f"{where}.action_uid: expected a unique id of 1 to 64 letters, digits, _ or -")
    seen.add(uid)
    operation = action.get("operation")
    if not isinstance(operation, dict) or operation.get("op") not in OPERATIONS:
        raise BadTask(f"{where}.operation.op: expected one of {', '.join(sorted(OPERATIONS))}")
    value = operation.get("value", "")
    if not isinstance(value, str) or not isinstance(operation.get("original_op", ""), str):
        raise BadTask(f"{where}.operation: value and original_op must be strings")
    target = original_target(action.get("pos_candidates"), where)
    page = action.get("raw_html")
    if page is not None and not isinstance(page, str):
        raise BadTask(f"{where}.raw_html: expected a string")
    try:
        element, boxes, html = element_on_page(page or "", target, task.shown)
    except (ValueError, etree.LxmlError) as problem:  # e.g. a control character lxml will not hold
        raise BadTask(f"{where}: its page or target element cannot be read as HTML ({problem})") from None
    if html is None:
        task.notes.append(f"action {n} ({uid}): no page; imported on its element alone")
    else:
        task.pages[n] = (html, json.dumps(boxes).encode())
    snapshot = folder / "task" / task.id / "processed" / "snapshots" / f"{uid}_before.mhtml"
    if snapshot.is_file() and snapshot.resolve().is_relative_to(folder.resolve()):  # not a link out of the release
        task.snapshots[n] = snapshot
    turn = {"client_id": uid, "type": "browser", "timestamp": float(n + 1), **intent_of(operation, value)}
    turn["arguments"]["metadata"] = {"url": "", "tabId": 0}
    turn["arguments"]["element"] = element
    return turn


def intent_of(operation: dict, value: str) -> dict:
    if operation["op"] == "TYPE":
        return {"intent": "textInput", "arguments": {"text": value}}
    if operation["op"] == "SELECT":
        return {"intent": "change", "arguments": {"value": value}}
    return {"intent": POINTER_INTENTS.get(operation.get("original_op"), "click"), "arguments": {}}


def original_target(candidates, where: str) -> dict:
    """The acted element among the positive candidates: the original target, else the first."""
    if not isinstance(candidates, list) or not candidates or not all(isinstance(c, dict) for c in candidates):
        raise BadTask(f"{where}.pos_candidates: expected a non-empty list of candidates (the acted element)")
    target = next((c for c in candidates if c.get("is_original_target") is True), candidates[0])
    if not isinstance(target.get("backend_node_id"), str) or not isinstance(target.get("tag"), str):
        raise BadTask(f"{where}.pos_candidates: the target needs its tag and backend_node_id")
    try:  # jsonsafe: a string nested 100,000 deep is a RecursionError to json.loads
        attributes = jsonsafe.loads(target.get("attributes") or "{}")
    except (TypeError, ValueError):
        attributes = None
    if not isinstance(attributes, dict):
        raise BadTask(f"{where}.pos_candidates: the target's attributes must be a JSON object string")
    return {**target, "attributes": {str(k): str(v) for k, v in attributes.items()}}


def box_of(rect) -> dict | None:
    try:
        x, y, width, height = (float(part) for part in str(rect).split(","))
    except ValueError:
        return None
    finite = all(math.isfinite(v) for v in (x, y, width, height, x + width, y + height))  # NaN, inf, overflow
    if not finite or width < 0 or height < 0:
        return None
    return {
        "x": x,
        "y": y,
        "width": width,
        "height": height,
        "top": y,
        "right": x + width,
        "bottom": y + height,
        "left": x,
    }


def element_on_page(page: str, target: dict, shown: set) -> tuple[dict, dict, bytes | None]:
    """The acted element as the recorder describes one, the page's boxes by uid, and the page marked with uids
    (None when there is no page); the values its password fields show are added to ``shown``."""
    node = target["backend_node_id"]
    attributes = {k: v for k, v in target["attributes"].items() if k != "bounding_box_rect"}
    box = box_of(target["attributes"].get("bounding_box_rect")) or box_of("0,0,0,0")
    outer = etree.Element(target["tag"] if re.fullmatch(r"[A-Za-z][\w-]*", target["tag"]) else "div")
    for key, value in attributes.items():
        if re.fullmatch(r"[A-Za-z_][\w.-]*", key):
            outer.set(key, XML_INVALID.sub("", value))  # as the export's parse drops them from a page
    outer.set(UID, node)
    outer.text = ""
    boxes, html = {}, None
    if page.strip():
        root = etree.fromstring(page.encode(), etree.HTMLParser(encoding="utf-8"))
        if root is not None:
            for found in root.iter(etree.Element):
                if str(found.get("type", "")).strip().lower() == "password":  # its value is added to ``shown``
                    shown.update(found.get(name) for name in ("value", "input_value") if found.get(name))
                if found.get("backend_node_id") is not None:
                    found.set(UID, found.get("backend_node_id"))
                    if box_of(found.get("bounding_box_rect")):  # none for "-1,-1,-1,-1": the element had no box
                        boxes[found.get("backend_node_id")] = box_of(found.get("bounding_box_rect"))
            html = etree.tostring(root, encoding="unicode").encode()
            acted = next((e for e in root.iter(etree.Element) if e.get(UID) == node), None)
            if acted is not None:
                outer = acted
                box = boxes.get(node, box)
    text = " ".join(" ".join(outer.itertext()).split())
    element = {
        "attributes": {**attributes, UID: node},
        "bbox": box,
        "tagName": target["tag"].upper(),
        "xpath": "",
        "textContent": text,
        "outerHTML": etree.tostring(outer, encoding="unicode", with_tail=False),
    }
    return element, boxes, html
