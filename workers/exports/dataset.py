"""From the database to export values: the demonstrations of a project as ``ExportDemo``, with splits assigned.

This is the one place that decides what an exported demo contains, so curation (the Review feature) plugs in
here: ``export_timeline`` is where edits over the raw capture are applied.
"""

import contextlib
import hashlib
import io
import logging
import os
import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from django.core.files.storage import default_storage
from django.db import connection, connections
from django.db.models import Prefetch, prefetch_related_objects

# The demo selection and split assignment live with the domain (the splits page uses them too), and so does what
# review changed in an imported demo (changes.json; the re-curation page and API read the same).
from annotation.actions.exports import recuration
from annotation.actions.exports.recuration import review_order
from annotation.actions.exports.splits import DEFAULT_STATUSES, selected_demos, split_of
from annotation.lib.shapes import as_dict
from annotation.models import Demonstration, DemoStatus, Mind2WebStep, Turn, TurnType, curated_turns, sha256_path
from annotation.store.blobstore import S3ObjectReader, is_local, is_s3, stream_file

from . import packs
from .archive import DeflatedBytes
from .exporters.base import DirectoryBlobs, ExportDemo, ExportTurn, PlannedBlobs
from .exporters.mind2web import Operation, Processed

log = logging.getLogger(__name__)


class TurnRow(NamedTuple):
    """What an export reads of a turn (``export_timeline``), made from a row: a third of a ``Turn``'s cost to make,
    and an export makes one for every turn of the project."""

    pk: int
    client_id: str
    seq: int
    type: str
    timestamp: float
    speaker: str
    utterance: str
    intent: str
    arguments: dict
    screenshot_id: str | None
    page_id: str | None
    bboxes_id: str | None
    har_id: str | None
    dom_snapshot_id: str | None


TURN_ROW_FIELDS = ("demonstration_id", "id", *TurnRow._fields[1:])


def turn_rows(demo_ids: list) -> dict:
    """``{demo id: [TurnRow]}`` of these demos, in one query."""
    rows = {pk: [] for pk in demo_ids}
    for row in Turn.objects.filter(demonstration_id__in=demo_ids).values_list(*TURN_ROW_FIELDS):
        rows[row[0]].append(TurnRow._make(row[1:]))
    return rows


def export_timeline(demo: Demonstration, turns=None) -> list[ExportTurn]:
    """The turns to export, in curated order: the raw capture with the review's edits applied (deleted turns
    dropped, reordered, edited text, chosen target element, chosen screenshot, invalid turns marked ``broken``).

    Reads ``turns`` (``TurnRow``s, or ``Turn``s; None: ``demo.turns``), ``demo.turn_curations`` and ``demo.review``
    (prefetched by ``export_demos``)."""
    turns = sorted(demo.turns.all() if turns is None else turns, key=lambda t: (t.timestamp, t.seq))
    curations = {curation.turn_id: curation for curation in demo.turn_curations.all()}
    kept = [(t, c) for t, c in curated_turns(turns, curations, review_order(demo)) if not (c and c.deleted)]
    return [curated_export_turn(index, turn, curation) for index, (turn, curation) in enumerate(kept)]


def curated_text(turn: Turn | TurnRow, curation, arguments: dict) -> tuple[str, dict]:
    """The utterance and arguments with an edited text applied (chat utterance, textInput's typed text ``text``, or
    a change turn's value ``value``: the recorder's argument for each, annotation/lib/schema.py)."""
    if curation is None or curation.text is None:
        return turn.utterance, arguments
    if turn.type == TurnType.CHAT:
        return curation.text, arguments
    return turn.utterance, {**arguments, ("value" if turn.intent == "change" else "text"): curation.text}


def curated_export_turn(index: int, turn: Turn | TurnRow, curation) -> ExportTurn:
    utterance, arguments = curated_text(turn, curation, as_dict(turn.arguments))
    if curation is not None and curation.element:  # a target chosen in review (the Mind2Web step key changes too)
        arguments = {**arguments, "element": curation.element}
    return ExportTurn(
        index=index,
        type=turn.type,
        timestamp=turn.timestamp,
        speaker=turn.speaker,
        utterance=utterance,
        intent=turn.intent,
        arguments=arguments,
        screenshot=(curation.screenshot if curation and curation.screenshot else turn.screenshot_id),
        page=turn.page_id,
        bboxes=turn.bboxes_id,
        har=turn.har_id,
        dom_snapshot=turn.dom_snapshot_id,
        screenshot_status="broken" if curation and not curation.valid else "good",
        key=turn.client_id,
    )


def to_export_demo(demo: Demonstration, split: str, scheme: str = "weblinx", turns=None) -> ExportDemo:
    """The export value of ``demo``; a demo imported from a release of the export's format (``scheme``) gets its
    changes against the release and, unchanged, the release's files. ``turns``: its ``TurnRow``s, when read
    already (None: ``demo.turns``)."""
    imported = recuration.is_imported(demo) and demo.source.get("format") == scheme
    changes = recuration.changes_of(demo, review_order(demo)) if imported else None
    return ExportDemo(
        name=demo.name,
        project=demo.project.name,
        split=split,
        status=demo.status,
        mode=demo.mode,
        task_description=demo.task_description,
        websites=tuple(demo.websites or ()),
        category=demo.category,
        subcategory=demo.subcategory,
        region=demo.region,
        instructor_sees_screen=demo.instructor_sees_screen,
        navigator=demo.navigator.username,
        instructor=demo.instructor.username if demo.instructor else "",
        recording_start=demo.recording_start,
        recording_end=demo.recording_end,
        timezone_offset_minutes=demo.timezone_offset_minutes,
        user_agent=demo.user_agent,
        recorder_version=demo.recorder_version,
        upload_date=demo.created_at,
        turns=tuple(export_timeline(demo, turns)),
        rejected=demo.status == DemoStatus.REJECTED,
        discarded=demo.discarded,
        refined_task=demo.refined_task,
        website=proposed_website(demo) or mind2web_release_fact(demo, "website"),
        release_id=demo.source_id if changes or mind2web_release_fact(demo, "id") else "",
        release_format=(demo.source or {}).get("format", "") if demo.source_id else "",
        original=recuration.original_files(demo, changes) if changes else (),
        changes=changes,
        mind2web_steps=stored_steps(demo) if scheme == "mind2web" else {},
        replay={k: v for k, v in demo.replay.items() if k != "run"} if scheme == "mind2web" and demo.replay else None,
    )


STEP_FIELDS = ("key", "skipped", "op", "original_op", "value", "action_repr", "action")


def stored_steps(demo: Demonstration) -> dict:
    """The demo's processed steps by key (None: a step the export skips). One query a demo, not a prefetch with its
    chunk: a step holds its page's HTML twice, and an export holds one demo's pages at a time."""
    rows = Mind2WebStep.objects.filter(demonstration=demo).values_list(*STEP_FIELDS)
    return {
        key: None if skipped else Processed(Operation(op, original_op, value), line, action)
        for key, skipped, op, original_op, value, line, action in rows
    }


def proposed_website(demo: Demonstration) -> str:
    """The name of the Mind2Web website whose proposed task the demo demonstrates ("" for other demos)."""
    task = demo.assignment.task if demo.assignment else None
    proposal = getattr(task, "proposal", None) if task else None
    return proposal.website.name if proposal else ""


def mind2web_release_fact(demo: Demonstration, key: str) -> str:
    """What a Mind2Web release said of an imported task (``id``, ``website``); "" for other demos."""
    source = demo.source if isinstance(demo.source, dict) else {}
    value = source.get(key) if source.get("format") == "mind2web" else ""
    return value if isinstance(value, str) else ""


# What no export reads of a turn (``export_timeline``, ``recuration.changes_of``): left in the database.
UNEXPORTED_TURN_FIELDS = ("url", "tab_id", "viewport_width", "viewport_height", "frames", "label", "content_sha256")


def export_demos(
    project, scheme: str, statuses=DEFAULT_STATUSES, splits=None, chunk=20, names=()
) -> Iterator[ExportDemo]:
    """The project's demos as export values, one at a time (turns fetched ``chunk`` demos per query, as rows:
    ``TurnRow``); ``names``: only these demos. An imported demo's turns are read as ``Turn``s, which re-curation
    (``recuration.changes_of``) reads more of."""
    split = split_of(project, scheme)
    # a queryset of this call's own: a prefetch notes its first demo on it (hints)
    turns = Turn.objects.order_by("timestamp", "seq").defer(*UNEXPORTED_TURN_FIELDS)
    demos = selected_demos(project, statuses).prefetch_related("turn_curations")
    if names:
        demos = demos.filter(name__in=names)
    for read in batches(demos.iterator(chunk_size=chunk), chunk):
        named = [(demo, split(demo)) for demo in read]
        chosen = [(demo, name) for demo, name in named if not splits or name in splits]
        imported = [demo for demo, _ in chosen if recuration.is_imported(demo)]
        prefetch_related_objects(imported, Prefetch("turns", queryset=turns))
        rows = turn_rows([demo.pk for demo, _ in chosen if demo not in imported])
        for demo, name in chosen:
            yield to_export_demo(demo, name, scheme, rows.get(demo.pk))


def batches(values: Iterator, size: int) -> Iterator[list]:
    """``values`` in lists of ``size`` (the last one shorter)."""
    batch = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


READ_AHEAD = 2  # export values made ahead of the exporter


def read_ahead(values: Iterator, depth: int = READ_AHEAD) -> Iterator:
    """``values`` (export values from ``export_demos``), made in a thread of their own up to ``depth`` ahead of the
    caller: the database reads and decompresses the next demos' rows (a Mind2Web step holds its page's HTML twice)
    on another core while this one writes. Inline where another thread would not see the same rows: inside a
    transaction (its own connection would not see this one's rows) and on SQLite (a reader there can hold up the
    job's own progress updates). The caller stopping early stops the thread, which closes its connection."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        yield from values
        return
    made, stop = queue.Queue(maxsize=depth), threading.Event()

    def hand_over(item) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                made.put(item, timeout=0.1)
                return True
        return False

    def produce() -> None:
        try:
            for value in values:
                if not hand_over((True, value)):
                    return
            hand_over((False, None))
        except BaseException as error:  # noqa: BLE001 (handed to the caller, raised there)
            hand_over((False, error))
        finally:
            with contextlib.suppress(Exception):
                values.close()  # a generator's cursor, in the thread that iterated it
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=produce, name="export-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            more, value = made.get()
            if not more:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        stop.set()
        thread.join()


def storage_blobs(cache: Path | None = None, planned: bool = False) -> DirectoryBlobs:
    """Blob bytes from the platform's storage. Local file system: hard links, or with ``planned`` none, the archive
    reading each blob from storage (``PlannedBlobs``). Remote storage: downloads, each blob once into ``cache`` when
    given, then hard-linked from there like local blobs, or with ``planned`` archived from the cache unlinked."""
    if not is_local(default_storage):
        return RemoteStorageBlobs(cache, planned)
    kind = PlannedBlobs if planned else DirectoryBlobs
    return kind(local_blob_path(default_storage.path("")))


SHA256 = re.compile(r"[0-9a-f]{64}")


def local_blob_path(root: str) -> Callable[[str], str]:
    """The file of a blob in local storage under ``root``: joined here, without the storage's ``path`` (a safe join,
    a few microseconds a blob: an export names tens of thousands) for names that are sha256s; anything else still
    goes through the storage."""
    prefix = os.path.join(root, "")

    def path_of(sha: str) -> str:
        return prefix + sha256_path(sha) if SHA256.fullmatch(sha) else default_storage.path(sha256_path(sha))

    return path_of


class RemoteStorageBlobs:
    """Blobs in storage without local paths (S3): read through the storage, streamed (``stream_file``).

    With a ``cache`` folder, ``copy_to`` returns at once: ``FETCHERS`` threads download each blob once into the
    cache (requests to S3 wait on the network, not on us) and hard-link it where it was asked for, or with
    ``planned`` only note it (``files()``, as ``PlannedBlobs`` does): an export job archives each blob from the cache
    (``write_archive``'s ``planned``), no link made, listed and removed per file. Leaving the ``with`` block waits
    for the fetches and raises the first failure. ``prefetch(demos)`` passes the demos through and, on S3, reads
    each demo's blobs from its pack (``workers.exports.packs``: one GET a demo) into the cache before the exporter
    asks for them; blobs not in a pack are read on their own. The archive can start before the last blobs arrive:
    ``wait(file)`` waits for one, and ``checked`` maps each fetched blob's ``(st_dev, st_ino)`` to its sha256,
    checked as it was read (``write_archive``'s ``arriving`` and ``known``). With ``planned``, a pack's blobs are
    kept in memory while ``HOLD_BYTES`` allow (``held``: no cache file made, renamed, read back and removed for
    each), the rest written to the cache; the archive takes each held blob (``taken``) and gives it back once
    archived (``release``)."""

    FETCHERS = 8
    HOLD_BYTES = 256 * 1024 * 1024  # a pack's blobs kept in memory for the archive, at most (then cache files)

    def __init__(self, cache: Path | None = None, planned: bool = False):
        self.cache, self.pool, self.pending = cache, None, []
        self.lock, self.claims = threading.Lock(), {}  # sha256 → set when its fetch ended
        self.waiting = {}  # sha256 → destinations to link once its fetch ends (under ``lock``)
        self.planned = {} if planned else None  # destination (str) → sha256, archived from the cache
        self.checked, self.errors = {}, []  # see the class docstring; the fetches' failures, first first
        self.fetched = set()  # sha256s in the cache or ``held``, checked
        self.held, self.holding = {}, 0  # sha256 → a pack's blob kept in memory, checked; the room reserved for them
        self.destined, self.planning = set(), True  # sha256s planned for the archive; until ``end_plan``
        # S3: one reader (one client, one connection pool) for every fetcher thread and for ``read``, inside the
        # ``with`` block or not
        self.reader = S3ObjectReader(default_storage) if is_s3(default_storage) else None

    def __enter__(self):
        if self.cache is not None:
            self.cache.mkdir(parents=True, exist_ok=True)
            self.pool = ThreadPoolExecutor(max_workers=self.FETCHERS, thread_name_prefix="blob-fetch")
        return self

    def __exit__(self, kind, error, trace):
        if self.pool is None:
            return
        if kind is not None:
            for future in self.pending:
                future.cancel()
        try:
            if kind is None:
                self.wait_all()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
            with self.lock:  # fetches cancelled above never ran: their claims ended too (``read`` after the block)
                unsettled = [sha for sha, claim in self.claims.items() if not claim.is_set()]
            self.settle(unsettled, failed=True)
            with self.lock:  # blobs held for the archive: its memory freed (``read`` after the block reads again)
                self.fetched -= self.held.keys()
                self.held.clear()
                self.holding = 0

    def wait_all(self) -> None:
        """Wait for every fetch under way; raise the first failure."""
        done = 0
        while done < len(self.pending):  # a pack's fetch may add reads of blobs it lacked
            self.pending[done].result()
            done += 1

    def files(self) -> dict:
        """``{destination: the blob's file in the cache}`` of every blob copied with ``planned`` (some perhaps still
        arriving: ``wait``); a blob's path made once, whatever number of destinations name it."""
        paths = {sha: os.path.join(self.cache, sha) for sha in set(self.planned.values())}
        return {destination: paths[sha] for destination, sha in self.planned.items()}

    def wait(self, file: str) -> None:
        """Return once the cached blob ``file`` (a value of ``files()``) is in; raise its fetch's failure when it
        could not be read."""
        sha256 = os.path.basename(file)
        with self.lock:
            claim = self.claims[sha256]
        claim.wait()
        if sha256 not in self.fetched:  # not whether a file is there: only a blob that arrived checked counts
            raise self.errors[0] if self.errors else FileNotFoundError(f"{file} could not be read from storage")

    def hold(self, size: int) -> bool:
        """Room in memory reserved for a pack's blob of ``size`` bytes (True), or none left (False: a cache file);
        a negative ``size`` gives room back."""
        with self.lock:
            if size < 0 or self.holding + size <= self.HOLD_BYTES:
                self.holding += size
                return size >= 0
        return False

    def taken(self, file: str) -> tuple[bytearray | DeflatedBytes, str] | None:
        """A blob ``wait`` returned for that is kept in memory: its bytes (not to be changed; ``DeflatedBytes`` from a
        sealed pack) and sha256; None when it is a file in the cache."""
        sha256 = os.path.basename(file)
        with self.lock:
            data = self.held.get(sha256)
        return None if data is None else (data, sha256)

    def release(self, file: str) -> None:
        """A held blob no longer needed (archived under every name planned for it): its memory freed."""
        with self.lock:
            self.drop(os.path.basename(file))

    def drop(self, sha256: str) -> None:
        """(Under ``lock``.) A held blob's memory freed; asked for again, it is fetched again."""
        data = self.held.pop(sha256, None)
        if data is not None:
            self.holding -= len(data.data if isinstance(data, DeflatedBytes) else data)
            self.fetched.discard(sha256)
            self.claims.pop(sha256, None)

    def end_plan(self) -> dict:
        """The exporter is done: every blob the archive takes is planned. Held blobs it will not take (read by the
        exporter, or of demos it left out) are freed, and so are those of packs still arriving. ``files()``."""
        with self.lock:
            self.planning = False
            for sha in self.held.keys() - self.destined:
                self.drop(sha)
        return self.files()

    def read(self, sha256: str) -> bytes:
        with self.lock:
            claim = self.claims.get(sha256)
        if claim is not None:  # being fetched or fetched into the cache (checked there)
            claim.wait()
            with self.lock:
                data = self.held.get(sha256)
                if data is not None and sha256 not in self.destined:  # read, not archived: freed (see ``drop``)
                    self.drop(sha256)
            if data is not None:
                return data.inflate() if isinstance(data, DeflatedBytes) else bytes(data)
            with contextlib.suppress(FileNotFoundError):
                return (self.cache / sha256).read_bytes()
        out = io.BytesIO()
        self.copy_checked(sha256, out)
        return out.getvalue()

    def prefetch(self, demos: Iterable[ExportDemo]) -> Iterator[ExportDemo]:
        """The demos, unchanged; for each, its blobs claimed and read from its pack in the background."""
        for demo in demos:
            if self.pool is not None and self.reader is not None:
                # a name that is no sha256 is left to ``copy_to``, which refuses it: never joined to the cache
                shas = {
                    sha
                    for turn in demo.turns
                    for sha in (turn.page, turn.bboxes, turn.screenshot)
                    if sha and SHA256.fullmatch(sha)
                }
                with self.lock:
                    mine = {sha: self.claims.setdefault(sha, threading.Event()) for sha in shas - self.claims.keys()}
                if mine:
                    self.pending.append(self.pool.submit(self.fetch_pack, demo.name, mine))
            yield demo

    def fetch_pack(self, demo_name: str, mine: dict) -> None:
        """The claimed blobs ``mine`` (sha256 → event) from the demo's pack; those not in it (or all of them, without
        a pack) handed to the pool to read on their own. A pack is only a copy: any failure to read it is too."""
        # unpacked from the GET's body as it arrives; for an archive, into memory while there is room
        unpacking = packs.PackWriter(mine, self.cache, self.hold if self.planned is not None else None)
        try:
            self.reader.copy(packs.pack_name(demo_name), unpacking, hashed=False)  # each blob is checked
        except FileNotFoundError:
            pass
        except Exception as error:  # a pack is only a copy: whatever went wrong, the blobs are read on their own
            log.warning("could not read the blob pack of %s (%s); reading its blobs one by one", demo_name, error)
        except BaseException as error:  # not a pack's failure: nothing more is read, and no claim is left waiting
            self.errors.append(error)
            self.settle(mine, failed=True)
            raise
        finally:
            try:  # removing a half-written blob may fail too (a full disk): its claim must still be settled
                unpacking.close()
            except OSError as error:
                log.warning("could not close the blob pack of %s (%s); reading its blobs one by one", demo_name, error)
            found = unpacking.found
            with self.lock:
                self.held.update(unpacking.held)  # before ``settle``: a waiter woken finds them
        try:
            self.settle(found)  # may raise (a destination not linked): the missing blobs are read all the same
        finally:
            self.read_missing(sorted(mine.keys() - found))
            with self.lock:
                for sha in () if self.planning else unpacking.held.keys() - self.destined:
                    self.drop(sha)  # arrived after the plan ended, and not in it

    def read_missing(self, missing: list) -> None:
        """Each claimed blob a pack did not hold, handed to the pool to read on its own (else its claim would
        never be settled and the archive would wait for it forever)."""
        for index, sha in enumerate(missing):
            try:
                self.pending.append(self.pool.submit(self.fetch_claimed, sha))
            except RuntimeError:  # the pool is shutting down: the export failed
                self.settle(missing[index:], failed=True)
                raise

    def fetch_claimed(self, sha256: str) -> None:
        try:
            partial = self.cache / f"{sha256}.part"
            self.download(sha256, partial)
            partial.replace(self.cache / sha256)
        except BaseException as error:
            self.errors.append(error)  # this error is the one the export reports
            self.settle([sha256], failed=True)
            raise
        self.settle([sha256])

    def copy_to(self, sha256: str, destination: Path | str) -> None:
        if self.pool is None:  # into the export folder (made if missing), never into a cache swept away
            return self.download_into_folder(sha256, Path(destination))
        if not SHA256.fullmatch(sha256):  # joined to the cache: "../x" or "/x" would be written and read elsewhere
            raise ValueError(f"{sha256!r} is not a blob's sha256")
        with self.lock:
            claim = self.claims.get(sha256)
            if claim is None:  # the first request for a blob fetches it into the cache
                claim = self.claims[sha256] = threading.Event()
                self.pending.append(self.pool.submit(self.fetch_claimed, sha256))
            if self.planned is not None:  # archived from the cache: nothing to link
                self.planned[os.fspath(destination)] = sha256
                self.destined.add(sha256)
                return None
            if not claim.is_set():  # linked when its fetch ends (``settle``): no thread blocked
                self.waiting.setdefault(sha256, []).append(Path(destination))
                return None
        return self.link(sha256, Path(destination))

    def settle(self, shas, failed: bool = False) -> None:
        """Mark these blobs' fetches ended and link every destination that waited for them (none when the fetch
        failed: its own error is raised)."""
        shas, errors = list(shas), []
        try:
            for sha in shas if not failed else ():  # named by its sha256 only once checked
                if sha in self.held:
                    self.fetched.add(sha)
                    continue
                try:
                    stat = (self.cache / sha).stat()
                except OSError as error:  # gone from the cache (its work folder swept) or unreadable: not fetched
                    errors.append(error)
                    continue
                self.checked[(stat.st_dev, stat.st_ino)] = sha
                self.fetched.add(sha)
        finally:  # every claim ends, whatever happened above: a waiter is never left waiting
            with self.lock:
                waiting = [(sha, self.waiting.pop(sha, [])) for sha in shas]
                for sha in shas:
                    self.claims[sha].set()
        for sha, destinations in waiting if not failed else ():
            if sha not in self.fetched:  # its own error is raised
                continue
            for destination in destinations:
                try:
                    self.link(sha, destination)
                except Exception as error:  # every destination is tried, then the first failure raised
                    errors.append(error)
        if errors:
            self.errors.extend(errors)
            raise errors[0]

    def link(self, sha256: str, destination: Path) -> None:
        if not (self.cache / sha256).exists():
            raise FileNotFoundError(f"blob {sha256} could not be read from storage")
        DirectoryBlobs(lambda sha: self.cache / sha).copy_to(sha256, destination)

    def download_into_folder(self, sha256: str, destination: Path) -> None:
        """The blob downloaded to ``destination``, its folder made if missing; a blob that cannot be read leaves
        neither a partial file nor the folder made for it."""
        made = not destination.parent.exists()
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.download(sha256, destination)
        except BaseException:
            destination.unlink(missing_ok=True)
            if made:
                with contextlib.suppress(OSError):  # only when still empty
                    destination.parent.rmdir()
            raise

    def download(self, sha256: str, destination: Path) -> None:
        with destination.open("wb") as out:
            self.copy_checked(sha256, out)

    def copy_checked(self, sha256: str, out) -> None:
        """The blob's bytes into the binary file ``out``, checked against its sha256 (blobs are named by it)."""
        name = sha256_path(sha256)
        if self.reader is not None:
            digest = self.reader.copy(name, out)
        else:
            hashing = hashlib.sha256()
            for chunk in stream_file(default_storage, name):
                hashing.update(chunk)
                out.write(chunk)
            digest = hashing.hexdigest()
        if digest != sha256:
            raise OSError(f"blob {sha256} read from storage does not match its sha256 (read: {digest})")
