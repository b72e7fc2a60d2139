"""Frames around an action, tab video chunks, and reading turns and blobs back through the API."""

from datetime import timedelta

import pytest

from annotation.models import Demonstration, Turn, VideoChunk
from tests.support.payloads import MHTML, BlobFile, browser_turn, intent_arguments, png_bytes, state_blobs, state_refs
from tests.support.recorder import post_turns, put_blob, recordings_url, start_demo, upload_blobs


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def demo(client):
    return start_demo(client)


@pytest.fixture
def blobs(client):
    files = state_blobs()
    upload_blobs(client, files.values())
    return files


@pytest.fixture
def frames(client):
    shots = [BlobFile(png_bytes(color=(i * 40, 0, 0)), "image/png") for i in range(2)]
    upload_blobs(client, shots)
    return [
        {"screenshot": shots[0].sha256, "timestamp": 1.2, "label": "before"},
        {"screenshot": shots[1].sha256, "timestamp": 1.9, "label": "after"},
    ]


def test_a_browser_turn_keeps_the_frames_captured_around_it(client, demo, blobs, frames):
    response = post_turns(client, demo.name, [browser_turn("b1", **state_refs(blobs), frames=frames)])

    assert response.status_code == 201, response.json()
    assert Turn.objects.get().frames == frames


@pytest.mark.parametrize(
    ("frame", "field", "message"),
    [
        ({"screenshot": "0" * 64, "timestamp": 1.0}, "turns[0].frames[0].screenshot", "has not been uploaded"),
        ({"screenshot": None, "timestamp": 1.0}, "turns[0].frames[0].screenshot", "required"),
        ({"timestamp": "soon"}, "turns[0].frames[0].timestamp", "seconds since the recording started"),
        ({"timestamp": 1.0, "colour": "red"}, "turns[0].frames[0].colour", "unknown field"),
    ],
)
def test_bad_frames_are_refused_with_the_field_named(client, demo, blobs, frames, frame, field, message):
    bad = {"screenshot": frames[0]["screenshot"], **frame} if "screenshot" not in frame else frame
    response = post_turns(client, demo.name, [browser_turn("b1", **state_refs(blobs), frames=[bad])])

    assert response.status_code == 400
    assert any(e["field"] == field and message in e["message"] for e in response.json()["errors"]), response.json()
    assert not Turn.objects.exists()


def test_a_frame_must_be_a_png_screenshot(client, demo, blobs):
    response = post_turns(
        client,
        demo.name,
        [browser_turn("b1", **state_refs(blobs), frames=[{"screenshot": blobs["page"].sha256, "timestamp": 1.0}])],
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "turns[0].frames[0].screenshot"
    assert "expected image/png" in response.json()["errors"][0]["message"]


def test_turns_read_back_in_timeline_order_with_their_blobs(client, demo, blobs, frames, api_for, teammate, outsider):
    later = browser_turn("b2", timestamp=5.0, **state_refs(blobs))
    earlier = browser_turn("b1", timestamp=1.0, **state_refs(blobs), frames=frames)
    post_turns(client, demo.name, [later, earlier])

    body = client.get(recordings_url(demo.name, "turns")).json()

    assert [t["client_id"] for t in body] == ["b1", "b2"]
    assert body[0]["screenshot"] == blobs["screenshot"].sha256
    assert body[0]["frames"] == frames
    assert body[0]["arguments"] == earlier["arguments"]
    assert api_for(teammate).get(recordings_url(demo.name, "turns")).status_code == 200
    assert api_for(outsider).get(recordings_url(demo.name, "turns")).status_code == 404


def test_blob_bytes_are_served_to_project_members_as_sandboxed_attachments(
    client, demo, blobs, frames, api_for, teammate, outsider
):
    post_turns(client, demo.name, [browser_turn("b1", **state_refs(blobs), frames=frames)])
    page = blobs["page"]

    response = api_for(teammate).get(f"/api/blobs/{page.sha256}")
    frame = client.get(f"/api/blobs/{frames[1]['screenshot']}")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == page.data
    assert response["Content-Type"] == "text/html"
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert frame.status_code == 200
    assert api_for(outsider).get(f"/api/blobs/{page.sha256}").status_code == 404


def test_every_blob_a_recording_refers_to_is_read_through_the_api_by_its_readers_only(
    client, demo, blobs, frames, webm, api_for, teammate, reviewer, outsider
):
    """Screenshot, page, boxes, each frame, step mode's MHTML snapshot (``arguments.properties.mhtml``) and the tab
    video: every member who may read the recording gets the bytes from ``GET /api/blobs/<sha>``; an outsider gets
    404, and so does a blob a turn merely mentions somewhere else in its arguments."""
    snapshot, mentioned = BlobFile(MHTML, "multipart/related"), BlobFile(png_bytes(color=(5, 6, 7)), "image/png")
    upload_blobs(client, [snapshot, mentioned])
    arguments = intent_arguments("click")
    arguments["properties"] = {"mhtml": snapshot.sha256, "note": mentioned.sha256}
    turn = browser_turn("b1", arguments=arguments, **state_refs(blobs), frames=frames)
    assert post_turns(client, demo.name, [turn]).status_code == 201
    body = {"index": 0, "blob": webm.sha256, "started_at": 0.0}
    assert client.post(recordings_url(demo.name, "video"), body, format="json").status_code == 201
    stored = client.get(recordings_url(demo.name, "turns")).json()[0]
    referenced = {
        **{name: stored[name] for name in ("screenshot", "page", "bboxes")},
        **{f"frames[{i}]": frame["screenshot"] for i, frame in enumerate(stored["frames"])},
        "mhtml": stored["arguments"]["properties"]["mhtml"],
        "video": webm.sha256,
    }
    data = {blob.sha256: blob.data for blob in [*blobs.values(), snapshot, webm]}
    for reader in (client, api_for(teammate), api_for(reviewer)):
        for name, sha in referenced.items():
            response = reader.get(f"/api/blobs/{sha}")
            assert response.status_code == 200, name
            if sha in data:
                assert b"".join(response.streaming_content) == data[sha], name
    for sha in referenced.values():
        assert api_for(outsider).get(f"/api/blobs/{sha}").status_code == 404
    assert client.get(f"/api/blobs/{mentioned.sha256}").status_code == 404


def test_a_blob_no_demo_of_yours_uses_is_not_found(client):
    lonely = BlobFile(png_bytes(color=(1, 2, 3)), "image/png")
    put_blob(client, lonely)
    assert client.get(f"/api/blobs/{lonely.sha256}").status_code == 404
    assert client.get("/api/blobs/not-a-sha").status_code == 404


@pytest.fixture
def webm(client):
    chunk = BlobFile(b"\x1a\x45\xdf\xa3" + b"webm-bytes" * 100, "video/webm")
    assert put_blob(client, chunk).status_code == 201
    return chunk


def test_video_chunks_attach_in_order_and_a_resend_changes_nothing(client, demo, webm):
    url = recordings_url(demo.name, "video")
    body = {"index": 0, "blob": webm.sha256, "started_at": 0.25}

    first, again = client.post(url, body, format="json"), client.post(url, body, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert client.get(url).json() == [body]
    assert VideoChunk.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"index": -1}, "index"),
        ({"started_at": "now"}, "started_at"),
        ({"blob": "0" * 64}, "blob"),
    ],
)
def test_bad_video_chunks_name_the_field(client, demo, webm, body, field):
    response = client.post(
        recordings_url(demo.name, "video"), {"index": 0, "blob": webm.sha256, "started_at": 0.0, **body}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert not VideoChunk.objects.exists()


def test_a_chunk_index_cannot_be_reused_for_other_bytes_and_only_the_navigator_adds_video(
    client, demo, webm, api_for, teammate
):
    other = BlobFile(b"\x1a\x45\xdf\xa3other", "video/webm")
    put_blob(client, other)
    url = recordings_url(demo.name, "video")
    client.post(url, {"index": 0, "blob": webm.sha256, "started_at": 0.0}, format="json")

    conflict = client.post(url, {"index": 0, "blob": other.sha256, "started_at": 0.0}, format="json")
    foreign = api_for(teammate).post(url, {"index": 1, "blob": other.sha256, "started_at": 0.0}, format="json")
    screenshot_as_video = client.post(url, {"index": 1, "blob": png_sha(client), "started_at": 0.0}, format="json")

    assert conflict.status_code == 409
    assert foreign.status_code == 403
    assert screenshot_as_video.status_code == 400
    assert VideoChunk.objects.count() == 1


def png_sha(client) -> str:
    shot = BlobFile(png_bytes(color=(9, 9, 9)), "image/png")
    put_blob(client, shot)
    return shot.sha256


def test_after_finish_a_chunk_started_before_the_end_is_taken_and_a_later_one_or_one_in_review_is_not(
    client, demo, webm
):
    url = recordings_url(demo.name, "video")
    end = demo.recording_start + timedelta(seconds=30)
    client.post(recordings_url(demo.name, "finish"), {"recording_end": end.isoformat()}, format="json")

    before = client.post(url, {"index": 0, "blob": webm.sha256, "started_at": 25.0}, format="json")
    after = client.post(url, {"index": 1, "blob": webm.sha256, "started_at": 40.0}, format="json")
    Demonstration.objects.filter(pk=demo.pk).update(status="validated")
    validated = client.post(url, {"index": 2, "blob": webm.sha256, "started_at": 10.0}, format="json")

    assert before.status_code == 201
    assert after.status_code == 409
    assert after.json()["errors"] == [
        {"field": "started_at", "message": "40.0 s is after the recording's end at 30.000 s"}
    ]
    assert validated.status_code == 409
    assert "is validated; it takes no new video" in validated.json()["detail"]
    assert list(VideoChunk.objects.values_list("index", flat=True)) == [0]
