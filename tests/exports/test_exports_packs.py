"""Blob packs as the export reads them (``workers.exports.packs.PackWriter``): deflated packs and the raw packs made
before them unpack alike from a body that arrives in pieces of any size; only blobs matching their sha256 are kept;
a damaged stream, bytes after it or a stream that inflates past what its index declares stop the unpacking, and
nothing half-written stays behind."""

import hashlib
import json
import struct

import pytest
from isal import isal_zlib

from tests.support.payloads import sha
from workers.exports.packs import MAGIC, MAGIC_RAW, PackWriter

NOISE = b"".join(hashlib.sha256(str(n).encode()).digest() for n in range(700))  # 22 KB that do not compress
PAGE = b"<html>" + b"".join(b"<p>item %d of the page</p>" % n for n in range(3000)) + b"</html>"
BOXES = b"{" + b",".join(b'"uid-%d": [%d, %d, 100, 30]' % (n, n % 97, n * 7 % 1013) for n in range(2000)) + b"}"
BLOBS = [PAGE, NOISE, b"", BOXES]


def pack_bytes(blobs=BLOBS, deflated=True, body_extra=b"") -> bytes:
    index = json.dumps({"blobs": [[sha(blob), len(blob)] for blob in blobs]}).encode()
    body = b"".join(blobs) + body_extra
    head = (MAGIC if deflated else MAGIC_RAW) + struct.pack(">Q", len(index)) + index
    return head + (isal_zlib.compress(body, 1) if deflated else body)


def unpack(data: bytes, cache, piece: int, wanted=None) -> PackWriter:
    writer = PackWriter(wanted if wanted is not None else [sha(blob) for blob in BLOBS], cache)
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])
    writer.close()
    return writer


@pytest.mark.parametrize("deflated", [True, False])
@pytest.mark.parametrize("piece", [1, 7, 4096, 10**7])
def test_every_wanted_blob_is_unpacked_and_checked_whatever_the_pieces(tmp_path, deflated, piece):
    data = pack_bytes(deflated=deflated)
    if piece == 1:
        data = data[:3000] if deflated else data  # byte by byte: the head and the first blob are enough
    writer = unpack(data, tmp_path, piece)
    expected = BLOBS if not (piece == 1 and deflated) else []
    for blob in expected:
        assert (tmp_path / sha(blob)).read_bytes() == blob
    assert writer.found >= {sha(blob) for blob in expected}
    assert not list(tmp_path.glob("*.part"))


def test_a_deflated_pack_is_smaller_and_unwanted_blobs_are_not_written(tmp_path):
    assert len(pack_bytes()) * 3 < len(pack_bytes(deflated=False))
    writer = unpack(pack_bytes(), tmp_path, 1000, wanted=[sha(BLOBS[1])])
    assert writer.found == {sha(BLOBS[1])}
    assert [path.name for path in tmp_path.iterdir()] == [sha(BLOBS[1])]


def test_a_damaged_stream_keeps_the_blobs_before_the_damage_and_nothing_half_written(tmp_path):
    data = bytearray(pack_bytes())
    data[len(data) - 600 : len(data) - 400] = bytes(200)  # inside the last blob's compressed bytes
    writer = unpack(bytes(data), tmp_path, 999)
    assert sha(BLOBS[0]) in writer.found
    assert sha(BLOBS[3]) not in writer.found
    assert not list(tmp_path.glob("*.part"))
    for name in writer.found:
        assert sha((tmp_path / name).read_bytes()) == name


@pytest.mark.parametrize("deflated", [True, False])
def test_bytes_after_the_blobs_make_it_no_pack_but_the_blobs_checked_stay(tmp_path, deflated):
    writer = unpack(pack_bytes(deflated=deflated, body_extra=b"x" * 5000), tmp_path, 4096)
    assert writer.broken
    assert writer.found == {sha(blob) for blob in BLOBS}


def test_a_stream_that_inflates_past_its_index_is_cut_off_in_bounded_pieces(tmp_path):
    index = json.dumps({"blobs": [[sha(b"a" * 10), 10]]}).encode()
    bomb = isal_zlib.compress(b"a" * 10 + bytes(200 * 1024 * 1024), 1)  # 200 MB of zeros behind one small blob
    writer = unpack(MAGIC + struct.pack(">Q", len(index)) + index + bomb, tmp_path, 1024 * 1024, [sha(b"a" * 10)])
    assert writer.broken
    assert writer.found == {sha(b"a" * 10)}


def test_a_retried_body_starts_again(tmp_path):
    data = pack_bytes()
    writer = PackWriter([sha(blob) for blob in BLOBS], tmp_path)
    writer.write(data[: len(data) // 2])
    writer.seek(0)  # the GET is tried again from the start
    writer.write(data)
    writer.close()
    assert writer.found == {sha(blob) for blob in BLOBS}
    assert not list(tmp_path.glob("*.part"))
