"""An outside attack on sealed blob packs (``MAGIC_SPLICE``, ``workers.exports.packs``) and on the archives that
splice their blobs as they are (``archive.DeflatedBytes``).

The attacker can write to the bucket but does not know ``SECRET_KEY``; the operator may change the key or leave old
packs behind. Whatever a pack holds, an export must archive each blob's own bytes (the ones its sha256 names), a
manifest that tells the truth, and a tar.gz / zip that reads back; and a pack that is sound must be used.

Each unit test feeds ``PackWriter`` a pack (sound, or altered as it could be in the bucket) and checks the one
invariant that matters: every blob held (deflated) inflates to the bytes its sha256 names, stand-alone (nothing
referring before its start, no last block), every cache file holds the bytes its name names, and the room reserved
is exactly what is held. The S3 tests run whole export jobs against altered packs and compare their archives with
the same job with packs disabled (``HOLD_BYTES = 0``) and with no packs at all."""

import hashlib
import io
import json
import shutil
import struct
import subprocess
import tarfile
import types
import zipfile
import zlib

import pytest
from django.core.files.storage import default_storage
from isal import isal_zlib

from annotation.models import ExportJob, JobStatus, Turn, sha256_path
from tests.support.held import Room
from tests.support.payloads import sha
from workers.exports import packs
from workers.exports.archive import DeflatedBytes, TarWriter, deflate_block
from workers.exports.dataset import RemoteStorageBlobs
from workers.exports.packs import (
    INFLATE_CHUNK,
    MAC_BYTES,
    MAGIC,
    MAGIC_RAW,
    MAGIC_SPLICE,
    PACK_LEVEL,
    PackWriter,
    pack_mac,
)

PAGE = b"<html>" + b"".join(b"<p>row %d of the page</p>" % n for n in range(2500)) + b"</html>"
NOISE = b"".join(hashlib.sha256(b"n%d" % n).digest() for n in range(900))
BOXES = b'{"boxes": [' + b",".join(b"[%d, %d, 10, 10]" % (n, n) for n in range(400)) + b"]}"
BLOBS = [PAGE, NOISE, b"", BOXES]
SEAL = slice(len(MAGIC_SPLICE), len(MAGIC_SPLICE) + MAC_BYTES)


def pieces(blobs=BLOBS) -> list:
    return [deflate_block(blob, b"", PACK_LEVEL) for blob in blobs]


def entries_of(blobs=BLOBS) -> list:
    return [[sha(blob), size, crc, len(data)] for blob, (data, crc, size) in zip(blobs, pieces(blobs), strict=True)]


def sealed(entries=None, body=None, mac=None, blobs=BLOBS, index=None) -> bytes:
    """A pack as ``pack_demo`` writes it (sealed with the test's key); ``entries``, ``body``, ``mac`` or the raw
    ``index`` bytes put in its place."""
    if index is None:
        index = json.dumps({"blobs": entries if entries is not None else entries_of(blobs)}).encode()
    body = body if body is not None else b"".join(data for data, _, _ in pieces(blobs))
    seal = mac if mac is not None else pack_mac(index, hashlib.sha256(body).digest())
    return MAGIC_SPLICE + seal + struct.pack(">Q", len(index)) + index + body


def original_seal() -> bytes:
    return sealed()[SEAL]


def unpack(data: bytes, cache, hold=None, piece: int = 1000, wanted=None, writer_class=PackWriter) -> PackWriter:
    writer = writer_class([sha(blob) for blob in BLOBS] if wanted is None else wanted, cache, hold)
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])
    writer.close()
    return writer


def assert_truthful(writer: PackWriter, cache, room: Room | None) -> None:
    """Whatever a pack did: held blobs are stand-alone deflate of the bytes their sha256 names (as the archive
    splices them), cache files hold their name's bytes, no ``.part`` is left, the room reserved is what is held."""
    for name, held in writer.held.items():
        assert isinstance(held, DeflatedBytes)
        inflater = zlib.decompressobj(-15)
        plain = inflater.decompress(bytes(held.data))  # fresh: a reference before its start fails here
        assert not inflater.eof, "a held blob with a last block would end the archive's deflate stream"
        assert sha(plain) == name
        assert (len(plain), zlib.crc32(plain)) == (held.size, held.crc)
        assert name in writer.found
    for path in cache.iterdir():
        assert not path.name.endswith(".part")
        assert sha(path.read_bytes()) == path.name
        assert path.name in writer.found
    if room is not None:
        assert room.used == sum(len(held.data) for held in writer.held.values())


# --- defects -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wanted", [[PAGE], [PAGE, NOISE, b""], [NOISE]])
def test_a_sound_pack_holds_the_wanted_blobs_when_its_last_blob_is_not_wanted(tmp_path, wanted):
    """An export wants only some of a demo's blobs (a format without screenshots, a later pick): the pack is sound,
    so the wanted blobs should be held. ``check_seal`` is only called from ``end_entry`` after its
    ``if self.blob is None: return``, so when the pack's last entry is not a blob being kept, the seal is never
    checked and every blob kept deflated is dropped at ``close()`` (each then read on its own, one GET each)."""
    room = Room()
    writer = unpack(sealed(), tmp_path, room, wanted=[sha(blob) for blob in wanted])
    assert_truthful(writer, tmp_path, room)
    assert writer.found == {sha(blob) for blob in wanted}


class Recording(PackWriter):
    """A ``PackWriter`` noting the largest piece of inflated bytes it handled at once."""

    largest = 0

    def put_plain(self, data) -> None:
        Recording.largest = max(Recording.largest, len(data))
        super().put_plain(data)


def test_a_forged_blob_inflated_into_the_cache_is_inflated_a_bounded_piece_at_a_time(tmp_path):
    """Without room (evaluations, or past ``HOLD_BYTES``) a forged pack's blob is inflated into the cache:
    ``put_inflated`` bounds one ``decompress`` only by the size the (unsealed, forged) index declares, so a deflate
    bomb declared huge inflates ~1000x its bytes in one call (a 1 MiB GET chunk: ~1 GiB in memory at once). Older
    packs were inflated ``INFLATE_CHUNK`` at a time ("a pack's stream cannot swell memory")."""
    bomb, crc, _ = deflate_block(bytes(48 * 1024 * 1024), b"", 1)  # ~47 KB of deflate
    wanted = sha(b"x")
    pack = sealed(entries=[[wanted, 2**40, crc, len(bomb)]], body=bomb, mac=bytes(MAC_BYTES))
    Recording.largest = 0
    writer = unpack(pack, tmp_path, None, piece=1024 * 1024, wanted=[wanted], writer_class=Recording)
    assert writer.found == set()
    assert_truthful(writer, tmp_path, None)
    assert Recording.largest <= INFLATE_CHUNK, f"{Recording.largest} bytes inflated at once from a forged pack"


def test_a_size_past_a_c_integer_loses_only_its_blob(tmp_path):
    """A forged index declaring a blob's size past 2**63 (JSON integers have no bound; ``int()`` takes it): read
    into the cache, ``put_inflated`` passes ``size - unpacked + 1`` to ``decompress`` as its ``max_length`` and
    isal raises ``OverflowError``, which its ``except isal_zlib.error`` does not catch: ``write`` raises out of the
    GET and the whole pack is dropped (``fetch_pack`` logs it and reads every blob on its own) instead of that one
    blob failing its check as every other forged size does."""
    changed = entries_of()
    changed[1][1] = 10**30
    writer = PackWriter([sha(blob) for blob in BLOBS], tmp_path, None)
    writer.write(sealed(entries=changed, mac=original_seal()))  # raises OverflowError
    writer.close()
    assert_truthful(writer, tmp_path, None)
    assert writer.found == {sha(blob) for blob in BLOBS if blob != NOISE}


# --- attacks that found nothing (must pass) --------------------------------------------------------------------------


def altered() -> dict:
    made = entries_of()
    body = bytearray(b"".join(data for data, _, _ in pieces()))
    flipped = bytearray(body)
    flipped[len(pieces()[0][0]) + 50] ^= 0x10
    reordered = [made[1], made[0], made[2], made[3]]
    reordered_body = pieces()[1][0] + pieces()[0][0] + pieces()[2][0] + pieces()[3][0]
    duplicated = [*made, made[0]]
    seal = original_seal()

    def entry_changed(index, field, value):
        changed = [list(entry) for entry in made]
        changed[index][field] = value
        return sealed(entries=changed, mac=seal)

    return {
        "body bit": sealed(body=bytes(flipped), mac=seal),
        "reordered entries and body": sealed(entries=reordered, body=reordered_body, mac=seal),
        "duplicated sha": sealed(entries=duplicated, body=bytes(body) + pieces()[0][0], mac=seal),
        "size": entry_changed(0, 1, len(PAGE) - 1),
        "crc": entry_changed(3, 2, made[3][2] ^ 1),
        "deflated length": entry_changed(0, 3, made[0][3] + 1),
        "huge size": entry_changed(0, 1, 2**62),
        "negative length": entry_changed(1, 3, -5),
        "float size": entry_changed(0, 1, len(PAGE) + 0.5),
        "string size": entry_changed(0, 1, str(len(PAGE))),
        "null crc": entry_changed(0, 2, None),
        "huge integer text": sealed(index=b'{"blobs": [["%s", 1%s, 1, 1]]}' % (sha(PAGE).encode(), b"0" * 5000)),
        "nested index": sealed(index=b'{"blobs": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
        "not an index": sealed(index=b"\xff\xfe not json"),
        "index length past the body": MAGIC_SPLICE + seal + struct.pack(">Q", 2**63) + b"{}",
        "zero index length": MAGIC_SPLICE + seal + struct.pack(">Q", 0),
        "truncated body": sealed()[:-4],
        "truncated head": sealed()[: len(MAGIC_SPLICE) + 10],
        "no seal": sealed(mac=bytes(MAC_BYTES)),
        "seal of the body alone": sealed(mac=hashlib.sha256(bytes(body)).digest()),
        "magic changed to WTPACK2": MAGIC + sealed()[len(MAGIC) :],
        "magic changed to WTPACK1": MAGIC_RAW + sealed()[len(MAGIC) :],
    }


@pytest.mark.parametrize("name", list(altered()))
@pytest.mark.parametrize("piece", [7, 4096, 10**7])
@pytest.mark.parametrize("with_room", [True, False])
def test_an_altered_pack_never_gives_other_bytes_than_a_blobs_own(tmp_path, name, piece, with_room):
    room = Room() if with_room else None
    writer = unpack(altered()[name], tmp_path, room, piece)
    assert_truthful(writer, tmp_path, room)
    if with_room:
        assert writer.held == {}


@pytest.mark.parametrize("piece", [7, 4096, 10**7])
def test_trailing_bytes_after_a_sound_body_never_hold_a_wrong_blob(tmp_path, piece):
    """Bytes after the body: in the same GET chunk they fail the seal; in a later chunk the seal already matched.
    Either way only each blob's own bytes are held."""
    room = Room()
    writer = unpack(sealed() + b"\x00" * 3000, tmp_path, room, piece)
    assert_truthful(writer, tmp_path, room)


def far_back_and_final() -> dict:
    """Deflate that is not stand-alone: a reference into bytes before its start (spliced, it would decode to the
    archive's bytes before it), a last block (it would end the archive's stream), and what is no deflate."""
    before = b"bytes that come before the blob in the archive, " * 20
    blob = before[:600]
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=before)
    far = compressor.compress(blob) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert len(far) < 40  # it does refer back past its start
    final = zlib.compressobj(6, zlib.DEFLATED, -15)
    final = final.compress(blob) + final.flush(zlib.Z_FINISH)
    return {"far back": (blob, far), "final block": (blob, final), "not deflate": (blob, b"\xff" * 64)}


@pytest.mark.parametrize("kind", ["far back", "final block", "not deflate"])
@pytest.mark.parametrize("with_room", [True, False])
def test_deflate_that_is_not_stand_alone_is_never_held_or_cached_wrong(tmp_path, kind, with_room):
    blob, data = far_back_and_final()[kind]
    entries = [[sha(blob), len(blob), zlib.crc32(blob), len(data)]]
    room = Room() if with_room else None
    for mac in (bytes(MAC_BYTES), original_seal()):
        writer = unpack(sealed(entries=entries, body=data, mac=mac), tmp_path, room, 100, wanted=[sha(blob)])
        assert_truthful(writer, tmp_path, room)
        assert writer.held == {}
        for path in tmp_path.iterdir():
            path.unlink()


def test_a_sealed_blob_spliced_after_other_bytes_decodes_to_itself_in_the_tar_gz(tmp_path):
    """Sound sealed blobs spliced into a tar.gz between other members (ISA-L's deflate of the headers before them,
    a link after): tarfile reads every member back, ``gzip -t`` passes."""
    room, cache = Room(), tmp_path / "cache"
    cache.mkdir()
    writer = unpack(sealed(), cache, room)
    assert writer.found == {sha(blob) for blob in BLOBS}
    path = tmp_path / "x.tar.gz"
    with TarWriter(path, 6, {}) as tar:
        tar.add_bytes("x/before.txt", NOISE[:1000] + PAGE[:5000])
        for n, blob in enumerate(BLOBS):
            tar.add_taken(f"x/{n}.bin", sha(blob), writer.held[sha(blob)], sha(blob))
            tar.add_bytes(f"x/after{n}.txt", PAGE[n : n + 3000])
        tar.add_taken("x/again.bin", sha(PAGE), writer.held[sha(PAGE)], sha(PAGE))
    assert subprocess.run(["gzip", "-t", str(path)], capture_output=True).returncode == 0
    with tarfile.open(path) as tar:
        got = {m.name: (m.type, tar.extractfile(m).read() if m.isfile() else m.linkname) for m in tar}
    assert {got[f"x/{n}.bin"][1] for n in range(4)} == set(BLOBS)
    assert all(got[f"x/{n}.bin"][1] == blob for n, blob in enumerate(BLOBS))
    assert got["x/again.bin"] == (tarfile.LNKTYPE, "x/0.bin")


def test_a_retried_get_after_the_seal_matched_keeps_each_blob_once(tmp_path):
    room = Room()
    data = sealed()
    writer = PackWriter([sha(blob) for blob in BLOBS], tmp_path, room)
    writer.write(data)
    writer.seek(0)  # the GET retried after all was in
    writer.write(data[:200])
    writer.seek(0)
    writer.write(data)
    writer.close()
    assert writer.found == {sha(blob) for blob in BLOBS}
    assert_truthful(writer, tmp_path, room)


@pytest.mark.parametrize("magic", [MAGIC, MAGIC_RAW])
@pytest.mark.parametrize("with_room", [True, False])
def test_older_packs_are_still_read(tmp_path, magic, with_room):
    index = json.dumps({"blobs": [[sha(blob), len(blob)] for blob in BLOBS]}).encode()
    body = b"".join(BLOBS)
    body = isal_zlib.compress(body, 1) if magic == MAGIC else body
    room = Room() if with_room else None
    writer = unpack(magic + struct.pack(">Q", len(index)) + index + body, tmp_path, room)
    assert writer.found == {sha(blob) for blob in BLOBS}
    for name, held in writer.held.items():
        assert sha(bytes(held)) == name
    for path in tmp_path.iterdir():
        assert sha(path.read_bytes()) == path.name


# --- whole export jobs on S3 ---------------------------------------------------------------------------------------


def export(project, researcher, archive_format: str) -> tuple[dict, dict, bytes]:
    job = ExportJob.objects.create(
        project=project, owner=researcher, format="weblinx", statuses=["validated"], archive_format=archive_format
    )
    from workers.exports.jobs import run_export

    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    with default_storage.open(job.file.name, "rb") as handle:
        data = handle.read()
    members = {}
    if archive_format == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            assert archive.testzip() is None
            for name in archive.namelist():
                members[name.partition("/")[2]] = ("file", "", archive.read(name))
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                content = tar.extractfile(member).read() if member.isfile() else b""
                members[member.name.partition("/")[2]] = (member.type, member.linkname.partition("/")[2], content)
    manifest = json.loads(members.pop("manifest.json")[2])["files"]
    manifest.pop("quality.json")
    members.pop("quality.json")
    return members, manifest, data


def assert_manifest_true(members: dict, manifest: dict) -> None:
    by_name = {name: content for name, (kind, _, content) in members.items() if kind != tarfile.LNKTYPE}
    for name, (kind, link, _) in members.items():
        content = by_name[link] if kind == tarfile.LNKTYPE else by_name[name]
        if name in manifest:
            assert manifest[name] == {"sha256": sha(content), "size": len(content)}, name


def gzip_ok(data: bytes, tmp_path) -> bool:
    path = tmp_path / "check.tar.gz"
    path.write_bytes(data)
    return subprocess.run(["gzip", "-t", str(path)], capture_output=True).returncode == 0


def demo_blobs(demo) -> dict:
    out = {}
    for sha256 in packs.demo_shas(demo):
        with default_storage.open(sha256_path(sha256), "rb") as handle:
            out[sha256] = handle.read()
    return out


@pytest.fixture
def corpus(s3_storage):
    from tests.support.corpus import ingest_corpus

    return ingest_corpus(project="attack", demos=2, turns=8, elements=60, seed=5)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_spliced_packs_make_the_archive_of_no_packs_and_of_packs_disabled(
    corpus, researcher, monkeypatch, tmp_path, archive_format
):
    """Every demo packed: the job with room splices (tar.gz) or inflates (zip) the held blobs, reads none on its
    own; the same job with ``HOLD_BYTES = 0`` and with no packs gives the same members, links and manifest."""
    for demo in corpus:
        packs.pack_demo(demo)
    spliced, on_their_own = [], []
    real_add_taken, real_fetch_claimed = TarWriter.add_taken, RemoteStorageBlobs.fetch_claimed

    def add_taken(self, name, key, data, digest):
        if isinstance(data, DeflatedBytes):
            spliced.append(name)
        return real_add_taken(self, name, key, data, digest)

    def fetch_claimed(self, sha256):
        on_their_own.append(sha256)
        return real_fetch_claimed(self, sha256)

    monkeypatch.setattr(TarWriter, "add_taken", add_taken)
    monkeypatch.setattr(RemoteStorageBlobs, "fetch_claimed", fetch_claimed)
    results = [export(corpus[0].project, researcher, archive_format)]
    assert on_their_own == []  # every blob came from a pack
    if archive_format == "tar.gz":
        assert spliced
    monkeypatch.setattr(RemoteStorageBlobs, "HOLD_BYTES", 0)
    results.append(export(corpus[0].project, researcher, archive_format))
    monkeypatch.setattr(RemoteStorageBlobs, "HOLD_BYTES", 256 * 1024 * 1024)
    for demo in corpus:
        packs.delete_pack(demo.name)
    results.append(export(corpus[0].project, researcher, archive_format))
    for members, manifest, data in results:
        assert_manifest_true(members, manifest)
        if archive_format == "tar.gz":
            assert gzip_ok(data, tmp_path)
    assert results[0][:2] == results[1][:2] == results[2][:2]


def bucket_alterations(demo, other) -> dict:
    """The demo's pack as an attacker (or an old key) could leave it in the bucket."""
    with default_storage.open(packs.pack_name(demo.name), "rb") as handle:
        own = handle.read()
    with default_storage.open(packs.pack_name(other.name), "rb") as handle:
        others = handle.read()
    fixed = len(MAGIC_SPLICE) + MAC_BYTES + 8
    length = struct.unpack(">Q", own[fixed - 8 : fixed])[0]
    index = json.loads(own[fixed : fixed + length])
    flipped = bytearray(own)
    flipped[fixed + length + 40] ^= 0x04
    resized = json.dumps({"blobs": [[s, n + 1, c, d] for s, n, c, d in index["blobs"]]}).encode()
    return {
        "body bit": bytes(flipped),
        "other demo's pack": others,
        "trailing bytes": own + b"trailing" * 100,
        "truncated": own[: len(own) - 100],
        "sizes grown": own[: len(MAGIC_SPLICE) + MAC_BYTES]
        + struct.pack(">Q", len(resized))
        + resized
        + own[fixed + length :],
    }


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "alteration", ["body bit", "other demo's pack", "trailing bytes", "truncated", "sizes grown", "another key"]
)
def test_an_export_from_altered_packs_in_the_bucket_is_the_export_without_packs(
    corpus, researcher, tmp_path, alteration, settings
):
    baseline = export(corpus[0].project, researcher, "tar.gz")
    for demo in corpus:
        packs.pack_demo(demo)
    if alteration == "another key":
        settings.SECRET_KEY = "another-secret-key-0123456789abcdefghijklmnopqrstuvwxyz"
    else:
        forged = bucket_alterations(corpus[0], corpus[1])[alteration]
        default_storage.delete(packs.pack_name(corpus[0].name))
        default_storage.save(packs.pack_name(corpus[0].name), io.BytesIO(forged))
    members, manifest, data = export(corpus[0].project, researcher, "tar.gz")
    assert gzip_ok(data, tmp_path)
    assert_manifest_true(members, manifest)
    assert (members, manifest) == baseline[:2]


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pack", ["sound", "body bit", "other demo's pack"])
def test_evaluations_read_each_blobs_own_bytes_from_sealed_packs(corpus, tmp_path, pack):
    """Without ``planned`` (evaluations, ``export_dataset``'s cache): ``read`` and the linked files give each blob's
    own bytes, from a sound pack or an altered one."""
    for demo in corpus:
        packs.pack_demo(demo)
    if pack != "sound":
        forged = bucket_alterations(corpus[0], corpus[1])[pack]
        default_storage.delete(packs.pack_name(corpus[0].name))
        default_storage.save(packs.pack_name(corpus[0].name), io.BytesIO(forged))
    expected = demo_blobs(corpus[0])
    rows = Turn.objects.filter(demonstration=corpus[0]).values_list("page_id", "bboxes_id", "screenshot_id")
    turns = tuple(types.SimpleNamespace(page=p, bboxes=b, screenshot=s) for p, b, s in rows)
    with RemoteStorageBlobs(tmp_path / "cache") as blobs:
        list(blobs.prefetch([types.SimpleNamespace(name=corpus[0].name, turns=turns)]))
        for n, sha256 in enumerate(sorted(expected)):
            blobs.copy_to(sha256, tmp_path / "out" / f"{n}.bin")
        got = {sha256: blobs.read(sha256) for sha256 in expected}
    assert got == expected
    for n, (_, content) in enumerate(sorted(expected.items())):
        assert (tmp_path / "out" / f"{n}.bin").read_bytes() == content
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_blob_shared_by_two_demos_does_not_cost_the_second_demo_its_whole_pack(corpus, researcher, monkeypatch):
    """Two demos share a blob (the same page, screenshot or bboxes: common), and it is the last entry of the second
    demo's pack (entries sorted by sha256). ``prefetch`` gives the shared blob to the first demo's pack only, so the
    second's ``PackWriter`` does not want its last entry, ``end_entry`` returns before ``check_seal``
    (packs.py, ``if self.blob is None: return``), and every blob of the second pack kept deflated is dropped at
    ``close()``: all of them read on their own, one GET each, though both packs are sound."""
    first, second = corpus
    shas = {demo.pk: set(packs.demo_shas(demo)) for demo in corpus}
    shared = max(shas[first.pk] | shas[second.pk])
    owner, other = (first, second) if shared in shas[first.pk] else (second, first)
    field = next(
        name
        for name in ("page_id", "bboxes_id", "screenshot_id")
        if Turn.objects.filter(demonstration=owner, **{name: shared}).exists()
    )
    turn = Turn.objects.filter(demonstration=other).order_by("pk").first()
    Turn.objects.filter(pk=turn.pk).update(**{field: shared})
    for demo in corpus:
        packs.pack_demo(demo)
    on_their_own = []
    real_fetch_claimed = RemoteStorageBlobs.fetch_claimed

    def fetch_claimed(self, sha256):
        on_their_own.append(sha256)
        return real_fetch_claimed(self, sha256)

    monkeypatch.setattr(RemoteStorageBlobs, "fetch_claimed", fetch_claimed)
    members, manifest, _ = export(first.project, researcher, "tar.gz")
    assert_manifest_true(members, manifest)
    assert on_their_own == [], f"{len(on_their_own)} blobs of sound packs read on their own"
