"""Recording ingest over HTTP: start, upload blobs, post turns, finish, and what ends up stored."""

from datetime import timedelta

import pytest

from annotation.lib.schema import INTENTS
from annotation.models import Blob, Demonstration, DemoReview, Membership, Role, Turn
from tests.support.payloads import browser_turn, chat_turn, numbered_turns, session_turns, state_blobs, state_refs
from tests.support.recorder import (
    blob_url,
    finish,
    post_turns,
    put_blob,
    recordings_url,
    start_demo,
    start_recording,
    stored_files,
    upload_blobs,
)


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def blobs(client):
    files = state_blobs()
    upload_blobs(client, files.values())
    return files


@pytest.fixture
def refs(blobs):
    return state_refs(blobs)


@pytest.fixture
def demo(client):
    return start_demo(client)


def assert_browser_row(row: Turn, sent: dict, refs: dict) -> None:
    """A stored browser turn holds exactly what was sent, with url / tab / viewport copied out of it."""
    args = sent["arguments"]
    assert (row.type, row.timestamp, row.intent) == ("browser", sent["timestamp"], sent["intent"])
    assert row.arguments == args
    expected_url = args["properties"]["url"] if sent["intent"] == "load" else args["metadata"]["url"]
    assert row.url == expected_url
    assert row.tab_id == args["metadata"]["tabId"]
    assert (row.viewport_width, row.viewport_height) == (1280, 720)
    assert (row.screenshot_id, row.page_id, row.bboxes_id) == (refs["screenshot"], refs["page"], refs["bboxes"])
    assert (row.speaker, row.utterance) == ("", "")


@pytest.mark.parametrize("intent", INTENTS)
def test_a_browser_turn_of_every_intent_round_trips_over_http(client, intent):
    files = state_blobs()
    demo = start_demo(client)
    upload_blobs(client, files.values())
    for blob in files.values():
        head = client.head(blob_url(blob.sha256))
        assert head.status_code == 200
        assert head["X-Blob-Size"] == str(len(blob.data))
        assert head["X-Blob-Media-Type"] == blob.media_type
    sent = browser_turn(f"{intent}-1", intent, 2.5, **state_refs(files))

    response = post_turns(client, demo.name, [sent])

    assert response.status_code == 201, response.content
    assert response.json() == {"created": 1, "duplicates": 0, "turns": [{"client_id": f"{intent}-1", "seq": 0}]}
    assert finish(client, demo.name).status_code == 200
    row = demo.turns.get()
    assert row.seq == 0
    assert_browser_row(row, sent, state_refs(files))
    body = client.get(recordings_url(demo.name)).json()
    assert (body["status"], body["turn_count"]) == ("recorded", 1)


@pytest.mark.parametrize("speaker", ["instructor", "navigator"])
def test_a_chat_turn_of_either_speaker_round_trips_over_http(client, demo, speaker):
    sent = chat_turn("chat-1", speaker, 0.5)

    response = post_turns(client, demo.name, [sent])

    assert response.status_code == 201, response.content
    row = demo.turns.get()
    assert (row.seq, row.type, row.timestamp, row.speaker) == (0, "chat", 0.5, speaker)
    assert row.utterance == sent["utterance"]
    assert (row.intent, row.arguments, row.url, row.tab_id) == ("", {}, "", None)
    assert (row.screenshot_id, row.page_id, row.bboxes_id) == (None, None, None)


def test_a_whole_session_with_every_intent_and_both_speakers_is_stored_in_order(client, demo, refs):
    sent = session_turns(refs)

    response = post_turns(client, demo.name, sent)
    finished = finish(client, demo.name)

    assert response.status_code == 201, response.content
    assert response.json()["created"] == len(sent) == 2 + len(INTENTS)
    assert [t["seq"] for t in response.json()["turns"]] == list(range(len(sent)))
    rows = list(demo.turns.order_by("seq"))
    assert [row.client_id for row in rows] == [turn["client_id"] for turn in sent]
    assert [row.timestamp for row in rows] == [turn["timestamp"] for turn in sent]
    assert [row.speaker for row in rows[:2]] == ["instructor", "navigator"]
    for row, turn in zip(rows[2:], sent[2:], strict=True):
        assert_browser_row(row, turn, refs)
    assert finished.status_code == 200
    body = client.get(recordings_url(demo.name)).json()
    assert (body["status"], body["turn_count"], body["navigator"]) == ("recorded", len(sent), "owner")
    assert body["recording_end"] is not None


def test_a_load_turn_takes_its_url_from_properties_not_metadata(client, demo):
    sent = browser_turn("load-1", "load")
    sent["arguments"]["metadata"]["url"] = "https://www.example.com/before"

    post_turns(client, demo.name, [sent])

    assert demo.turns.get().url == "https://www.example.com/results?q=weather"


def test_a_browser_turn_without_captured_state_is_stored_without_blobs(client, demo):
    response = post_turns(client, demo.name, [browser_turn("scroll-1", "scroll")])

    assert response.status_code == 201
    row = demo.turns.get()
    assert (row.screenshot_id, row.page_id, row.bboxes_id) == (None, None, None)


def test_later_batches_continue_the_sequence(client, demo, refs):
    post_turns(client, demo.name, numbered_turns(3, refs, prefix="a"))

    response = post_turns(client, demo.name, numbered_turns(2, refs, prefix="b"))

    assert [t["seq"] for t in response.json()["turns"]] == [3, 4]
    assert list(demo.turns.order_by("seq").values_list("seq", flat=True)) == [0, 1, 2, 3, 4]


def test_starting_a_recording_returns_it_with_status_recording(client):
    response = start_recording(client, client_id="rec-9", websites=["www.example.com"], category="Information")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["project"], body["client_id"], body["status"], body["turn_count"]) == (
        "alpha",
        "rec-9",
        "recording",
        0,
    )
    assert body["navigator"] == "owner"
    assert body["websites"] == ["www.example.com"]
    assert Demonstration.objects.get(name=body["name"]).name.isalpha()


def test_a_retried_start_with_the_same_client_id_returns_the_same_recording(client):
    first = start_recording(client, client_id="rec-1")

    again = start_recording(client, client_id="rec-1")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["name"] == first.json()["name"]
    assert Demonstration.objects.count() == 1


def test_a_client_id_used_by_another_navigator_starts_a_recording_of_ones_own(client, teammate, api_for):
    mine = start_recording(client, client_id="rec-1").json()

    response = start_recording(api_for(teammate), client_id="rec-1")

    assert response.status_code == 201
    assert response.json()["name"] != mine["name"]
    assert response.json()["navigator"] == "teammate"
    assert Demonstration.objects.count() == 2


def test_a_client_id_used_in_another_project_is_not_revealed(client, outsider, api_for):
    theirs = start_recording(api_for(outsider), project="beta", client_id="rec-secret").json()

    response = start_recording(client, project="alpha", client_id="rec-secret")

    assert response.status_code == 201
    body = response.json()
    assert (body["project"], body["navigator"]) == ("alpha", "owner")
    assert "beta" not in response.text
    assert theirs["name"] not in response.text


def test_a_client_id_re_sent_for_another_project_is_a_conflict(client, owner, beta):
    Membership.objects.create(project=beta, user=owner, role=Role.ANNOTATOR)
    start_recording(client, project="alpha", client_id="rec-1")

    response = start_recording(client, project="beta", client_id="rec-1")

    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "project"
    assert Demonstration.objects.get().project.name == "alpha"


def test_starting_without_a_project_names_the_missing_field(client):
    response = client.post(recordings_url(), {"client_id": "rec-1"}, format="json")

    assert response.status_code == 400
    assert {"field": "project", "message": "This field is required."} in response.json()["errors"]
    assert not Demonstration.objects.exists()


def test_a_retried_batch_stores_no_duplicates_and_answers_with_the_same_seqs(client, demo, refs):
    batch = numbered_turns(3, refs)
    first = post_turns(client, demo.name, batch)

    again = post_turns(client, demo.name, batch)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {"created": 0, "duplicates": 3, "turns": first.json()["turns"]}
    assert demo.turns.count() == 3


def test_a_retry_with_keys_in_another_order_is_still_a_duplicate(client, demo):
    sent = browser_turn("click-1")
    post_turns(client, demo.name, [sent])

    response = post_turns(client, demo.name, [dict(reversed(list(sent.items())))])

    assert response.status_code == 200
    assert response.json()["duplicates"] == 1


def test_a_partially_overlapping_batch_stores_only_the_new_turns(client, demo, refs):
    a, b, c = numbered_turns(3, refs)
    post_turns(client, demo.name, [a, b])

    response = post_turns(client, demo.name, [b, c])

    assert response.status_code == 201
    assert response.json() == {
        "created": 1,
        "duplicates": 1,
        "turns": [{"client_id": b["client_id"], "seq": 1}, {"client_id": c["client_id"], "seq": 2}],
    }
    assert list(demo.turns.order_by("seq").values_list("client_id", flat=True)) == ["t-0", "t-1", "t-2"]


def test_a_client_id_reused_with_different_content_is_a_conflict_and_stores_nothing(client, demo):
    post_turns(client, demo.name, [browser_turn("t-0", timestamp=1.0)])
    changed = browser_turn("t-0", timestamp=2.0)

    response = post_turns(client, demo.name, [browser_turn("t-1", timestamp=3.0), changed])

    assert response.status_code == 409
    assert response.json()["errors"] == [
        {"field": "turns[1].client_id", "message": "'t-0' was stored before with different content"}
    ]
    assert list(demo.turns.values_list("client_id", "timestamp")) == [("t-0", 1.0)]


def test_turns_after_finish_are_a_conflict_and_store_nothing(client, demo):
    finish(client, demo.name)

    response = post_turns(client, demo.name, [browser_turn("t-0", timestamp=60.0)])

    assert response.status_code == 409
    assert "turns after its end are refused" in response.json()["detail"]
    assert response.json()["errors"][0]["field"] == "turns[0].timestamp"
    assert demo.turns.count() == 0


def test_a_pure_retry_of_stored_turns_after_finish_is_accepted(client, demo, refs):
    batch = numbered_turns(2, refs)
    post_turns(client, demo.name, batch)
    finish(client, demo.name)

    response = post_turns(client, demo.name, batch)

    assert response.status_code == 200
    assert response.json()["duplicates"] == 2
    assert demo.turns.count() == 2


def test_a_retry_mixed_with_a_new_turn_after_the_end_is_a_conflict(client, demo):
    a, b = numbered_turns(2)
    b["timestamp"] = 60.0
    post_turns(client, demo.name, [a])
    finish(client, demo.name)

    response = post_turns(client, demo.name, [a, b])

    assert response.status_code == 409
    assert response.json()["errors"] == [
        {"field": "turns[1].timestamp", "message": response.json()["errors"][0]["message"]}
    ]
    assert "after the recording's end" in response.json()["errors"][0]["message"]
    assert demo.turns.count() == 1


def finish_at(client, demo, seconds: float):
    """Finish ``demo`` with its end ``seconds`` after its start (on the recording clock)."""
    end = demo.recording_start + timedelta(seconds=seconds)
    response = finish(client, demo.name, recording_end=end.isoformat().replace("+00:00", "Z"))
    assert response.status_code == 200, response.content


def test_turns_captured_before_the_end_are_accepted_after_finish(client, demo, refs):
    """The instructor ended the demonstration while the recorder still had turns queued: they are stored."""
    post_turns(client, demo.name, [browser_turn("t-0", timestamp=5.0, **refs)])
    finish_at(client, demo, 30.0)
    queued = [browser_turn("t-1", timestamp=29.0, **refs), browser_turn("t-2", timestamp=31.5, **refs)]

    response = post_turns(client, demo.name, queued)
    again = post_turns(client, demo.name, queued)

    assert response.status_code == 201, response.content
    assert response.json()["created"] == 2
    assert [t["seq"] for t in response.json()["turns"]] == [1, 2]
    assert (again.status_code, again.json()["duplicates"]) == (200, 2)
    assert list(demo.turns.order_by("seq").values_list("client_id", flat=True)) == ["t-0", "t-1", "t-2"]


def test_a_batch_with_a_turn_after_the_end_names_it_and_the_rest_goes_through_alone(client, demo, refs):
    """What the recorder's uploader does with the 409: fail the named turn, send the others again."""
    finish_at(client, demo, 30.0)
    early, late = browser_turn("t-0", timestamp=20.0, **refs), browser_turn("t-1", timestamp=32.5, **refs)

    refused = post_turns(client, demo.name, [early, late])
    alone = post_turns(client, demo.name, [early])

    assert refused.status_code == 409
    assert refused.json()["errors"] == [
        {"field": "turns[1].timestamp", "message": "32.5 s is after the recording's end at 30.000 s"}
    ]
    assert alone.status_code == 201
    assert list(demo.turns.values_list("client_id", flat=True)) == ["t-0"]


@pytest.mark.parametrize("status", ["in_review", "validated", "rejected", "returned"])
def test_turns_before_the_end_are_refused_once_the_demo_left_recorded(client, demo, refs, status):
    finish_at(client, demo, 30.0)
    Demonstration.objects.filter(pk=demo.pk).update(status=status)

    response = post_turns(client, demo.name, [browser_turn("t-0", timestamp=10.0, **refs)])

    assert response.status_code == 409
    assert f"is {status}; it takes no new turns" in response.json()["detail"]
    assert demo.turns.count() == 0


def test_turns_before_the_end_are_refused_once_the_demo_was_edited_in_review(client, demo, refs):
    """A demo returned to its annotator and resubmitted is ``recorded`` again, but reviewers have edited it."""
    finish_at(client, demo, 30.0)
    DemoReview.objects.create(demonstration=demo, revision=3)

    response = post_turns(client, demo.name, [browser_turn("t-0", timestamp=10.0, **refs)])

    assert response.status_code == 409
    assert "edited in review" in response.json()["detail"]
    assert demo.turns.count() == 0


def test_late_turns_make_the_review_compute_its_suggestions_and_checks_again(client, demo, refs):
    finish_at(client, demo, 30.0)
    DemoReview.objects.create(demonstration=demo, quality=[], realigned=True)

    assert post_turns(client, demo.name, [browser_turn("t-0", timestamp=10.0, **refs)]).status_code == 201

    review = DemoReview.objects.get(demonstration=demo)
    assert (review.quality, review.realigned) == (None, False)


def test_finishing_twice_keeps_the_first_end_time(client, demo):
    first = finish(client, demo.name).json()

    again = finish(client, demo.name)

    assert again.status_code == 200
    assert again.json()["recording_end"] == first["recording_end"]
    assert again.json()["status"] == "recorded"


def test_finish_stores_the_recording_end_the_recorder_sends(client, demo):
    response = finish(client, demo.name, recording_end="2024-05-01T12:00:00Z")

    assert response.status_code == 200
    assert response.json()["recording_end"] == "2024-05-01T12:00:00Z"


def test_a_retried_blob_upload_answers_200_and_keeps_one_row_and_one_file(client, media_storage):
    blob = state_blobs()["screenshot"]
    first = put_blob(client, blob)

    again = put_blob(client, blob)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {"sha256": blob.sha256, "size": len(blob.data), "media_type": "image/png"}
    assert Blob.objects.count() == 1
    assert len(stored_files(media_storage)) == 1


def test_an_uploaded_blob_is_stored_under_its_content_address(client, media_storage):
    blob = state_blobs()["page"]

    put_blob(client, blob)

    (path,) = stored_files(media_storage)
    assert path.relative_to(media_storage).as_posix() == f"blobs/{blob.sha256[:2]}/{blob.sha256[2:4]}/{blob.sha256}"
    assert path.read_bytes() == blob.data


def test_a_media_type_with_parameters_is_stored_without_them(client):
    blob = state_blobs()["page"]

    response = put_blob(client, blob, media_type="text/html; charset=utf-8")

    assert response.status_code == 201
    assert Blob.objects.get().media_type == "text/html"


def test_the_recordings_list_shows_the_newest_first_with_turn_counts(client, refs):
    older, newer = start_demo(client, client_id="rec-a"), start_demo(client, client_id="rec-b")
    post_turns(client, older.name, numbered_turns(2, refs))

    results = client.get(recordings_url()).json()["results"]

    assert [(r["name"], r["turn_count"]) for r in results] == [(newer.name, 0), (older.name, 2)]
