"""Step mode's raw dump at ingest (issue 39): HAR 1.2 and DOM snapshot blobs, their limits and checks, linked to a
step's turn and readable only where the turn is."""

import pytest

from annotation.models import Blob, Turn
from tests.support.payloads import BlobFile, browser_turn, png_bytes, state_blobs, state_refs, step_turn
from tests.support.rawdump import changed, dom_blob, dom_snapshot, har, har_blob, har_entry
from tests.support.recorder import (
    assert_nothing_stored,
    blob_url,
    frame,
    post_bundle,
    put_blob,
    put_raw,
    recordings_url,
    start_demo,
)


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


def fields_of(response) -> list[str]:
    return [error["field"] for error in response.json()["errors"]]


@pytest.mark.parametrize("blob", [har_blob(), dom_blob()], ids=["har", "dom_snapshot"])
def test_a_har_and_a_dom_snapshot_are_stored_as_blobs(client, media_storage, blob):
    response = put_blob(client, blob)

    assert response.status_code == 201, response.content
    assert Blob.objects.get().media_type == blob.media_type


@pytest.mark.parametrize(
    ("blob", "setting"),
    [(har_blob(), "INGEST_MAX_HAR_BYTES"), (dom_blob(), "INGEST_MAX_DOM_SNAPSHOT_BYTES")],
    ids=["har", "dom_snapshot"],
)
def test_a_raw_dump_blob_over_its_limit_is_a_413_naming_the_limit(client, media_storage, settings, blob, setting):
    setattr(settings, setting, len(blob.data) - 1)

    response = put_blob(client, blob)

    assert response.status_code == 413, response.content
    assert setting in response.json()["detail"]
    assert_nothing_stored(None, media_storage)


def test_a_raw_dump_blob_at_its_limit_is_accepted(client, settings):
    blob = har_blob()
    settings.INGEST_MAX_HAR_BYTES = len(blob.data)

    assert put_blob(client, blob).status_code == 201


def test_a_har_over_its_limit_in_a_bundle_is_a_413_naming_the_blob(client, media_storage, settings):
    demo, blob = start_demo(client), har_blob()
    settings.INGEST_MAX_HAR_BYTES = len(blob.data) - 1

    response = post_bundle(client, demo.name, frame([], [png_blob(), blob]))

    assert response.status_code == 413, response.content
    assert fields_of(response) == ["blobs[1].size"]
    assert "INGEST_MAX_HAR_BYTES" in response.json()["detail"]
    assert_nothing_stored(demo, media_storage)


def png_blob() -> BlobFile:
    return BlobFile(png_bytes(), "image/png")


def secret_header(name: str) -> list:
    return [{"name": "Accept", "value": "*/*"}, {"name": name, "value": "sid=s3cret"}]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        pytest.param({"entries": []}, "log", id="no-log"),
        pytest.param(changed(har(), ["log", "version"], "1.1"), "log.version", id="version-1.1"),
        pytest.param(changed(har(), ["log", "creator"], ...), "log.creator", id="no-creator"),
        pytest.param(changed(har(), ["log", "entries"], {}), "log.entries", id="entries-not-a-list"),
        pytest.param(har([changed(har_entry(), ["request", "url"], 3)]), "log.entries[0].request.url", id="url"),
        pytest.param(har([changed(har_entry(), ["response", "status"], "200")]), "log.entries[0].response.status"),
        pytest.param(har([changed(har_entry(), ["timings"], {})]), "log.entries[0].timings", id="timings"),
        pytest.param(har([changed(har_entry(), ["response", "content"], {})]), "log.entries[0].response.content"),
        pytest.param(
            har([changed(har_entry(), ["request", "headers"], secret_header("Cookie"))]),
            "log.entries[0].request.headers[1]",
            id="cookie",
        ),
        pytest.param(
            har([har_entry(), changed(har_entry(), ["request", "headers"], secret_header("authorization"))]),
            "log.entries[1].request.headers[1]",
            id="authorization",
        ),
        pytest.param(
            har([changed(har_entry(), ["response", "headers"], secret_header("Set-Cookie"))]),
            "log.entries[0].response.headers[1]",
            id="set-cookie",
        ),
        pytest.param(
            har([changed(har_entry(), ["request", "cookies"], [{"name": "sid", "value": "x"}])]),
            "log.entries[0].request.cookies",
            id="cookies",
        ),
    ],
)
def test_a_har_that_is_not_har_1_2_or_keeps_a_secret_is_a_400_naming_the_field(client, media_storage, value, field):
    response = put_blob(client, har_blob(value))

    assert response.status_code == 400, response.content
    assert field in fields_of(response), response.json()
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize(
    ("data", "media_type"),
    [(b"<html></html>", "application/har+json"), (b'{"log": ', "application/vnd.webtasks.dom-snapshot+json")],
    ids=["har", "dom_snapshot"],
)
def test_a_raw_dump_blob_that_is_not_json_is_a_400(client, media_storage, data, media_type):
    response = put_raw(client, data, media_type, BlobFile(data, media_type).sha256)

    assert response.status_code == 400, response.content
    assert "not valid JSON" in response.json()["detail"]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (changed(dom_snapshot(), ["format"], "cdp"), "format"),
        (changed(dom_snapshot(), ["documents"], ...), "documents"),
        (changed(dom_snapshot(), ["documents"], [{"nodes": {}}]), "documents[0]"),
        (changed(dom_snapshot(), ["strings"], [1]), "strings"),
    ],
)
def test_a_dom_snapshot_of_another_shape_is_a_400_naming_the_field(client, media_storage, value, field):
    response = put_blob(client, dom_blob(value))

    assert response.status_code == 400, response.content
    assert field in fields_of(response)


def with_input(value: str, kind: str = "password") -> dict:
    """A DOM snapshot with one ``<input type=kind>`` whose value is ``value``."""
    snapshot = dom_snapshot()
    snapshot["strings"] += ["INPUT", "type", kind, value]
    nodes = snapshot["documents"][0]["nodes"]
    nodes["attributes"] = [[], [], [5, 6]]
    nodes["inputValue"] = {"index": [2], "value": [7]}
    return snapshot


@pytest.mark.parametrize(
    ("value", "kind", "status"),
    [
        ("Zq7-Secret", "password", 400),
        ("********", "password", 201),
        ("", "password", 201),
        ("blue shoes", "text", 201),
    ],
)
def test_a_dom_snapshot_with_a_password_inputs_value_is_refused(client, media_storage, value, kind, status):
    response = put_blob(client, dom_blob(with_input(value, kind)))

    assert response.status_code == status, response.content
    if status == 400:
        assert fields_of(response) == ["documents[0].nodes.inputValue"]


def step_with_raw_dump(client):
    """A recording with one step whose turn refers to a HAR and a DOM snapshot, sent in one bundle."""
    demo, files, traffic, snapshot = start_demo(client), state_blobs(), har_blob(), dom_blob()
    turn = step_turn("s1", **state_refs(files), har=traffic.sha256, dom_snapshot=snapshot.sha256)
    response = post_bundle(client, demo.name, frame([turn], [*files.values(), traffic, snapshot]))
    assert response.status_code == 201, response.content
    return demo, traffic, snapshot


def test_a_step_turn_keeps_its_har_and_dom_snapshot(client):
    demo, traffic, snapshot = step_with_raw_dump(client)

    turn = Turn.objects.get(demonstration=demo)
    assert (turn.har_id, turn.dom_snapshot_id) == (traffic.sha256, snapshot.sha256)
    listed = client.get(recordings_url(demo.name, "turns")).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert (rows[0]["har"], rows[0]["dom_snapshot"]) == (traffic.sha256, snapshot.sha256)


def test_a_turns_har_must_be_a_har_blob(client, media_storage):
    demo, files = start_demo(client), state_blobs()
    turn = step_turn("s1", **state_refs(files), har=files["screenshot"].sha256)

    response = post_bundle(client, demo.name, frame([turn], list(files.values())))

    assert response.status_code == 400, response.content
    assert "turns[0].har" in fields_of(response)


def test_a_turns_dom_snapshot_must_be_a_sha256(client):
    demo = start_demo(client)

    response = post_bundle(client, demo.name, frame([browser_turn("s1", dom_snapshot="nope")], []))

    assert response.status_code == 400, response.content
    assert "turns[0].dom_snapshot" in fields_of(response)


def test_the_raw_dump_is_read_by_the_project_and_a_404_to_outsiders(client, api_for, teammate, outsider):
    _demo, traffic, snapshot = step_with_raw_dump(client)

    for blob in (traffic, snapshot):
        read = api_for(teammate).get(blob_url(blob.sha256, None))
        assert read.status_code == 200, read.content
        assert b"".join(read.streaming_content) == blob.data
        assert api_for(outsider).get(blob_url(blob.sha256, None)).status_code == 404
