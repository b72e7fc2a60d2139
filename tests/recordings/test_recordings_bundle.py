"""Bundles (``POST /api/recordings/<name>/bundle/``): blobs and turns in one framed, optionally gzipped request,
checked whole and stored atomically, idempotent on retry, per project."""

import errno
import gzip
import json
import os
import shutil
import time

import pytest

from annotation.models import Blob, ProjectBlob, Role, sha256_path
from tests.support.actors import make_user, token_client
from tests.support.payloads import (
    BlobFile,
    browser_turn,
    chat_turn,
    numbered_turns,
    page_html,
    png_bytes,
    state_blobs,
    state_refs,
)
from tests.support.recorder import (
    BUNDLE,
    assert_nothing_stored,
    blob_url,
    frame,
    missing,
    post_bundle,
    recordings_url,
    start_demo,
    stored_files,
    upload_blobs,
)


def assert_refused(response, status: int, field: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert field in [error["field"] for error in body["errors"]], body
    assert "nothing was stored" in body["detail"]


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def demo(client):
    return start_demo(client)


@pytest.fixture
def files():
    return state_blobs()


def test_a_bundle_stores_its_blobs_and_turns_in_one_request(client, demo, files, media_storage):
    turns = numbered_turns(3, state_refs(files)) + [chat_turn("chat-1", timestamp=9.0)]

    response = post_bundle(client, demo.name, frame(turns, list(files.values())))

    assert response.status_code == 201, response.content
    assert response.json() == {
        "created": 4,
        "duplicates": 0,
        "turns": [{"client_id": turn["client_id"], "seq": seq} for seq, turn in enumerate(turns)],
        "blobs_created": 3,
    }
    assert [row.client_id for row in demo.turns.order_by("seq")] == [turn["client_id"] for turn in turns]
    for blob in files.values():
        assert client.head(blob_url(blob.sha256)).status_code == 200
        assert b"".join(client.get(f"/api/blobs/{blob.sha256}").streaming_content) == blob.data
    assert len(stored_files(media_storage)) == 3


def test_the_old_batch_path_is_the_same_endpoint_for_one_release(client, demo, files, owner, api_for):
    """``…/batch/`` (the path before bundles had their name) stores and answers as ``…/bundle/``, with the same
    access check: a member of another project gets the same 404."""
    body = frame(numbered_turns(2, state_refs(files)), list(files.values()))
    old = client.post(recordings_url(demo.name, "batch"), body, content_type=BUNDLE)
    retry = post_bundle(client, demo.name, body)
    stranger = api_for(make_user("stranger")).post(recordings_url(demo.name, "batch"), body, content_type=BUNDLE)

    assert old.status_code == 201, old.content
    assert retry.status_code == 200
    assert retry.json()["duplicates"] == 2
    assert stranger.status_code == 404


def test_a_gzipped_bundle_is_inflated_and_stored(client, demo, files):
    turns = numbered_turns(2, state_refs(files))

    response = post_bundle(client, demo.name, gzip.compress(frame(turns, list(files.values()))), gzipped=True)

    assert response.status_code == 201, response.content
    assert demo.turns.count() == 2
    assert Blob.objects.count() == 3


def test_a_retried_bundle_stores_nothing_twice_and_answers_the_same_seqs(client, demo, files, media_storage):
    body = frame(numbered_turns(2, state_refs(files)), list(files.values()))
    first = post_bundle(client, demo.name, body)

    retry = post_bundle(client, demo.name, body)

    assert retry.status_code == 200, retry.content
    assert retry.json() == {**first.json(), "created": 0, "duplicates": 2, "blobs_created": 0}
    assert demo.turns.count() == 2
    assert (Blob.objects.count(), ProjectBlob.objects.count(), len(stored_files(media_storage))) == (3, 3, 3)


def test_a_leftover_file_at_a_blobs_name_is_replaced_not_stored_beside(client, demo, files, media_storage):
    """A batch rolled back after its files were written leaves them, unreferenced; the next upload of those bytes
    writes the blob whole at its own name again (the storage overwrites: no second, suffixed copy)."""
    page = files["page"]
    leftover = media_storage / sha256_path(page.sha256)
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(page.data[: len(page.data) // 2])  # cut short, as a crash mid-write would leave it

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), list(files.values())))

    assert response.status_code == 201, response.content
    assert Blob.objects.get(sha256=page.sha256).file.name == sha256_path(page.sha256)
    assert leftover.read_bytes() == page.data
    assert sorted(path.name for path in stored_files(media_storage)) == sorted(blob.sha256 for blob in files.values())


def test_turns_may_use_blobs_the_project_has_from_earlier_uploads(client, demo, files):
    upload_blobs(client, files.values())

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), []))

    assert response.status_code == 201, response.content
    assert response.json()["blobs_created"] == 0


def test_a_bundle_of_blobs_only_gives_the_project_them(client, demo, files):
    response = post_bundle(client, demo.name, frame([], list(files.values())))

    assert response.status_code == 201, response.content
    assert missing(client, [blob.sha256 for blob in files.values()]).json() == {"missing": []}
    assert demo.turns.count() == 0


def test_a_blob_whose_bytes_do_not_match_its_sha256_stores_nothing(client, demo, files, media_storage):
    blobs = list(files.values())
    body = frame(numbered_turns(1, state_refs(files)), blobs, shas={1: blobs[0].sha256[::-1]})

    assert_refused(post_bundle(client, demo.name, body), 400, "blobs[1].sha256")
    assert_nothing_stored(demo, media_storage)
    assert ProjectBlob.objects.count() == 0


def test_an_image_that_does_not_decode_stores_nothing_and_names_the_blob(client, demo, media_storage):
    broken = BlobFile(png_bytes(64, 64)[:-30], "image/png")
    files = {**state_blobs(), "screenshot": broken}

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), list(files.values())))

    assert_refused(response, 400, "blobs[0]")
    assert_nothing_stored(demo, media_storage)


def test_a_refused_blob_leaves_none_of_the_blobs_checked_after_it(client, demo, media_storage):
    """Blobs that pass are written (privately) while the others are checked: the batch answers only once every
    check has ended and then removes them all, however many passed after the refused one."""
    broken = BlobFile(png_bytes(64, 64)[:-30], "image/png")
    pages = [BlobFile(page_html(title=f"Page {i}") * 50, "text/html") for i in range(40)]
    turns = [browser_turn(f"t-{i}", page=page.sha256) for i, page in enumerate(pages)]

    response = post_bundle(client, demo.name, frame(turns, [broken, *pages]))

    assert_refused(response, 400, "blobs[0]")
    assert_nothing_stored(demo, media_storage)


def test_bboxes_that_are_not_numbers_are_refused_naming_the_box(client, demo, media_storage):
    files = {
        **state_blobs(),
        "bboxes": BlobFile(b'{"a1b2": {"x": 1, "y": 2, "width": "3", "height": 4}}', "application/json"),
    }

    response = post_bundle(client, demo.name, frame([], list(files.values())))

    assert_refused(response, 400, "blobs[2].a1b2.width")
    assert_nothing_stored(demo, media_storage)


@pytest.mark.parametrize("number", ["1e400", "-1e999", "NaN", "Infinity"])
def test_bboxes_with_a_number_no_double_holds_are_refused(client, demo, media_storage, number):
    bboxes = BlobFile(f'{{"a1": {{"x": {number}, "y": 2, "width": 3, "height": 4}}}}'.encode(), "application/json")

    response = post_bundle(client, demo.name, frame([], [bboxes]))

    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"].startswith("blobs[0]")
    assert_nothing_stored(demo, media_storage)


def test_a_bad_turn_stores_none_of_the_bundles_blobs(client, demo, files, media_storage):
    turns = numbered_turns(2, state_refs(files))
    del turns[1]["arguments"]["metadata"]

    assert_refused(
        post_bundle(client, demo.name, frame(turns, list(files.values()))), 400, "turns[1].arguments.metadata"
    )
    assert_nothing_stored(demo, media_storage)
    assert ProjectBlob.objects.count() == 0


def test_a_turn_id_reused_with_other_content_is_a_conflict_and_stores_no_blob(client, demo, files, media_storage):
    assert post_bundle(client, demo.name, frame([chat_turn("c-1")], [])).status_code == 201
    other = state_blobs(seed=7)
    turns = [browser_turn("t-1", **state_refs(other)), chat_turn("c-1", utterance="changed")]

    response = post_bundle(client, demo.name, frame(turns, list(other.values())))

    assert response.status_code == 409, response.content
    assert response.json()["errors"][0]["field"] == "turns[1].client_id"
    assert_nothing_stored(demo, media_storage, turns=1)


def test_a_blobs_problem_is_reported_before_a_turns_conflict(client, demo, files, media_storage):
    """The turns' rows are written while the blobs are checked; a blob that fails rolls them back, and its problem
    is the one reported, as when the checks ran first."""
    assert post_bundle(client, demo.name, frame([chat_turn("c-1")], [])).status_code == 201
    broken = {**state_blobs(seed=7), "screenshot": BlobFile(png_bytes(64, 64)[:-30], "image/png")}
    turns = [browser_turn("t-1", **state_refs(broken)), chat_turn("c-1", utterance="changed")]

    response = post_bundle(client, demo.name, frame(turns, list(broken.values())))

    assert_refused(response, 400, "blobs[0]")
    assert_nothing_stored(demo, media_storage, turns=1)


def test_a_turn_referring_to_a_blob_neither_sent_nor_stored_names_it(client, demo, files, media_storage):
    blobs = [files["page"], files["bboxes"]]

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), blobs))

    assert_refused(response, 400, "turns[0].screenshot")
    assert_nothing_stored(demo, media_storage)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"turns": []}', "body"),  # no newline: no manifest line
        (b"[1]\n", "body"),
        (b'{"turns": [], "blobs": []}\n', "turns"),
        (b'{"turns": [], "blobs": [{"sha256": "x", "media_type": "image/png", "size": 1}]}\nx', "blobs[0].sha256"),
        (b'{"blobs": [{"sha256": "' + b"a" * 64 + b'", "media_type": "text/x", "size": 1}]}\nx', "blobs[0].media_type"),
        (b'{"blobs": [{"sha256": "' + b"a" * 64 + b'", "media_type": "text/html", "size": 0}]}\n', "blobs[0].size"),
        (b'{"blobs": [{"sha256": "' + b"a" * 64 + b'", "media_type": "text/html", "size": 5}]}\nabc', "body"),
    ],
)
def test_a_malformed_frame_is_a_400_naming_the_field(client, demo, media_storage, body, field):
    assert_refused(post_bundle(client, demo.name, body), 400, field)
    assert_nothing_stored(demo, media_storage)


def test_the_same_blob_twice_in_a_bundle_is_refused(client, demo, files):
    blob = files["page"]
    assert_refused(post_bundle(client, demo.name, frame([], [blob, blob])), 400, "blobs[1].sha256")


def test_a_blob_over_the_blob_limit_is_a_413_naming_it(client, demo, files, settings, media_storage):
    settings.INGEST_MAX_BLOB_BYTES = len(files["page"].data) - 1

    response = post_bundle(client, demo.name, frame([], list(files.values())))

    assert_refused(response, 413, "blobs[1].size")
    assert_nothing_stored(demo, media_storage)


def test_a_gzip_bomb_is_a_413_without_inflating_it_whole(client, demo, settings, media_storage):
    settings.INGEST_MAX_UPLOAD_BYTES = 1024 * 1024
    bomb = gzip.compress(b'{"turns": []}\n' + b"\0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100_000

    assert_refused(post_bundle(client, demo.name, bomb, gzipped=True), 413, "body")
    assert_nothing_stored(demo, media_storage)


@pytest.mark.parametrize(
    ("body", "encoding", "status", "field"),
    [
        (b"not gzip at all", "gzip", 400, "body"),
        (gzip.compress(b'{"turns": []}\n')[:-6], "gzip", 400, "body"),
        (b'{"turns": []}\n', "br", 415, "Content-Encoding"),
    ],
    ids=["not gzip", "truncated gzip", "brotli"],  # the same names in every pytest-xdist process (gzip holds a time)
)
def test_a_body_that_cannot_be_inflated_is_refused(client, demo, body, encoding, status, field):
    response = post_bundle(client, demo.name, body, HTTP_CONTENT_ENCODING=encoding)
    assert_refused(response, status, field)


def test_another_content_type_is_a_415(client, demo, files):
    response = post_bundle(client, demo.name, frame([], [files["page"]]), content_type="application/json")
    assert_refused(response, 415, "Content-Type")


def test_a_teammate_cannot_upload_into_someone_elses_recording(demo, files, teammate, api_for, media_storage):
    response = post_bundle(api_for(teammate), demo.name, frame([], list(files.values())))

    assert response.status_code == 403, response.content
    assert_nothing_stored(demo, media_storage)


def test_blobs_go_to_the_recordings_project_only(client, demo, files, alpha, beta):
    assert post_bundle(client, demo.name, frame([], list(files.values()))).status_code == 201

    assert set(ProjectBlob.objects.values_list("project__name", flat=True)) == {"alpha"}
    elsewhere = token_client(make_user("beta-annotator", beta, Role.ANNOTATOR))
    assert missing(elsewhere, [files["page"].sha256], project="beta").json() == {"missing": [files["page"].sha256]}


def test_a_bundle_bringing_its_blobs_asks_few_queries_whatever_its_size(client, files, django_assert_max_num_queries):
    """The hot path of many recorders: who may write and upload is one query (the demo with the user's role), and
    blobs that come with the batch are not looked up again as references."""
    for size in (1, 3):
        demo = start_demo(client, client_id=f"rec-{size}")
        fresh = state_blobs(seed=size)
        with django_assert_max_num_queries(QUERIES_PER_BATCH):
            response = post_bundle(
                client, demo.name, frame(numbered_turns(size, state_refs(fresh)), list(fresh.values()))
            )
        assert response.status_code == 201, response.content


QUERIES_PER_BATCH = 12  # 15 before the role was read with the demo and in-batch blobs were no longer looked up


def test_blob_folders_removed_between_bundlees_are_made_again(client, demo, files, media_storage):
    """New blobs are written into folders the server remembers having made: one removed meanwhile (a restore, an
    operator's cleanup) is made again, not a 500."""
    assert (
        post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), list(files.values()))).status_code
        == 201
    )
    shutil.rmtree(media_storage / "blobs")
    other = state_blobs(seed=7)

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(other), "u"), list(other.values())))

    assert response.status_code == 201, response.content
    new = [blob for blob in other.values() if blob.sha256 not in {old.sha256 for old in files.values()}]
    assert new
    assert len(stored_files(media_storage)) == len(new)
    for blob in new:
        assert (media_storage / sha256_path(blob.sha256)).read_bytes() == blob.data


def test_staged_blobs_are_moved_to_their_names_and_others_saved_through_the_storage(media_storage):
    """A batch's new blobs are written while it is checked (``staging.py``); once it is stored they move to their
    content addresses. A blob not staged (stored for another project when the batch was checked, gone since) is
    saved through the storage instead; a refused batch's staged files are removed."""
    from annotation.actions.recordings.bundle import CHECKERS, BundleBlob
    from annotation.actions.recordings.staging import Staging

    blobs = [
        BundleBlob(i, blob.sha256, blob.media_type, memoryview(blob.data))
        for i, blob in enumerate(state_blobs().values())
    ]
    staging = Staging()
    for blob in blobs[:2]:
        staging.stage(blob.sha256, blob.data)
    assert len(stored_files(media_storage)) == 2  # private files, not yet at the blobs' names
    assert not any((media_storage / sha256_path(blob.sha256)).exists() for blob in blobs)

    names = staging.place(blobs, CHECKERS)

    assert names == [sha256_path(blob.sha256) for blob in blobs]
    assert sorted(stored_files(media_storage)) == sorted(media_storage / name for name in names)
    for blob, name in zip(blobs, names, strict=True):
        assert (media_storage / name).read_bytes() == blob.data

    refused = Staging()
    refused.stage("f" * 64, b"<html></html>")
    refused.discard()
    assert len(stored_files(media_storage)) == 3


@pytest.mark.django_db
def test_files_a_killed_server_staged_are_swept_after_an_hour(media_storage):
    from annotation.actions.recordings.staging import INCOMING, Staging
    from workers.tasks import sweep_staged_blobs

    staging = Staging()
    staging.stage("a" * 64, b"<html>left by a killed server</html>")
    staging.stage("b" * 64, b"<html>a batch being checked now</html>")
    old = staging.files["a" * 64]
    os.utime(old, (time.time() - 7200, time.time() - 7200))

    sweep_staged_blobs()  # the beat task, run in this process

    assert [path.name for path in stored_files(media_storage)] == [os.path.basename(staging.files["b" * 64])]
    assert (media_storage / INCOMING).is_dir()


def big_pages(count: int, seed: int = 0) -> list[BlobFile]:
    """Pages of ~400 KB that gzip poorly: a gzipped batch of them is megabytes both ways."""
    import random

    rng = random.Random(seed)
    return [
        BlobFile(page_html(title=f"Big {seed}-{i}") + rng.randbytes(300_000).hex().encode()[:400_000], "text/html")
        for i in range(count)
    ]


def test_a_gzipped_bundle_of_megabytes_stores_every_blob_whole(client, demo, media_storage):
    pages = big_pages(8)
    body = frame([], pages)
    assert len(body) > 3 * 1024 * 1024

    response = post_bundle(client, demo.name, gzip.compress(body, compresslevel=1), gzipped=True)

    assert response.status_code == 201, response.content
    for page in pages:
        assert (media_storage / sha256_path(page.sha256)).read_bytes() == page.data
    assert len(stored_files(media_storage)) == len(pages)


@pytest.mark.parametrize("cut", [-1, 1])
def test_a_gzipped_bundle_whose_blobs_do_not_add_up_stores_nothing(client, demo, media_storage, cut):
    """A body shorter or longer than its manifest says, once inflated, is refused naming the body: nothing kept."""
    pages = big_pages(6, seed=1)
    body = frame([], pages)
    body = body[:-1000] if cut < 0 else body + b"x" * 1000

    response = post_bundle(client, demo.name, gzip.compress(body, compresslevel=1), gzipped=True)

    assert_refused(response, 400, "body")
    expected = len(body) - len(body.split(b"\n", 1)[0]) - 1
    assert f"but {expected} follow it" in response.json()["detail"]
    assert_nothing_stored(demo, media_storage)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_bundlees_of_megabytes_through_the_real_server_are_stored_whole(owner, media_storage, tmp_path):
    """Bodies past ``FILE_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MiB, where Django would spool them to a file) through uvicorn
    as `make run` starts it (``config/handler.py`` keeps them in memory up to ``DATA_UPLOAD_MAX_MEMORY_SIZE``): plain
    and gzipped, every blob stored byte for byte; a truncated one stores nothing."""
    import http.client
    from urllib.parse import urlsplit

    from django.conf import settings
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from devtools.processes import asgi_process, database_url

    demo = start_demo(token_client(owner))
    token = Token.objects.get(user=owner).key
    plain, packed, cut = big_pages(9, seed=3), big_pages(12, seed=4), big_pages(8, seed=5)
    bodies = {
        "plain": (frame([], plain), {}),
        "gzipped": (gzip.compress(frame([], packed), compresslevel=1), {"Content-Encoding": "gzip"}),
        "cut": (frame([], cut)[:-4096], {}),
    }
    for body, _ in bodies.values():
        assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE < len(body) < settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    env = {"DATABASE_URL": database_url(connection.settings_dict), "MEDIA_ROOT": str(media_storage)}
    answers = {}
    with asgi_process(env, tmp_path / "server.log") as (url, _):
        server = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port, timeout=120)
        for kind, (body, headers) in bodies.items():  # one keep-alive connection, as the recorder
            headers = {"Authorization": f"Token {token}", "Content-Type": BUNDLE, **headers}
            server.request("POST", recordings_url(demo.name, "bundle"), body, headers)
            response = server.getresponse()
            answers[kind] = (response.status, json.loads(response.read()))
        server.close()

    assert answers["plain"][0] == 201, answers["plain"]
    assert answers["gzipped"][0] == 201, answers["gzipped"]
    assert answers["cut"][0] == 400, answers["cut"]
    assert "nothing was stored" in answers["cut"][1]["detail"]
    for page in plain + packed:
        assert (media_storage / sha256_path(page.sha256)).read_bytes() == page.data
    assert len(stored_files(media_storage)) == len(plain) + len(packed)
    assert Blob.objects.count() == len(plain) + len(packed)


def fsynced(monkeypatch) -> list[str]:
    """What is fsync'ed from now on, by path (read from /proc when it happens), in order."""
    synced, real = [], os.fsync

    def record(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return synced


def test_a_bundle_has_its_new_files_and_their_folder_entries_on_disk_before_it_answers(
    client, demo, files, media_storage, monkeypatch
):
    """BLOB_FSYNC (on by default): each new blob's bytes are flushed while still staged (before the rename that
    publishes them), then every folder the renames wrote into, and the new folders' entries in their parents."""
    synced = fsynced(monkeypatch)
    turns = numbered_turns(1, state_refs(files))

    response = post_bundle(client, demo.name, frame(turns, list(files.values())))

    assert response.status_code == 201, response.content
    media = str(media_storage.resolve())
    for blob in files.values():
        final = os.path.join(media, sha256_path(blob.sha256))
        staged = [i for i, path in enumerate(synced) if os.path.basename(path).startswith(blob.sha256 + ".")]
        assert len(staged) == 1, synced  # its staged file (the fd's path is the staged name: not yet renamed)
        assert os.path.dirname(final) in synced[staged[0] :]  # its folder entry, after the bytes
        assert final not in synced  # never synced under its final name: it was whole before it got it
    assert os.path.join(media, "blobs") in synced  # a new folder's entry in its parent
    assert len(stored_files(media_storage)) == len(files)


def test_blob_fsync_off_flushes_nothing(client, demo, files, media_storage, monkeypatch, settings):
    settings.BLOB_FSYNC = False
    synced = fsynced(monkeypatch)

    response = post_bundle(client, demo.name, frame(numbered_turns(1, state_refs(files)), list(files.values())))

    assert response.status_code == 201, response.content
    assert synced == []
    for blob in files.values():
        assert (media_storage / sha256_path(blob.sha256)).read_bytes() == blob.data


def test_a_put_blob_is_on_disk_with_every_folder_down_to_it_before_it_answers(client, media_storage, monkeypatch):
    from tests.support.recorder import put_blob

    synced = fsynced(monkeypatch)
    page = BlobFile(page_html(title="Put alone"), "text/html")

    assert put_blob(client, page).status_code == 201
    media, name = str(media_storage.resolve()), sha256_path(page.sha256)
    folders = [os.path.join(media, *name.split("/")[:depth]) for depth in range(3, 0, -1)]
    assert synced == [os.path.join(media, name), *folders, media]


def failing_fsync(monkeypatch) -> None:
    """The disk fails: every fsync reports an I/O error, as Linux does for a write-back that could not be written."""

    def fail(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fail)


def test_a_bundle_the_disk_fails_to_store_is_a_503_to_retry_with_nothing_stored(
    client, demo, files, media_storage, monkeypatch
):
    failing_fsync(monkeypatch)

    response = post_bundle(client, demo.name, frame(numbered_turns(2, state_refs(files)), list(files.values())))

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "30"
    body = response.json()
    assert body["code"] == "storage_unavailable"
    assert "could not store the bundle (Input/output error); nothing was stored" in body["detail"]
    assert body["errors"] == [{"field": "body", "message": "Input/output error"}]
    assert_nothing_stored(demo, media_storage)  # no turn, no blob row, no file (the staged ones removed)


def test_a_put_blob_the_disk_fails_to_store_is_a_503_and_not_recorded(client, media_storage, monkeypatch):
    from tests.support.recorder import put_blob

    failing_fsync(monkeypatch)
    page = BlobFile(page_html(title="Lost write"), "text/html")

    response = put_blob(client, page)

    assert response.status_code == 503, response.content
    assert response.json()["code"] == "storage_unavailable"
    assert f"could not store blob {page.sha256}" in response.json()["detail"]
    assert not Blob.objects.filter(sha256=page.sha256).exists()
    assert client.head(blob_url(page.sha256)).status_code == 404  # the recorder will send it again
    monkeypatch.undo()
    assert put_blob(client, page).status_code == 201  # and then it is stored
    assert (media_storage / sha256_path(page.sha256)).read_bytes() == page.data
