"""Sealed packs (``MAGIC_SPLICE``): each blob deflated on its own, the index and body sealed with the server's key
(``pack_mac``). Kept in memory for the archive, a blob stays deflated (``DeflatedBytes``) and is spliced into the
tar.gz as it is; it is held only once the whole body has arrived and the seal matches. Read into the cache (no room,
or an evaluation), each blob is inflated and checked against its sha256, never past the size its index declares."""

import hashlib
import json
import os
import struct
import tarfile

import pytest
from isal import isal_zlib

from tests.support.held import Arriving, Room
from tests.support.payloads import sha
from workers.exports.archive import DeflatedBytes, deflate_block, write_archive
from workers.exports.packs import MAC_BYTES, MAGIC_SPLICE, PACK_LEVEL, PackWriter, pack_mac

PAGE = b"<html>" + b"".join(b"<p>item %d of the page</p>" % n for n in range(3000)) + b"</html>"
NOISE = b"".join(hashlib.sha256(str(n).encode()).digest() for n in range(700))
BLOBS = [PAGE, NOISE, b"", b"{}"]


def sealed_pack(blobs=BLOBS, entries=None, body=None, mac=None) -> bytes:
    """A sealed pack of ``blobs`` as ``pack_demo`` writes it; ``entries``, ``body`` or ``mac`` put in its place (a
    pack altered in the bucket)."""
    pieces = [deflate_block(blob, b"", PACK_LEVEL) for blob in blobs]
    made = [[sha(blob), size, crc, len(data)] for blob, (data, crc, size) in zip(blobs, pieces, strict=True)]
    index = json.dumps({"blobs": entries if entries is not None else made}).encode()
    body = body if body is not None else b"".join(data for data, _, _ in pieces)
    seal = mac if mac is not None else pack_mac(index, hashlib.sha256(body).digest())
    return MAGIC_SPLICE + seal + struct.pack(">Q", len(index)) + index + body


def unpack(data: bytes, cache, hold=None, piece: int = 1000, wanted=None) -> PackWriter:
    writer = PackWriter(wanted if wanted is not None else [sha(blob) for blob in BLOBS], cache, hold)
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])
    writer.close()
    return writer


@pytest.mark.parametrize("piece", [1, 333, 10**7])
def test_a_sealed_packs_blobs_are_held_deflated_and_inflate_to_themselves(tmp_path, piece):
    room = Room()
    writer = unpack(sealed_pack(), tmp_path, room, piece)
    assert writer.found == set(writer.held) == {sha(blob) for blob in BLOBS}
    for blob in BLOBS:
        held = writer.held[sha(blob)]
        assert isinstance(held, DeflatedBytes)
        assert (held.size, held.crc, held.inflate()) == (len(blob), isal_zlib.crc32(blob), blob)
    assert room.used == sum(len(held.data) for held in writer.held.values())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("piece", [1, 333, 10**7])
def test_without_room_a_sealed_packs_blobs_are_inflated_into_the_cache_and_checked(tmp_path, piece):
    writer = unpack(sealed_pack(), tmp_path, None, piece)
    assert writer.found == {sha(blob) for blob in BLOBS}
    assert writer.held == {}
    for blob in BLOBS:
        assert (tmp_path / sha(blob)).read_bytes() == blob
    assert not list(tmp_path.glob("*.part"))


def altered_packs() -> dict:
    pieces = [deflate_block(blob, b"", PACK_LEVEL) for blob in BLOBS]
    body = bytearray(b"".join(data for data, _, _ in pieces))
    body[len(pieces[0][0]) + 100] ^= 1  # a bit of the noise's deflated bytes
    entries = [[sha(blob), size, crc, len(data)] for blob, (data, crc, size) in zip(BLOBS, pieces, strict=True)]
    entries[3][2] ^= 1  # the crc32 of "{}"
    return {
        "body": sealed_pack(body=bytes(body), mac=sealed_pack()[len(MAGIC_SPLICE) : len(MAGIC_SPLICE) + MAC_BYTES]),
        "index": sealed_pack(entries=entries, mac=sealed_pack()[len(MAGIC_SPLICE) : len(MAGIC_SPLICE) + MAC_BYTES]),
        "seal": sealed_pack(mac=bytes(MAC_BYTES)),
        "resealed without the key": sealed_pack(body=bytes(body), mac=hashlib.sha256(bytes(body)).digest()),
    }


@pytest.mark.parametrize("altered", ["body", "index", "seal", "resealed without the key"])
def test_an_altered_sealed_pack_holds_nothing_and_gives_its_room_back(tmp_path, altered):
    room = Room()
    writer = unpack(altered_packs()[altered], tmp_path, room)
    assert writer.held == {}
    assert writer.found == set()
    assert room.used == 0


def test_a_sealed_pack_made_with_another_key_holds_nothing(tmp_path, settings):
    data = sealed_pack()
    settings.SECRET_KEY = "another-secret-key-0123456789abcdefghijklmnopqrstuv"
    room = Room()
    assert unpack(data, tmp_path, room).held == {}
    assert room.used == 0


def test_an_altered_body_read_into_the_cache_loses_only_the_blob_it_altered(tmp_path):
    writer = unpack(altered_packs()["body"], tmp_path, None)
    assert writer.found == {sha(blob) for blob in BLOBS if blob != NOISE}
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(sha(blob) for blob in BLOBS if blob != NOISE)


def test_a_blob_that_inflates_past_its_declared_size_is_not_written_past_it(tmp_path):
    big = b"a" * (8 * 1024 * 1024)
    data, crc, _ = deflate_block(big, b"", PACK_LEVEL)
    pack = sealed_pack(blobs=[big], entries=[[sha(b"a" * 10), 10, crc, len(data)]], body=data)
    writer = unpack(pack, tmp_path, None, 4096, wanted=[sha(b"a" * 10)])
    assert writer.found == set()
    assert list(tmp_path.iterdir()) == []


def test_a_body_cut_short_holds_nothing_and_gives_its_room_back(tmp_path):
    room = Room()
    data = sealed_pack()
    writer = PackWriter([sha(blob) for blob in BLOBS], tmp_path, room)
    writer.write(data[:-3])  # all but the last blob's last bytes
    assert writer.held == {}
    writer.close()
    assert room.used == 0
    assert writer.found == set()


def test_blobs_spliced_deflated_into_a_tar_gz_make_the_archive_of_the_same_files(tmp_path):
    root, cache = tmp_path / "out", tmp_path / "cache"
    root.mkdir()
    cache.mkdir()
    (root / "replay.json").write_text('{"turns": []}' * 100)
    planned = {
        str(root / "a" / "page.html"): str(cache / sha(PAGE)),
        str(root / "b" / "page.html"): str(cache / sha(PAGE)),
    }
    planned |= {str(root / "a" / f"{n}.bin"): str(cache / sha(blob)) for n, blob in enumerate(BLOBS[1:])}
    for blob in BLOBS:
        (cache / sha(blob)).write_bytes(blob)
    known = {file: os.path.basename(file) for file in planned.values()}
    files = write_archive(root, tmp_path / "files.tar.gz", planned=planned, known=known, top="x")
    held = {}
    for blob in BLOBS:
        data, crc, size = deflate_block(blob, b"", PACK_LEVEL)
        held[sha(blob)] = DeflatedBytes(data, crc, size)
        (cache / sha(blob)).unlink()
    spliced = write_archive(
        root, tmp_path / "spliced.tar.gz", planned=planned, arriving=Arriving(held), known=known, top="x"
    )
    assert spliced == files

    def members(path):
        with tarfile.open(path) as archive:  # reading to the end checks the gzip member's crc32 and length
            return {m.name: (m.type, m.linkname, archive.extractfile(m).read() if m.isfile() else b"") for m in archive}

    assert members(tmp_path / "spliced.tar.gz") == members(tmp_path / "files.tar.gz")
    assert members(tmp_path / "spliced.tar.gz")["x/b/page.html"][0] == tarfile.LNKTYPE


def test_a_sealed_pack_made_before_the_key_was_rotated_holds_its_blobs(tmp_path, settings):
    """As Django's signing does, a seal made with a key now in ``SECRET_KEY_FALLBACKS`` still matches."""
    data = sealed_pack()
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "another-secret-key-0123456789abcdefghijklmnopqrstuv"
    assert set(unpack(data, tmp_path, Room()).held) == {sha(blob) for blob in BLOBS}


@pytest.mark.parametrize("hold", [None, "room"])
def test_a_blob_an_index_declares_larger_than_a_pack_holds_is_not_taken_from_it(tmp_path, monkeypatch, hold):
    """Not written or held (read on its own instead), so a forged size cannot have the export write past
    ``MAX_BLOB_BYTES`` before the blob fails its check; the pack's other blobs are taken as usual."""
    monkeypatch.setattr("workers.exports.packs.MAX_BLOB_BYTES", len(PAGE) - 1)
    room = Room() if hold else None
    writer = unpack(sealed_pack(), tmp_path, room)
    others = {sha(blob) for blob in BLOBS if blob != PAGE}
    assert writer.found == others
    assert set(writer.held) == (others if hold else set())
    assert sorted(path.name for path in tmp_path.iterdir()) == ([] if hold else sorted(others))
    if room is not None:
        assert room.used == sum(len(held.data) for held in writer.held.values())


def test_an_index_at_the_largest_blob_a_pack_holds_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr("workers.exports.packs.MAX_BLOB_BYTES", len(PAGE))
    writer = unpack(sealed_pack(), tmp_path, None)
    assert writer.found == {sha(blob) for blob in BLOBS}
