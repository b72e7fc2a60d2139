"""Screenshot re-alignment: which captured image best shows the page at the moment of each browser action.

Chrome captures only a few screenshots per second, so a turn's own screenshot may come late; the recorder keeps
other frames around each action (``Turn.frames``). With the tab video the suggestion is the candidate most similar
to the video frame at the action's time; without video it is the last frame captured at or before the action, else
the turn's own screenshot.

The tab video is what the recorder uploads (``VideoChunk``): MediaRecorder WebM cut into chunks, where only the
first chunk of a recorder run holds the WebM header and the file has no duration or seek index. A recorder restart
begins a new run with its own ``started_at`` (recording clock); times inside a run's WebM count from its start. So
the chunks are grouped into runs by ``started_at``; each run's chunks are read from storage one after another as
the decoder asks for them (``RunStream``: about one chunk in memory, however long the video) and decoded forward
once, sampling only the times the turns need. A run stops at its first missing, unreadable or undecodable chunk:
turns after the last good frame of such a run get the no-video rule (logged, never an error).

The choice functions are pure; ``store_suggestions`` reads blobs and writes ``TurnCuration.suggested_screenshot``.
"""

import io
import logging
from dataclasses import dataclass, field

from PIL import Image, ImageChops, ImageStat

from annotation.lib.shapes import frames_of, is_finite_number

logger = logging.getLogger(__name__)

SIGNATURE_SIZE = (64, 36)
EBML_MAGIC = b"\x1a\x45\xdf\xa3"
VIDEO, LAST_BEFORE, OWN = "video", "last-before", "own"


def candidates(own: str | None, frames: list) -> list[tuple[str, float | None]]:
    """``[(sha, timestamp)]``: the turn's screenshot (no timestamp of its own) and its frames."""
    found = [(own, None)] if own else []
    return found + [(f["screenshot"], f.get("timestamp")) for f in frames_of(frames)]


def last_before(action_time: float, own: str | None, frames: list) -> str | None:
    """The last frame captured at or before the action, else the turn's own screenshot."""
    before = [
        (f["timestamp"], f["screenshot"])
        for f in frames_of(frames)
        if is_finite_number(f.get("timestamp")) and f["timestamp"] <= action_time
    ]
    return max(before)[1] if before else own


def signature(image: Image.Image) -> Image.Image:
    """A small grey version of an image, cheap to compare."""
    return image.convert("L").resize(SIGNATURE_SIZE, Image.Resampling.BILINEAR)


def distance(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference of two signatures (0 = identical, 255 = opposite)."""
    return ImageStat.Stat(ImageChops.difference(a, b)).mean[0]


# --------------------------------------------------------------------------------------------------------------
# Video runs


@dataclass
class Run:
    """One MediaRecorder run: its chunks' blob shas in index order, up to the first missing one."""

    started_at: float
    blobs: list = field(default_factory=list)
    first_index: int = 0
    last_index: int = -1
    problem: str | None = None  # why the run ends early (chunk missing, unreadable, corrupt); None: whole


def video_runs(chunks) -> list[Run]:
    """Group ``[(index, blob_sha, started_at)]`` into runs by ``started_at``, each in index order, sorted by start.

    Indexes are consecutive across runs (a restarted recorder goes on from the last index), so a gap inside a run,
    or between a run and the next, means chunks are missing: the run is cut before the gap.
    """
    by_start: dict[float, list] = {}
    for index, blob, started_at in chunks:
        by_start.setdefault(float(started_at), []).append((index, blob))
    runs = []
    for started_at in sorted(by_start):
        ordered = sorted(by_start[started_at])
        run = Run(started_at, first_index=ordered[0][0])
        for index, blob in ordered:
            if run.blobs and index != run.last_index + 1:
                run.problem = f"chunk {run.last_index + 1} missing"
                break
            run.blobs.append(blob)
            run.last_index = index
        runs.append(run)
    for run, following in zip(runs, runs[1:], strict=False):
        if run.problem is None and following.first_index > run.last_index + 1:
            run.problem = f"chunk {run.last_index + 1} missing"
    return runs


def run_bytes(run: Run, read) -> bytes:
    """The run's WebM in one piece, as ``RunStream`` gives it (for tests and small videos: the worker streams)."""
    with RunStream(run, read) as stream:
        return stream.readall()


class RunStream(io.RawIOBase):
    """A run's WebM read from storage one chunk at a time, as the decoder asks for it, so that memory holds about
    one chunk however long the video is. Each chunk is checked as it arrives (``WebmCheck``) and the stream ends
    at the first unreadable chunk or the first bytes that are not well-formed WebM (a corrupt chunk: the decoder
    would skip it silently and show later frames at wrong times); why it ends early is noted in ``run.problem``.

    Not seekable: MediaRecorder WebM has no seek index, so FFmpeg's Matroska demuxer reads it forward like a pipe
    (its own buffer covers the short steps back of probing)."""

    def __init__(self, run: Run, read):
        self.run, self.read_blob = run, read
        self.check = WebmCheck()
        self.ready = memoryview(b"")
        self.next_chunk = 0
        self.chunk_ends: list[int] = []  # byte offset after each chunk read, to name the chunk of a bad byte

    @property
    def problem(self) -> str | None:
        return self.run.problem

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.ready and self.next_chunk <= len(self.run.blobs):
            self.ready = memoryview(self.next_good_bytes())
        count = min(len(buffer), len(self.ready))
        buffer[:count] = self.ready[:count]
        self.ready = self.ready[count:]
        return count

    def next_good_bytes(self) -> bytes:
        """The bytes the next chunk completes (an element may span chunks); after the last one, what is left."""
        index, self.next_chunk = self.next_chunk, self.next_chunk + 1
        data = self.read_chunk(index) if index < len(self.run.blobs) else None
        if data is None:
            good = self.check.finish()
        else:
            self.chunk_ends.append((self.chunk_ends or [0])[-1] + len(data))
            good = self.check.feed(data)
        if self.check.problem and self.run.problem is None:
            chunk = self.run.first_index + next(i for i, end in enumerate(self.chunk_ends) if self.check.bad_at < end)
            self.run.problem = f"chunk {chunk} corrupt ({self.check.problem})"
        if data is None or self.check.problem:
            self.next_chunk = len(self.run.blobs) + 1  # nothing after a bad chunk is used
        return good

    def read_chunk(self, index: int) -> bytes | None:
        """The chunk's blob, None when it cannot be used (the reason goes to ``run.problem``)."""
        sha = self.run.blobs[index]
        try:
            data = self.read_blob(sha)
        except Exception as error:  # noqa: BLE001 (any storage failure: the chunk is missing)
            self.run.problem = f"chunk blob {sha} unreadable ({error})"
            return None
        if index == 0 and not data.startswith(EBML_MAGIC):
            self.run.problem = "first chunk has no WebM header"
            return None
        return data


# WebM (Matroska) element ids: what may follow the segment header and what a cluster holds.
EBML_ID, SEGMENT_ID, CLUSTER_ID, SIMPLE_BLOCK_ID = 0x1A45DFA3, 0x18538067, 0x1F43B675, 0xA3
SEGMENT_CHILDREN = {0x114D9B74, 0x1549A966, 0x1654AE6B, 0x1C53BB6B, 0x1254C367, 0x1043A770, 0x1941A469, 0xEC, 0xBF}
CLUSTER_CHILDREN = {0xE7, SIMPLE_BLOCK_ID, 0xA0, 0xA7, 0xAB, 0xAF, 0x5854, 0xEC, 0xBF}
UNKNOWN = -1
# A frame of a tab recording is far smaller; a size beyond this is corruption, and waiting for the element's end
# would hold the rest of the video in memory.
MAX_ELEMENT = 16 * 1024 * 1024


def vint(data: bytes, position: int, keep_marker: bool) -> tuple[int, int] | None:
    """An EBML variable-length integer at ``position``: ``(value, length)``; UNKNOWN for an all-ones size; None
    when malformed or cut off."""
    if position >= len(data) or data[position] == 0:
        return None
    length = 9 - data[position].bit_length()
    if position + length > len(data):
        return None
    value = int.from_bytes(data[position : position + length], "big")
    if keep_marker:
        return value, length
    value &= (1 << (7 * length)) - 1
    return (UNKNOWN if value == (1 << (7 * length)) - 1 else value), length


def webm_usable_length(data: bytes) -> tuple[int, str | None, int]:
    """How many leading bytes of a (live, MediaRecorder) WebM are well-formed elements, why it stops there (None
    when all of it is) and the byte found wrong (see ``WebmCheck``)."""
    check = WebmCheck()
    usable = len(check.feed(data)) + len(check.finish())
    return usable, check.problem, usable if check.problem is None else check.bad_at


class WebmCheck:
    """The well-formed start of a (live, MediaRecorder) WebM, fed piece by piece: ``feed`` returns the bytes its
    piece completes as whole elements, keeping an element cut by the piece's end until the next piece (or until
    ``finish``, when the stream ended: then it is a problem). Checks element ids and sizes down to each cluster's
    blocks, not block data. After the first problem (``problem``; ``bad_at``: the byte found wrong, counted from
    the stream's start, which may be in the piece after the usable end) nothing more is returned."""

    def __init__(self):
        self.pending = bytearray()  # from the start of the first element not yet returned
        self.offset = 0  # where ``pending`` starts in the stream
        self.in_cluster = False
        self.problem: str | None = None
        self.bad_at: int | None = None

    def feed(self, data: bytes) -> bytes:
        if self.problem is None:
            self.pending += data
        return self.whole_elements(final=False)

    def finish(self) -> bytes:
        return self.whole_elements(final=True)

    def whole_elements(self, final: bool) -> bytes:
        position = 0
        while self.problem is None and position < len(self.pending):
            end = self.element_end(position, final)
            if end is None:
                break
            position = end
        good = bytes(self.pending[:position])
        del self.pending[: len(self.pending) if self.problem else position]  # after a problem nothing is kept
        self.offset += position
        return good

    def element_end(self, position: int, final: bool) -> int | None:
        """Where the element at ``position`` ends (past a container's header: it is stepped into), None when it is
        wrong (noted) or, unless ``final``, not all there yet."""
        data, at = self.pending, self.offset + position
        element = vint(data, position, keep_marker=True)
        size = element and vint(data, position + element[1], keep_marker=False)
        if not element or not size:
            bad_at = position + element[1] if element else position
            if final or (bad_at < len(data) and data[bad_at] == 0):
                self.fail(f"malformed element at byte {self.offset + bad_at}", self.offset + bad_at)
            return None
        (ident, id_length), (length, size_length) = element, size
        body = position + id_length + size_length
        if at == 0 and ident != EBML_ID:
            return self.fail("not WebM", 0)
        if ident in (SEGMENT_ID, CLUSTER_ID):  # containers (MediaRecorder leaves their size unknown): step in
            self.in_cluster = ident == CLUSTER_ID
            return body
        allowed = ident == EBML_ID or ident in SEGMENT_CHILDREN or (self.in_cluster and ident in CLUSTER_CHILDREN)
        if not allowed or length == UNKNOWN:
            return self.fail(f"unexpected element {ident:#x} at byte {at}", at)
        if length > MAX_ELEMENT:
            return self.fail(f"element at byte {at} too large ({length} bytes)", at)
        if body + length > len(data):
            if final:
                self.fail(f"element at byte {at} cut off", self.offset + len(data) - 1)
            return None
        if ident == SIMPLE_BLOCK_ID and not block_track_ok(data, body, length):
            return self.fail(f"bad block at byte {at}", self.offset + body)
        self.in_cluster = self.in_cluster and ident in CLUSTER_CHILDREN  # Cues, Tags... end the cluster; Void not
        return body + length

    def fail(self, problem: str, bad_at: int) -> None:
        self.problem, self.bad_at = problem, bad_at


def block_track_ok(data: bytes, body: int, length: int) -> bool:
    """A SimpleBlock starts with a small track number, a 16-bit timecode and flags."""
    track = vint(data, body, keep_marker=False)
    return bool(track) and 1 <= track[0] <= 16 and length >= track[1] + 3


@dataclass
class Sampled:
    """Video frames (signatures) at the requested times; ``end``: time of the last good frame; ``error``."""

    frames: dict = field(default_factory=dict)
    end: float | None = None
    error: str | None = None


def sample(video, times, trust_tail: bool = True) -> Sampled:
    """Decode ``video`` (bytes, or a readable stream such as ``RunStream``) forward once (no seeking:
    MediaRecorder WebM has no index) and keep, for each time in ``times`` (seconds from the video's start), the
    signature of the last frame at or before it. Times before the first frame get nothing. Times after the last
    frame get it only if ``trust_tail``, decoding went to the end without error and the stream did not end early
    (its ``problem``): the page did not repaint since. Decoding stops at the first error (kept in ``error``).
    """
    import av

    wanted = sorted(set(times))
    result = Sampled()
    previous, position = None, 0
    if isinstance(video, bytes | bytearray):
        if not video:
            result.error = "no video"
            return result
        video = io.BytesIO(video)
    try:
        with av.open(video) as container:
            for frame in container.decode(video=0):
                if frame.time is None:
                    continue
                while position < len(wanted) and wanted[position] < frame.time:
                    if previous is not None:
                        result.frames[wanted[position]] = signature(previous.to_image())
                    position += 1
                previous, result.end = frame, frame.time
                if position == len(wanted):
                    return result  # every time sampled: the rest need not be decoded
    except Exception as error:  # noqa: BLE001 (hostile bytes: any decoder failure ends the usable video)
        result.error = f"{type(error).__name__}: {error}"
    cut_short = getattr(video, "problem", None) is not None
    if previous is not None and trust_tail and result.error is None and not cut_short:
        tail = signature(previous.to_image())
        for time in wanted[position:]:
            result.frames[time] = tail
    return result


def video_frame_at(video: bytes, seconds: float) -> Image.Image | None:
    """The signature (small, grey) of the video frame showing time ``seconds`` from the video's start, or None."""
    return sample(video, [seconds]).frames.get(seconds)


def run_of(runs: list[Run], timestamp: float) -> Run | None:
    """The run recording at ``timestamp``: the last one started at or before it."""
    started = [run for run in runs if run.started_at <= timestamp]
    return started[-1] if started else None


def video_targets(turns, runs: list[Run], read, label: str = "") -> dict:
    """``{position in turns: signature of the video frame at its time}`` for the turns the video covers; each run
    streamed from storage and decoded once. Problems (missing, unreadable, undecodable chunks) are logged; their
    turns are left out."""
    wanted: dict[int, list] = {}
    for position, turn in enumerate(turns):
        run = run_of(runs, turn.timestamp)
        if run is not None:
            wanted.setdefault(id(run), []).append((position, turn))
    targets = {}
    for run in runs:
        if id(run) not in wanted:
            continue
        times = [turn.timestamp - run.started_at for _, turn in wanted[id(run)]]
        with RunStream(run, read) as stream:
            sampled = sample(stream, times)
        problem = run.problem or sampled.error
        if problem:
            logger.warning("realign %s: video run at %.3fs cut short (%s)", label, run.started_at, problem)
        for (position, _), time in zip(wanted[id(run)], times, strict=True):
            if time in sampled.frames:
                targets[position] = sampled.frames[time]
    return targets


# --------------------------------------------------------------------------------------------------------------
# Suggestions


def suggestions(turns, read, runs: list[Run] | None = None, label: str = "") -> list[tuple[str | None, str]]:
    """``[(sha, how)]``, one per turn: ``how`` is VIDEO (the candidate most like the video frame at the action),
    LAST_BEFORE (no usable video at that time) or OWN (a single candidate)."""
    several = [position for position, turn in enumerate(turns) if len(candidates(turn.screenshot_id, turn.frames)) > 1]
    found = video_targets([turns[position] for position in several], runs or [], read, label)
    targets = {several[index]: frame for index, frame in found.items()}
    signatures: dict[str, Image.Image | None] = {}
    chosen = []
    for position, turn in enumerate(turns):
        options = [sha for sha, _ in candidates(turn.screenshot_id, turn.frames)]
        if len(options) < 2:
            chosen.append((turn.screenshot_id, OWN))
            continue
        images = {}
        if position in targets:
            images = {sha: candidate_signature(sha, read, signatures) for sha in options}
            images = {sha: image for sha, image in images.items() if image is not None}
        if images:
            chosen.append((min(images, key=lambda sha: distance(targets[position], images[sha])), VIDEO))
        else:
            chosen.append((last_before(turn.timestamp, turn.screenshot_id, turn.frames), LAST_BEFORE))
    return chosen


def candidate_signature(sha: str, read, cache: dict) -> Image.Image | None:
    """The signature of a screenshot blob (read once per task), None when it cannot be read or decoded."""
    if sha not in cache:
        try:
            cache[sha] = signature(Image.open(io.BytesIO(read(sha))))
        except Exception as error:  # noqa: BLE001 (a missing or broken screenshot is just not a candidate)
            logger.warning("realign: screenshot %s unreadable (%s)", sha, error)
            cache[sha] = None
    return cache[sha]


def demo_runs(demo) -> list[Run]:
    """The demo's video runs (see ``video_runs``)."""
    return video_runs(demo.video_chunks.values_list("index", "blob_id", "started_at"))


def store_suggestions(demo, read=None) -> int:
    """Compute and store the suggestion of every browser turn with frames; returns how many were stored."""
    from annotation.actions.review import do_store_suggestions
    from annotation.models import Turn
    from annotation.store.blobstore import read_blob

    read = read or read_blob
    turns = list(Turn.objects.filter(demonstration=demo).exclude(frames=[]))
    chosen = suggestions(turns, read, demo_runs(demo), label=demo.name)
    counts = {how: sum(1 for _, h in chosen if h == how) for how in (VIDEO, LAST_BEFORE, OWN)}
    logger.info("realign %s: %s", demo.name, counts)
    suggested = [(turn, sha, how) for turn, (sha, how) in zip(turns, chosen, strict=True) if sha]
    do_store_suggestions(demo, suggested)
    return sum(1 for sha, _ in chosen if sha)


def prepare_review(demo, read=None) -> None:
    """The worker's part of review (``workers.realign_demo``): screenshot suggestions and the cached quality checks,
    so the list shows issue counts before anyone opens the demo."""
    from annotation.actions.review import ensure_quality, review_of
    from annotation.models import Turn
    from annotation.store.blobstore import read_blob

    read = read or read_blob
    store_suggestions(demo, read)
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    ensure_quality(demo, review_of(demo), turns, read)
