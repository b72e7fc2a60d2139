"""The Mind2Web export (``/work/shared/specs/mind2web-format.md``): one task record per demonstration.

``out`` gets ``train.json``, ``test_task.json``, ``test_website.json`` and ``test_domain.json``, each a JSON list
of task records (all four always written, possibly ``[]``); ``ExportDemo.split`` says which file a demo goes to.
Records are written one demo at a time, so an export holds one demo's pages in memory, never the whole set.

Where the spec leaves a choice, this module decides:

- Steps are the browser turns acting on an element: click → CLICK; hover → CLICK (original_op HOVER); submit →
  CLICK (original_op ENTER: submitting a form is Mind2Web's "press Enter"); textInput → TYPE with its text;
  change on a <select> → SELECT with the chosen option's text (its value when no option matches); change on a
  checkbox or radio → CLICK (toggling is a click); change on anything else (range, date, text field) → TYPE with
  the value, except that a change which only commits what the previous step typed into the same element is
  dropped. Chat, load, scroll, tab and clipboard turns are not steps, so chat-mode and task-mode demos export
  alike.
- ``action_reprs`` show the original operation (``-> HOVER``, ``-> ENTER``), which says what the person did; the
  element text is its accessible text, cut at 100 characters.
- ``raw_html`` is the turn's own page: the recorder captures the page state the action was taken in.
- Boxes are in page coordinates: the recorder's client boxes moved by the root element's box (minus the scroll).
- A step whose page is missing, or does not contain the acted element, is exported on a stand-in page made of
  the element's outerHTML (boxed by the turn's own bbox), so its HTML still parses and the acted element is
  still the marked positive; a step without either is skipped. A page without bboxes is exported with
  ``-1,-1,-1,-1`` boxes except for the acted element, which keeps the turn's bbox.
- ``annotation_id`` is uuid5 of the demo name and ``action_uid`` uuid5 of the name and the turn's stable key (the
  recorder's client id; the turn index for values built without one): the same demo exports with the same ids
  every time, however curation reorders or removes its turns. A task imported from a release keeps its ids there.
- Rejected demos and tasks discarded in verification are left out: Mind2Web has no marker for invalid tasks
  (WebLINX has ``invalid.json``); steps discarded in verification are deleted turns, absent from ``demo.turns``.
- ``website`` is the name of the website the task was proposed for, else the first website's registrable name
  (``www.booking.com`` → ``booking``); ``confirmed_task`` is the description refined in verification, else the
  recorded one, or for a chat demo without one the instructor's first utterance.
- ``ExportCounts.turns`` counts the steps (actions) written.
- A task imported from a Mind2Web release that review left unchanged is written as the release's JSON object, byte
  for byte; a changed one is regenerated. ``changes.json`` lists each imported task's changes (docs/recuration.md).
- A step's page part (``Processed``) is made once, when the demo is validated (``workers/exports/mind2web_steps.py``),
  and handed in as ``demo.mind2web_steps`` by ``step_key``; a step without a matching one is processed here.
"""

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from annotation.lib.formats import MIND2WEB_NAMESPACE as NAMESPACE
from annotation.lib.formats import mind2web_task_id
from annotation.lib.shapes import as_dict, as_text, box_of, element_of
from annotation.lib.splits import MIND2WEB_SPLITS

from ...archive import DeflatedFiles
from ..base import BlobSource, ExportCounts, ExportDemo, ExportTurn, write_changes
from .page import Snapshot
from .rawdump import write_raw_dump

STEP_INTENTS = frozenset({"click", "hover", "submit", "textInput", "change"})
POINTER_OPS = {"click": "CLICK", "hover": "HOVER", "submit": "ENTER"}  # intent → original_op (op is CLICK)
TOGGLE_TYPES = frozenset({"checkbox", "radio"})
NAMING_ATTRIBUTES = ("aria_label", "placeholder", "title", "alt", "name", "value")
REPR_TEXT_LIMIT = 100
# Second-level labels under which names are registered (www.rakuten.co.jp → rakuten, www.abc.net.au → abc).
SECOND_LEVEL_LABELS = frozenset({"ac", "co", "com", "edu", "gov", "go", "ne", "net", "or", "org"})
# Part of every stored step's key: bump it whenever this module or page.py changes what a step's page part is, so
# steps processed before are no longer used.
STEP_VERSION = 1


@dataclass(frozen=True)
class Operation:
    """Mind2Web's ``operation`` of a step."""

    op: str
    original_op: str
    value: str = ""

    def as_dict(self) -> dict:
        return {"op": self.op, "original_op": self.original_op, "value": self.value}


@dataclass(frozen=True)
class Processed:
    """What a step turn's page makes of it: its operation, ``action_reprs`` line and ``actions`` entry (JSON text,
    written as it is)."""

    operation: Operation
    repr: str
    action: str


@dataclass(frozen=True)
class Step:
    """One exported action: the record's ``actions`` entry (JSON text) and its ``action_reprs`` line."""

    uid: str | None  # the acted element's data-webtasks-id, to recognise a change that repeats a TYPE
    operation: Operation
    action: str
    repr: str
    action_uid: str
    snapshot: str | None = None  # sha256 of the MHTML of the page before the action (step mode), if recorded
    turn: ExportTurn | None = None  # the step's turn (its time, page, screenshot, traffic, DOM snapshot)


# --- Record fields ------------------------------------------------------------------------------------------


def annotation_id(demo: ExportDemo) -> str:
    """A task imported from a release keeps its id there; a recorded one's derives from its name."""
    if demo.release_format == "mind2web" and demo.release_id:
        return demo.release_id
    return mind2web_task_id(demo.name)


def action_uid(demo: ExportDemo, turn: ExportTurn) -> str:
    """An imported task's action keeps its release id (its turn's client id); a recorded one's derives from it."""
    if demo.release_format == "mind2web" and demo.release_id and turn.key:
        return turn.key
    return str(uuid.uuid5(NAMESPACE, f"{demo.name}/{turn.key or turn.index}"))


def website_name(address: str) -> str:
    """The registrable name of a domain or URL: ``www.booking.com`` → ``booking``, ``en.wikipedia.org`` →
    ``wikipedia``."""
    host = (urlsplit(address if "//" in address else f"//{address}").hostname or "").rstrip(".")
    labels = host.split(".")
    if len(labels) < 2 or labels[-1].isdigit():  # localhost, an IP address: nothing to strip
        return host
    suffix = labels.pop()
    if len(labels) > 1 and len(suffix) == 2 and labels[-1] in SECOND_LEVEL_LABELS:
        labels.pop()
    return labels[-1]


def first_url(demo: ExportDemo) -> str:
    """The first page address of the demo's browser turns (when it lists no websites)."""
    for turn in demo.turns:
        url = as_text(as_dict(turn.arguments.get("metadata")).get("url"))
        if turn.type == "browser" and url.startswith(("http://", "https://")):
            return url
    return ""


def website(demo: ExportDemo) -> str:
    if demo.website:
        return demo.website
    return website_name(demo.websites[0] if demo.websites else first_url(demo))


def confirmed_task(demo: ExportDemo) -> str:
    """The refined or recorded task description; a chat demo without one is about what its instructor asked first."""
    if demo.refined_task.strip():
        return demo.refined_task.strip()
    if demo.task_description.strip():
        return demo.task_description.strip()
    asked = (t.utterance for t in demo.turns if t.type == "chat" and t.speaker == "instructor" and t.utterance)
    return next(asked, "")


# --- Steps --------------------------------------------------------------------------------------------------


class PageSource:
    """Page and bboxes blobs of a demo's turns; the bboxes of the last turn are kept, as turns often share them."""

    def __init__(self, blobs: BlobSource):
        self.blobs, self.last_bboxes = blobs, (None, {})

    def bboxes(self, sha: str | None) -> dict:
        if sha is None:
            return {}
        if self.last_bboxes[0] != sha:
            boxes = json.loads(self.blobs.read(sha))
            self.last_bboxes = (sha, boxes if isinstance(boxes, dict) else {})
        return self.last_bboxes[1]

    def snapshot(self, turn: ExportTurn) -> tuple[Snapshot, int] | None:
        """The turn's page and the index of its acted element there, or a stand-in page; None if neither exists."""
        element = element_of(turn.arguments)
        if turn.page is not None:
            snapshot = Snapshot(self.blobs.read(turn.page), self.bboxes(turn.bboxes))
            target = snapshot.element_of(turn.element_uid)
            if target is not None:
                return with_turn_box(snapshot, target, element)
        outer = as_text(element.get("outerHTML"))
        if not outer.strip():
            return None
        snapshot = Snapshot(f"<html><body>{outer}</body></html>".encode(), {})
        target = snapshot.element_of(turn.element_uid)
        target = snapshot.first_in_body() if target is None else target
        return None if target is None else with_turn_box(snapshot, target, element)


def with_turn_box(snapshot: Snapshot, target: int, element: dict) -> tuple[Snapshot, int]:
    """The acted element keeps the turn's bbox when the bboxes file (or the whole file) lacks it."""
    if snapshot.boxes[target] is None and box_of(element.get("bbox")):
        snapshot.set_box(target, element["bbox"])
    return snapshot, target


def operation(turn: ExportTurn, snapshot: Snapshot, target: int) -> Operation:
    """The Mind2Web operation of a step turn; a change depends on the element it changed."""
    if turn.intent in POINTER_OPS:
        return Operation("CLICK", POINTER_OPS[turn.intent])
    if turn.intent == "textInput":
        return Operation("TYPE", "TYPE", str(turn.arguments.get("text", "")))
    element, value = snapshot.elements[target], str(turn.arguments.get("value", ""))
    if element.tag == "select":
        return Operation("SELECT", "SELECT", snapshot.option_text(target, value))
    if element.tag == "input" and (element.get("type") or "").lower() in TOGGLE_TYPES:
        return Operation("CLICK", "CLICK")
    return Operation("TYPE", "TYPE", value)


def element_text(snapshot: Snapshot, target: int) -> str:
    """What a person reads on the element: its text, or for form fields (and empty elements) their naming
    attributes; a <select>'s text would be all its options, so it is named by attributes only."""
    element = snapshot.elements[target]
    text = "" if element.tag in ("select", "input", "textarea") else snapshot.text_of(target)
    for name in NAMING_ATTRIBUTES:
        text = text or (element.get(name) or "").strip()
    return " ".join(text.split())[:REPR_TEXT_LIMIT]


def action_repr(snapshot: Snapshot, target: int, operation: Operation) -> str:
    element = snapshot.elements[target]
    role = element.get("role") or element.get("aria_role") or element.tag
    line = f"[{role}]  {element_text(snapshot, target)} -> {operation.original_op}"
    return f"{line}: {operation.value}" if operation.op in ("TYPE", "SELECT") else line


def build_action(uid: str, snapshot: Snapshot, target: int, operation: Operation) -> dict:
    """The ``actions`` entry. The order matters: raw_html carries the target mark, candidates are read from the
    annotated tree, and cleaned_html prunes that tree last."""
    snapshot.mark_target(target, uid)
    raw_html = snapshot.raw_html()
    top, positives = snapshot.positives(target)
    kept, chosen = snapshot.candidates(positives), set(positives)
    flags = {i: {"is_original_target": i == target, "is_top_level_target": i == top} for i in positives}
    pos = [snapshot.candidate(i, flags[i]) for i in positives]
    neg = [snapshot.candidate(i) for i in kept if i not in chosen]
    return {
        "action_uid": uid,
        "operation": operation.as_dict(),
        "raw_html": raw_html,
        "cleaned_html": snapshot.cleaned_html(kept),
        "pos_candidates": pos,
        "neg_candidates": neg,
    }


def repeats(intent: str, uid: str | None, operation: Operation, previous: Step | None) -> bool:
    """A change that only commits the text the previous step typed into the same element adds nothing."""
    if intent != "change" or previous is None or operation.op != "TYPE":
        return False
    return previous.uid == uid and previous.operation == operation


def is_step(turn: ExportTurn) -> bool:
    return turn.type == "browser" and turn.intent in STEP_INTENTS


def step_key(demo: ExportDemo, turn: ExportTurn, uid: str | None = None) -> str:
    """A digest of everything a step's ``Processed`` is made from: a stored one is used only when this matches.
    ``uid``: the step's ``action_uid`` when the caller has it."""
    uid = uid or action_uid(demo, turn)
    inputs = [STEP_VERSION, uid, turn.type, turn.intent, turn.page, turn.bboxes, turn.arguments]
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def process_turn(demo: ExportDemo, turn: ExportTurn, pages: PageSource) -> Processed | None:
    """A step turn's page part; None when it has neither a page with its element nor the element's outerHTML."""
    found = pages.snapshot(turn)
    if found is None:
        return None
    snapshot, target = found
    op = operation(turn, snapshot, target)
    line = action_repr(snapshot, target, op)  # before build_action: it reads the unpruned tree
    action = build_action(action_uid(demo, turn), snapshot, target, op)
    return Processed(op, line, json.dumps(action, ensure_ascii=False))


def steps(demo: ExportDemo, pages: PageSource) -> list[Step]:
    """The demo's steps in turn order, each from its stored ``Processed`` when the key matches."""
    done: list[Step] = []
    stored = demo.mind2web_steps
    for turn in demo.turns:
        if not is_step(turn):
            continue
        uid = action_uid(demo, turn)
        key = step_key(demo, turn, uid) if stored else None
        processed = stored[key] if key in stored else process_turn(demo, turn, pages)
        if processed is None:
            continue
        if repeats(turn.intent, turn.element_uid, processed.operation, done[-1] if done else None):
            continue
        done.append(
            Step(
                turn.element_uid,
                processed.operation,
                processed.action,
                processed.repr,
                uid,
                snapshot_of(turn.arguments),
                turn,
            )
        )
    return done


def snapshot_of(arguments: dict) -> str | None:
    """The turn's raw MHTML snapshot (``arguments.properties.mhtml``, validated at ingest), or None."""
    properties = arguments.get("properties") if isinstance(arguments, dict) else None
    return properties.get("mhtml") if isinstance(properties, dict) else None


def task_record(demo: ExportDemo, done: list[Step], annotation: str) -> list[bytes]:
    """The Mind2Web task record of one demo from its steps, as the pieces of its UTF-8 JSON text: the ``actions``
    entries (JSON text already, a step's pages) each a piece of its own, separated as ``json.dumps`` writes a list,
    never copied into one string. ``annotation``: the demo's ``annotation_id``."""
    head = {
        "annotation_id": annotation,
        "website": website(demo),
        "domain": demo.category,
        "subdomain": demo.subcategory,
        "confirmed_task": confirmed_task(demo),
        "action_reprs": [step.repr for step in done],
    }
    pieces = [f'{json.dumps(head, ensure_ascii=False)[:-1]}, "actions": ['.encode()]
    for number, step in enumerate(done):
        pieces += [b", ", step.action.encode()] if number else [step.action.encode()]
    pieces.append(b"]}")
    return pieces


# --- Files --------------------------------------------------------------------------------------------------


class SplitFiles:
    """The split files, each a JSON list that grows one record at a time; written through ``deflated``
    (``archive.DeflatedFiles``) when given, kept deflated for a tar.gz instead of written out."""

    def __init__(self, out: Path, splits: tuple, stack: ExitStack, deflated: DeflatedFiles | None = None):
        opener = deflated.open if deflated is not None else (lambda path: path.open("wb"))
        self.handles = {name: stack.enter_context(opener(out / f"{name}.json")) for name in splits}
        self.written = dict.fromkeys(splits, 0)
        for handle in self.handles.values():
            handle.write(b"[")

    def check(self, demo: ExportDemo) -> None:
        if demo.split not in self.handles:
            raise ValueError(f"demo {demo.name}: split {demo.split!r} is not one of {', '.join(self.handles)}")

    def write(self, split: str, record: dict | str | list[bytes]) -> None:
        """One record: a dict, its JSON text as it is (an imported task's original object), or the pieces of its
        UTF-8 text (``task_record``), each written as it is (a task's pages: not copied into a longer string)."""
        if not isinstance(record, list):  # dumps, not dump: dump encodes in pure Python
            record = [(record if isinstance(record, str) else json.dumps(record, ensure_ascii=False)).encode()]
        handle = self.handles[split]
        handle.write(b",\n" if self.written[split] else b"\n")
        for piece in record:
            handle.write(piece)
        self.written[split] += 1

    def close(self) -> None:
        for name, handle in self.handles.items():
            handle.write(b"\n]\n" if self.written[name] else b"]\n")


def write_snapshots(out: Path, annotation: str, snapshots: list, blobs: BlobSource) -> None:
    """Raw MHTML snapshots (``[(action_uid, sha256 or None)]``) where Mind2Web's raw dump keeps them:
    ``task/<annotation_id>/processed/snapshots/<action_uid>_before.mhtml``."""
    folder = out / "task" / annotation / "processed" / "snapshots"
    for uid, sha in snapshots:
        if sha:  # the folder made by copy_to when it writes one (an export job's blobs are only noted)
            blobs.copy_to(sha, folder / f"{uid}_before.mhtml")


def write_original(demo: ExportDemo, files: SplitFiles, out: Path, blobs: BlobSource) -> int:
    """An imported task nobody changed: the release's JSON object as it was, and its snapshots; its action count."""
    original = dict(demo.original)["task.json"]
    files.write(demo.split, blobs.read(original).decode("utf-8"))
    turns = [turn for turn in demo.turns if turn.type == "browser" and turn.intent in STEP_INTENTS]
    write_snapshots(out, annotation_id(demo), [(action_uid(demo, t), snapshot_of(t.arguments)) for t in turns], blobs)
    return len(turns)


class Mind2WebExporter:
    """Writes demonstrations as Mind2Web task records, one JSON list per split."""

    format = "mind2web"
    splits = MIND2WEB_SPLITS

    def __init__(self, deflated: DeflatedFiles | None = None):
        self.quality_extras = {}  # annotation_id → its quality.json additions (the raw dump's files)
        self.deflated = deflated  # where the split files are kept deflated, for a tar.gz job (else written to out)

    def exported_id(self, demo: ExportDemo) -> str | None:
        """The demo's ``annotation_id`` in the export; None for a demo left out (rejected, or discarded)."""
        return None if demo.rejected or demo.discarded else annotation_id(demo)

    def export(
        self,
        demos: Iterable[ExportDemo],
        out: Path,
        blobs: BlobSource,
        progress: Callable[[int], None] = lambda done: None,
    ) -> ExportCounts:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        counts, changes = ExportCounts(), []
        with ExitStack() as stack:
            files = SplitFiles(out, self.splits, stack, self.deflated)
            for done, demo in enumerate(demos, start=1):
                files.check(demo)
                changes += [demo.changes] if demo.changes is not None else []
                if demo.rejected or demo.discarded:
                    progress(done)
                    continue
                counts.add_demo(demo.split, self.write_demo(demo, files, out, blobs))
                progress(done)
            files.close()
        counts.files = len(self.splits) + write_changes(out, "mind2web", changes)
        return counts

    def write_demo(self, demo: ExportDemo, files: SplitFiles, out: Path, blobs: BlobSource) -> int:
        """The demo's task record (an unchanged imported task's original object); its action count."""
        if "task.json" in dict(demo.original):
            return write_original(demo, files, out, blobs)
        done_steps, annotation = steps(demo, PageSource(blobs)), annotation_id(demo)
        files.write(demo.split, task_record(demo, done_steps, annotation))
        snapshots = [(step.action_uid, step.snapshot) for step in done_steps]
        write_snapshots(out, annotation, snapshots, blobs)
        raw = write_raw_dump(out, demo, annotation, done_steps, blobs, self.deflated)
        self.quality_extras[annotation] = {"raw_dump": raw} | (
            {"replay": demo.replay} if (demo.replay or {}).get("status") == "done" else {}
        )
        return len(done_steps)
