"""Attacks on ``RemoteStorageBlobs`` (S3 exports): every claim on a blob ends, whatever fails, so that nothing waits
for it forever. Each waiter runs in a thread of its own and is given a few seconds: a hang is "still waiting"."""

import errno
import hashlib
import io
import json
import shutil
import struct
import threading
import types
from pathlib import Path
from unittest import mock

import pytest
from django.core.files.storage import default_storage

from annotation.models import sha256_path
from tests.support.held import PATIENCE, in_threads
from workers.exports import packs
from workers.exports.dataset import RemoteStorageBlobs
from workers.exports.packs import pack_name

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def stored_blob(data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    default_storage.save(sha256_path(sha), io.BytesIO(data))
    return sha


def stored_pack(demo_name: str, blobs: list[bytes]) -> None:
    """A raw (``MAGIC_RAW``) pack of ``blobs`` saved in the bucket as the demo's."""
    index = json.dumps({"blobs": [[hashlib.sha256(blob).hexdigest(), len(blob)] for blob in blobs]}).encode()
    body = packs.MAGIC_RAW + struct.pack(">Q", len(index)) + index + b"".join(blobs)
    default_storage.save(pack_name(demo_name), io.BytesIO(body))


def demo(name: str, *shas: str):
    turns = tuple(types.SimpleNamespace(page=sha, bboxes=None, screenshot=None) for sha in shas)
    return types.SimpleNamespace(name=name, turns=turns)


def waited(wait, items) -> list:
    """``wait(item)`` for each from a thread of its own: "in", its error's name, or "still waiting" (a hang)."""
    return in_threads(lambda item: (wait(item), "in")[1], items)


def planned(blobs, tmp_path, shas) -> list:
    for sha in shas:
        blobs.copy_to(sha, str(tmp_path / "out" / sha))
    return [str(tmp_path / "cache" / sha) for sha in shas]


# a pack's blobs written to cache files (no room in memory), or kept in memory (which a swept folder cannot take)
HELD = pytest.mark.parametrize(("hold_bytes", "held"), [(0, False), (RemoteStorageBlobs.HOLD_BYTES, True)])


@HELD
def test_a_work_folder_swept_while_a_pack_streams_in_fails_every_claim_instead_of_hanging(
    s3_storage, tmp_path, hold_bytes, held
):
    """A cancelled job is "not running": ``sweep_job_folders`` may remove its folder, the cache with it, while a
    pack is still read. The blobs the pack wrote there are gone before they are settled: their waiters (the
    archive, in the job's own thread) must get an error, not wait forever; a blob kept in memory is in."""
    packed, loose = b"<html>in the pack</html>", b"\x89PNG not in the pack"
    page, shot = stored_blob(packed), stored_blob(loose)
    stored_pack("demo", [packed])
    outcome = []

    def export():
        with RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
            blobs.HOLD_BYTES = hold_bytes
            copy = blobs.reader.copy

            def swept_at_the_end(name, out, hashed=True):
                digest = copy(name, out, hashed)
                if name.startswith(packs.PREFIX):
                    shutil.rmtree(tmp_path / "cache")
                return digest

            blobs.reader.copy = swept_at_the_end
            list(blobs.prefetch([demo("demo", page, shot)]))
            outcome.extend(waited(blobs.wait, planned(blobs, tmp_path, [page, shot])))

    with pytest.raises(FileNotFoundError):
        export()
    assert outcome == ["in" if held else "FileNotFoundError", "FileNotFoundError"]


@HELD
def test_a_blob_that_cannot_be_looked_at_once_fetched_fails_its_claim_instead_of_hanging(
    s3_storage, tmp_path, hold_bytes, held
):
    """``settle`` looks at each fetched blob (``stat``) before it ends its claim; that failing (an I/O error) must
    fail the claim, and not leave it, and every other blob of the same pack, waited for forever."""
    first, second = b"<html>first</html>", b"<html>second</html>"
    one, two, alone = stored_blob(first), stored_blob(second), stored_blob(b"<html>read on its own</html>")
    stored_pack("demo", [first, second])
    real_stat = Path.stat

    def stat(self, *args, **kwargs):
        if self.name in (one, alone):
            raise OSError(errno.EIO, "Input/output error")
        return real_stat(self, *args, **kwargs)

    outcome = []

    def export():
        with mock.patch.object(Path, "stat", stat), RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
            blobs.HOLD_BYTES = hold_bytes
            list(blobs.prefetch([demo("demo", one, two)]))
            outcome.extend(waited(blobs.wait, planned(blobs, tmp_path, [one, two, alone])))

    with pytest.raises(OSError, match="Input/output error"):
        export()
    assert outcome == ["in" if held else "OSError", "in", "OSError"]  # a blob in memory is not looked at


class Interrupted(BaseException):
    """Not an ``Exception``: what a pack's fetch must not treat as the pack's failure, nor leave claims behind."""


def test_a_base_exception_out_of_a_packs_read_ends_its_claims(s3_storage, tmp_path):
    packed, loose = b"<html>in the pack</html>", b"\x89PNG not in the pack"
    page, shot = stored_blob(packed), stored_blob(loose)
    stored_pack("demo", [packed])
    outcome = []

    def export():
        with RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
            copy = blobs.reader.copy

            def interrupted(name, out, hashed=True):
                if name.startswith(packs.PREFIX):
                    raise Interrupted
                return copy(name, out, hashed)

            blobs.reader.copy = interrupted
            list(blobs.prefetch([demo("demo", page, shot)]))
            outcome.extend(waited(blobs.wait, planned(blobs, tmp_path, [page, shot])))

    with pytest.raises(Interrupted):
        export()
    assert outcome == ["Interrupted", "Interrupted"]


def test_fetches_cancelled_by_a_failed_export_end_their_claims(s3_storage, tmp_path):
    """Leaving the block on an error cancels the fetches not started: their claims end as failed, so ``read``
    (documented to work after the block too) answers instead of waiting forever."""
    shas = [stored_blob(f"<html>{number}</html>".encode()) for number in range(RemoteStorageBlobs.FETCHERS + 2)]
    gate = threading.Event()
    blobs = RemoteStorageBlobs(tmp_path / "cache", planned=True)

    def export():
        with blobs:
            download = blobs.download
            blobs.download = lambda sha, destination: gate.wait(PATIENCE) and download(sha, destination)
            planned(blobs, tmp_path, shas)  # every fetcher busy: the last two wait in the pool's queue
            threading.Timer(0.5, gate.set).start()
            raise ValueError("the exporter failed")

    with pytest.raises(ValueError, match="the exporter failed"):
        export()
    assert all(blobs.claims[sha].is_set() for sha in shas)
    assert waited(blobs.read, shas[-2:]) == ["in", "in"]  # read from storage on their own
