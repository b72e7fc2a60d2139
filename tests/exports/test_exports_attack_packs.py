"""Attacks on ``PackWriter`` (the WTPACK2 deflated packs and the WTPACK1 raw ones): an index whose sizes are not
sizes is no index (and never hangs the export's reading thread), a body that ends on a zero-size blob or on a
multiple of ``INFLATE_CHUNK`` of inflated bytes still yields every blob, and a raw and a deflated pack of the same
blobs yield the same ones whatever the pieces the body arrives in."""

import json
import os
import struct
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from isal import isal_zlib

from tests.support.payloads import sha
from workers.exports import packs
from workers.exports.packs import MAGIC, MAGIC_RAW, PackWriter


def head(entries, deflated=True) -> bytes:
    index = json.dumps({"blobs": entries}).encode()
    return (MAGIC if deflated else MAGIC_RAW) + struct.pack(">Q", len(index)) + index


def pack_bytes(blobs, deflated=True) -> bytes:
    body = b"".join(blobs)
    return head([[sha(blob), len(blob)] for blob in blobs], deflated) + (
        isal_zlib.compress(body, 1) if deflated else body
    )


def unpack(data: bytes, cache, pieces, wanted) -> PackWriter:
    writer = PackWriter(wanted, cache)
    start = 0
    for size in pieces:
        writer.write(data[start : start + size])
        start += size
    writer.write(data[start:])
    writer.close()
    return writer


@pytest.mark.parametrize("deflated", [True, False])
@pytest.mark.parametrize("length", [packs.MAX_INDEX_BYTES + 1, 2**63, 2**64 - 1])
def test_a_head_declaring_an_index_longer_than_any_pack_is_no_pack_at_once(tmp_path, deflated, length):
    """The head's index length is judged as soon as it is read: a huge one made the reader gather the whole body
    as the index before finding it was none."""
    blob = b"hello, pack"
    writer = PackWriter([sha(blob)], tmp_path)
    writer.write((MAGIC if deflated else MAGIC_RAW) + struct.pack(">Q", length))
    assert writer.broken
    body = pack_bytes([blob], deflated)
    writer.write(body)
    writer.close()
    assert len(writer.head) == len(MAGIC) + 8  # nothing more gathered
    assert writer.found == set()
    assert list(tmp_path.iterdir()) == []


def test_an_index_of_the_longest_length_allowed_is_still_read(tmp_path):
    """The cap leaves room: an index padded to ``MAX_INDEX_BYTES`` (JSON allows the spaces) is a pack."""
    blob = b"hello, pack"
    index = json.dumps({"blobs": [[sha(blob), len(blob)]]}).encode().ljust(packs.MAX_INDEX_BYTES)
    data = MAGIC + struct.pack(">Q", len(index)) + index + isal_zlib.compress(blob, 1)
    writer = unpack(data, tmp_path, [len(data) // 3], [sha(blob)])
    assert not writer.broken
    assert writer.found == {sha(blob)}
    assert (tmp_path / sha(blob)).read_bytes() == blob


@pytest.mark.parametrize("deflated", [True, False])
@pytest.mark.parametrize("size", [-1, -5, "Infinity", None, [5]])
def test_an_index_whose_size_is_not_a_byte_count_is_no_pack_and_never_hangs(tmp_path, deflated, size):
    """A negative size made ``read_body`` loop for ever (``view[:-n]`` never brings ``left`` to 0): the export's
    thread spun at 100 % CPU and ``wait_all`` never returned. ``Infinity`` raised OverflowError out of ``write``."""
    blob = b"hello, pack"
    entry = f'["{sha(blob)}", {json.dumps(size) if size != "Infinity" else "Infinity"}]'
    index = ('{"blobs": [' + entry + "]}").encode()
    data_head = (MAGIC if deflated else MAGIC_RAW) + struct.pack(">Q", len(index)) + index
    writer = PackWriter([sha(blob)], tmp_path)
    writer.write(data_head)  # the index alone: judged before any body byte arrives (the loop hung on the body)
    assert writer.broken
    writer.write(isal_zlib.compress(blob, 1) if deflated else blob)
    writer.close()
    assert writer.found == set()
    assert list(tmp_path.iterdir()) == []


def test_a_deeply_nested_index_is_no_pack_rather_than_an_error(tmp_path):
    depth = 100_000
    writer = PackWriter([sha(b"x")], tmp_path)
    writer.write(MAGIC + struct.pack(">Q", depth) + b"[" * depth)  # RecursionError escaped write()
    assert writer.broken


@pytest.mark.parametrize("deflated", [True, False])
@pytest.mark.parametrize(
    "blobs",
    [[b"page bytes", b""], [b"a", b"b" * 3000, b""], [b""]],
    ids=["empty-last", "empty-last-of-three", "only-empty"],
)
@pytest.mark.parametrize("piece", [1, 5, 10**6])
def test_a_zero_size_blob_at_the_end_of_the_index_is_found(tmp_path, deflated, blobs, piece):
    """``next_entry`` only ran when a body byte arrived: a zero-size last blob (or a pack of only an empty blob)
    was never listed, and was read on its own."""
    data = pack_bytes(blobs, deflated)
    wanted = {sha(blob) for blob in blobs}
    writer = unpack(data, tmp_path, [piece] * (len(data) // piece), wanted)
    assert writer.found == wanted
    assert not writer.broken
    assert (tmp_path / sha(b"")).read_bytes() == b""


@pytest.mark.parametrize("extra", [1, 100])
@pytest.mark.parametrize("piece", [64 * 1024, 10**9])
def test_the_bytes_inflated_past_a_multiple_of_the_chunk_at_the_body_end_are_not_lost(tmp_path, extra, piece):
    """The last ``decompress(view, INFLATE_CHUNK)`` of the body could return exactly INFLATE_CHUNK bytes having
    consumed all its input while output was still pending inside the inflater; nobody asked for it, so the last
    blob was one byte (or a run) short and thrown away."""
    blob = bytes(3 * packs.INFLATE_CHUNK + extra)
    data = pack_bytes([blob])
    writer = unpack(data, tmp_path, [piece] * (len(data) // piece), [sha(blob)])
    assert writer.found == {sha(blob)}
    assert not writer.broken


def test_a_retry_from_the_start_mid_blob_then_in_full_finds_every_blob(tmp_path):
    blobs = [b"<p>%d</p>" % n * 50 for n in range(20)]
    data = pack_bytes(blobs)
    writer = PackWriter({sha(blob) for blob in blobs}, tmp_path)
    writer.write(data[: len(data) // 2])
    assert writer.seek(0) == 0
    writer.truncate()
    writer.write(data)
    writer.close()
    assert writer.found == {sha(blob) for blob in blobs}
    assert not list(tmp_path.glob("*.part"))
    with pytest.raises(OSError, match="starts again from the beginning"):
        writer.seek(3)
    with pytest.raises(OSError, match="starts again from the beginning"):
        writer.seek(0, os.SEEK_END)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    blobs=st.lists(st.binary(max_size=300) | st.sampled_from([b"", b"a" * 500, bytes(1000)]), min_size=1, max_size=8),
    pieces=st.lists(st.integers(min_value=1, max_value=400), max_size=20),
    chunk=st.sampled_from([1, 7, 64, 4096]),
)
def test_raw_and_deflated_packs_of_the_same_blobs_yield_every_blob(tmp_path_factory, blobs, pieces, chunk):
    """The same blobs are found from a WTPACK1 and a WTPACK2 pack, whatever the pieces and however small the
    inflating chunk (a small ``INFLATE_CHUNK`` brings its boundaries into reach of small blobs)."""
    wanted = {sha(blob) for blob in blobs}
    for deflated in (False, True):
        cache = tmp_path_factory.mktemp("cache")
        with mock.patch.object(packs, "INFLATE_CHUNK", chunk):
            writer = unpack(pack_bytes(blobs, deflated), cache, pieces, wanted)
        assert writer.found == wanted, deflated
        assert not list(cache.glob("*.part"))
        for name in writer.found:
            assert sha((cache / name).read_bytes()) == name
