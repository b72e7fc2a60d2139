"""Every way a turn batch can be refused: status, a message naming the field and what is allowed, nothing stored.

Each invalid turn is sent LAST in a batch after valid ones, so these tests also show that a batch is stored
all or nothing. The recording already holds one turn, so "nothing stored" means the count stays at one.
"""

import json

import pytest

from annotation.lib.schema import INTENTS
from tests.support.payloads import (
    BlobFile,
    browser_turn,
    chat_turn,
    jpeg_bytes,
    numbered_turns,
    sha,
    state_blobs,
    state_refs,
)
from tests.support.recorder import (
    assert_nothing_stored,
    post_raw,
    post_turns,
    put_blob,
    recordings_url,
    start_demo,
    upload_blobs,
)

DELETE = object()


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def blobs(client):
    files = state_blobs()
    upload_blobs(client, files.values())
    return files


@pytest.fixture
def demo(client, blobs):
    """A recording that already holds one valid turn."""
    demo = start_demo(client)
    assert post_turns(client, demo.name, [chat_turn("first")]).status_code == 201
    return demo


def changed(turn: dict, path: str, value) -> dict:
    """``turn`` with the value at dotted ``path`` replaced (or removed when ``value`` is ``DELETE``)."""
    *parents, last = path.split(".")
    target = turn
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return turn


def batch_ending_with(bad: dict, refs: dict) -> list[dict]:
    return [*numbered_turns(2, refs, prefix="ok"), bad]


def assert_refused(response, status: int, field: str, *fragments: str) -> None:
    """The response has ``status`` and an error for ``field`` whose message contains every fragment."""
    assert response.status_code == status, response.content
    messages = [e["message"] for e in response.json()["errors"] if e["field"] == field]
    assert messages, f"no error for {field}: {response.json()}"
    for fragment in fragments:
        assert any(fragment in message for message in messages), (fragment, messages)


def case(case_id: str, intent: str, path: str, value, *fragments: str, field: str | None = None):
    """A broken browser turn: ``intent``'s valid turn with ``path`` set to ``value``; error expected on ``field``."""
    return pytest.param(intent, path, value, field or path, fragments, id=case_id)


ALLOWED_INTENTS = "allowed: " + ", ".join(INTENTS)
TURN_CASES = [
    case("unknown-intent", "click", "intent", "doubleclick", "unknown intent 'doubleclick'", ALLOWED_INTENTS),
    case("missing-intent", "click", "intent", DELETE, "unknown intent null", ALLOWED_INTENTS),
    case("snake-case-intent", "textInput", "intent", "text_input", "'text_input'", ALLOWED_INTENTS),
    case("textInput-no-text", "textInput", "arguments.text", DELETE, "required; expected string"),
    case("text-is-a-number", "textInput", "arguments.text", 42, "expected string, got number"),
    case("change-no-value", "change", "arguments.value", DELETE, "required; expected string"),
    case("scroll-no-scrollY", "scroll", "arguments.scrollY", DELETE, "required; expected number"),
    case("scrollX-is-a-string", "scroll", "arguments.scrollX", "0", "expected number, got string"),
    case("copy-no-selected", "copy", "arguments.selected", DELETE, "required; expected string"),
    case("pasted-is-null", "paste", "arguments.pasted", None, "expected string, got null"),
    case(
        "load-no-transitionQualifiers",
        "load",
        "arguments.properties.transitionQualifiers",
        DELETE,
        "required; expected list of strings",
    ),
    case(
        "load-qualifiers-not-a-list",
        "load",
        "arguments.properties.transitionQualifiers",
        "from_address_bar",
        "expected list of strings, got string",
    ),
    case("load-no-url", "load", "arguments.properties.url", DELETE, "required; expected string"),
    case("load-no-properties", "load", "arguments.properties", DELETE, "required", field="arguments.properties.url"),
    case("properties-is-a-string", "load", "arguments.properties", "x", "expected object, got string"),
    case("tabswitch-no-origin", "tabswitch", "arguments.properties.tabIdOrigin", DELETE, "required; expected integer"),
    case("properties-tabId-string", "tabcreate", "arguments.properties.tabId", "2", "expected integer, got string"),
    case("metadata-tabId-string", "click", "arguments.metadata.tabId", "1", "expected integer, got string"),
    case("metadata-tabId-boolean", "click", "arguments.metadata.tabId", True, "expected integer, got boolean"),
    case("metadata-no-url", "click", "arguments.metadata.url", DELETE, "required; expected string"),
    case("viewport-is-a-string", "click", "arguments.metadata.viewportWidth", "1280", "expected integer, got string"),
    case("missing-metadata", "click", "arguments.metadata", DELETE, "required on every browser turn", "got null"),
    case("metadata-is-an-array", "tabremove", "arguments.metadata", [], "required on every browser turn", "got array"),
    case("no-arguments", "click", "arguments", DELETE, "required; expected object, got null"),
    case(
        "element-no-uid",
        "click",
        "arguments.element.attributes.data-webtasks-id",
        DELETE,
        "required; expected non-empty string",
    ),
    case("element-empty-uid", "submit", "arguments.element.attributes.data-webtasks-id", "", "non-empty string"),
    case("hover-no-element", "hover", "arguments.element", DELETE, "required for element intents", "got null"),
    case("element-no-xpath", "click", "arguments.element.xpath", DELETE, "required; expected string"),
    case("bbox-value-string", "click", "arguments.element.bbox.width", "100", "expected number, got string"),
    case("bbox-no-top", "click", "arguments.element.bbox.top", DELETE, "required; expected number"),
    case("timestamp-string", "click", "timestamp", "1.5", "finite number", "got string"),
    case("timestamp-null", "click", "timestamp", None, "finite number", "got null"),
    case("timestamp-boolean", "click", "timestamp", True, "finite number", "got boolean"),
    case("timestamp-negative", "click", "timestamp", -0.5, "must be >= 0"),
    case("timestamp-missing", "click", "timestamp", DELETE, "required"),
    case("unknown-type", "click", "type", "video", "expected one of: chat, browser"),
    case("missing-type", "click", "type", DELETE, "expected one of: chat, browser"),
    case("unknown-field", "click", "value", "x", "unknown field", "allowed: arguments, bboxes"),
    case("state-is-not-submitted", "click", "state", {}, "unknown field"),
    case("no-client-id", "click", "client_id", DELETE, "required; expected a string of 1 to 64"),
    case("client-id-too-long", "click", "client_id", "x" * 65, "1 to 64 characters"),
    case("client-id-number", "click", "client_id", 7, "expected a string"),
    case("screenshot-not-a-sha", "click", "screenshot", "not-a-sha", "expected the sha256 of an uploaded blob"),
    case("page-uppercase-sha", "click", "page", "A" * 64, "64 lowercase hex"),
    # Shapes the review page, exporters and metrics read (each was stored, then broke /review/<demo>/).
    case("scroll-element-is-a-string", "scroll", "arguments.element", "body", "expected object, got string"),
    case("element-bbox-is-a-string", "click", "arguments.element.bbox", "0,0,1,1", "expected object, got string"),
    case("element-bbox-value-string", "click", "arguments.element.bbox.width", "100", "expected number, got string"),
    case("textContent-is-a-number", "click", "arguments.element.textContent", 7, "expected string, got number"),
    case("attributes-is-a-list", "hover", "arguments.element.attributes", ["a"], "expected object, got array"),
    case("attribute-value-number", "click", "arguments.element.attributes.class", 3, "expected string"),
    case("tagName-is-null", "click", "arguments.element.tagName", None, "expected string, got null"),
    # Integers the database columns cannot hold.
    case("tabId-2-to-the-64", "click", "arguments.metadata.tabId", 2**64, "expected an integer from"),
    case("viewportWidth-negative", "click", "arguments.metadata.viewportWidth", -5, "from 0 to 2147483647"),
    case("viewportHeight-huge", "click", "arguments.metadata.viewportHeight", 2**31, "from 0 to 2147483647"),
    case("properties-tabId-huge", "tabcreate", "arguments.properties.tabId", -(2**60), "expected an integer from"),
    case("label-is-a-number", "click", "label", 42, "expected string, got number"),
    case("label-is-an-object", "submit", "label", {"text": "Go"}, "expected string, got object"),
    case("label-too-long", "click", "label", "x" * 201, "at most 200 characters, got 201"),
    case("label-holds-a-nul", "click", "label", "Pay\x00", "holds a NUL character"),
    case("text-holds-a-nul", "textInput", "arguments.text", "a\x00b", "holds a NUL character"),
    case("url-holds-a-nul", "click", "arguments.metadata.url", "https://a.test/\x00", "holds a NUL character"),
]


@pytest.mark.parametrize(("intent", "path", "value", "field", "fragments"), TURN_CASES)
def test_an_invalid_browser_turn_is_refused_with_its_field_and_nothing_is_stored(
    client, demo, blobs, media_storage, intent, path, value, field, fragments
):
    refs = state_refs(blobs)
    bad = changed(browser_turn("bad", intent, 9.0, **refs), path, value)

    response = post_turns(client, demo.name, batch_ending_with(bad, refs))

    assert_refused(response, 400, f"turns[2].{field}", *fragments)
    assert response.json()["code"] == "validation_failed"
    assert "nothing was stored" in response.json()["detail"]
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


CHAT_CASES = [
    pytest.param("speaker", "user", "speaker", ["expected one of: instructor, navigator"], id="unknown-speaker"),
    pytest.param("speaker", DELETE, "speaker", ["instructor, navigator"], id="missing-speaker"),
    pytest.param("utterance", DELETE, "utterance", ["required; expected string, got null"], id="missing-utterance"),
    pytest.param("utterance", ["hi"], "utterance", ["expected string, got array"], id="utterance-array"),
    pytest.param("intent", "click", "intent", ["unknown field; allowed: client_id, speaker"], id="chat-with-intent"),
    pytest.param("timestamp", -1, "timestamp", ["must be >= 0"], id="chat-negative-timestamp"),
    pytest.param("utterance", "hi\x00", "utterance", ["holds a NUL character"], id="utterance-holds-a-nul"),
]


@pytest.mark.parametrize(("path", "value", "field", "fragments"), CHAT_CASES)
def test_an_invalid_chat_turn_is_refused_with_its_field_and_nothing_is_stored(
    client, demo, blobs, media_storage, path, value, field, fragments
):
    bad = changed(chat_turn("bad"), path, value)

    response = post_turns(client, demo.name, batch_ending_with(bad, state_refs(blobs)))

    assert_refused(response, 400, f"turns[2].{field}", *fragments)
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_turn_that_is_not_an_object_is_refused(client, demo, blobs, media_storage):
    response = post_turns(client, demo.name, batch_ending_with("click", state_refs(blobs)))

    assert_refused(response, 400, "turns[2]", "expected object, got string")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_turn_referring_to_a_blob_not_uploaded_is_refused(client, demo, blobs, media_storage):
    missing = sha(b"never uploaded")
    bad = browser_turn("bad", **{**state_refs(blobs), "screenshot": missing})

    response = post_turns(client, demo.name, batch_ending_with(bad, state_refs(blobs)))

    assert_refused(
        response, 400, "turns[2].screenshot", f"blob {missing} has not been uploaded", f"/api/blobs/{missing}"
    )
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


@pytest.mark.parametrize(
    ("field", "wrong", "fragments"),
    [
        pytest.param("screenshot", "page", ["is text/html; expected image/"], id="html-as-screenshot"),
        pytest.param("page", "bboxes", ["is application/json; expected text/html"], id="json-as-page"),
        pytest.param("bboxes", "screenshot", ["is image/png; expected application/json"], id="png-as-bboxes"),
    ],
)
def test_a_blob_of_the_wrong_media_type_for_its_role_is_refused(
    client, demo, blobs, media_storage, field, wrong, fragments
):
    refs = state_refs(blobs)
    bad = browser_turn("bad", **{**refs, field: refs[wrong]})

    response = post_turns(client, demo.name, batch_ending_with(bad, refs))

    assert_refused(response, 400, f"turns[2].{field}", *fragments)
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_jpeg_screenshot_is_refused_because_weblinx_screenshots_are_png(client, demo, blobs, media_storage):
    jpeg = BlobFile(jpeg_bytes(), "image/jpeg")
    assert put_blob(client, jpeg).status_code == 201
    bad = browser_turn("bad", **{**state_refs(blobs), "screenshot": jpeg.sha256})

    response = post_turns(client, demo.name, batch_ending_with(bad, state_refs(blobs)))

    assert_refused(response, 400, "turns[2].screenshot", "is image/jpeg; expected image/png")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=4)


def test_every_problem_of_a_batch_is_listed_at_once(client, demo, media_storage):
    bad_text = changed(browser_turn("a", "textInput"), "arguments.text", DELETE)
    bad_speaker = changed(chat_turn("b"), "speaker", "robot")

    response = post_turns(client, demo.name, [bad_text, browser_turn("ok"), bad_speaker])

    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["turns[0].arguments.text", "turns[2].speaker"]
    assert response.json()["detail"].startswith("2 problem(s)")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_client_id_twice_in_one_batch_is_refused(client, demo, media_storage):
    response = post_turns(client, demo.name, [browser_turn("same"), browser_turn("other"), browser_turn("same")])

    assert_refused(response, 400, "turns[2].client_id", "'same' appears twice in the batch")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"turns": []}, id="empty-list"),
        pytest.param({}, id="no-turns-key"),
        pytest.param({"turns": None}, id="turns-null"),
        pytest.param({"turns": {"client_id": "x"}}, id="turns-object"),
        pytest.param([], id="body-is-a-list"),
    ],
)
def test_a_batch_without_turns_is_refused(client, demo, media_storage, body):
    response = client.post(recordings_url(demo.name, "turns"), body, format="json")

    assert_refused(response, 400, "turns", "required; expected a non-empty list of turns")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_batch_over_the_turn_limit_is_refused(client, demo, media_storage, settings):
    settings.INGEST_MAX_BATCH_TURNS = 3

    response = post_turns(client, demo.name, numbered_turns(4))

    assert_refused(response, 400, "turns", "4 turns in one batch; at most 3 allowed")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_batch_at_the_turn_limit_is_accepted(client, demo, settings):
    settings.INGEST_MAX_BATCH_TURNS = 3

    response = post_turns(client, demo.name, numbered_turns(3))

    assert response.status_code == 201


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(b'{"turns": [', "malformed JSON", id="truncated"),
        pytest.param(b"turns=1", "malformed JSON", id="not-json"),
        pytest.param(b'{"turns": [{"a": 1,}]}', "malformed JSON", id="trailing-comma"),
        pytest.param(b'{"turns": "\xff\xfe"}', "body is not UTF-8", id="not-utf8"),
    ],
)
def test_a_malformed_json_body_is_refused_with_a_clear_message(client, demo, media_storage, body, fragment):
    response = post_raw(client, demo.name, body)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(fragment)
    assert response.json()["code"] == "parse_error"
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


@pytest.mark.parametrize(
    ("original", "replacement"),
    [
        pytest.param('"timestamp": 1.5', '"timestamp": NaN', id="nan-timestamp"),
        pytest.param('"clientX": 250', '"clientX": NaN', id="nan-in-properties"),
        pytest.param('"scrollY": 300.5', '"scrollY": Infinity', id="infinity-scroll"),
        pytest.param('"x": 10', '"x": -Infinity', id="minus-infinity-in-bbox"),
    ],
)
def test_nan_or_infinity_anywhere_in_the_body_is_refused_as_malformed_json(
    client, demo, media_storage, original, replacement
):
    turns = [browser_turn("b-0", "click"), browser_turn("b-1", "scroll")]
    body = json.dumps({"turns": turns}).replace(original, replacement, 1)
    assert replacement in body

    response = post_raw(client, demo.name, body.encode())

    assert response.status_code == 400
    assert response.json()["detail"].startswith("malformed JSON: Out of range float values are not JSON compliant")
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_body_over_the_batch_byte_limit_is_refused_with_413(client, demo, media_storage, settings):
    body = json.dumps({"turns": numbered_turns(5)}).encode()
    settings.INGEST_MAX_BATCH_BYTES = len(body) - 1

    response = post_raw(client, demo.name, body)

    assert response.status_code == 413
    assert "INGEST_MAX_BATCH_BYTES" in response.json()["detail"]
    assert response.json()["code"] == "too_large"
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_body_at_the_batch_byte_limit_is_accepted(client, demo, settings):
    body = json.dumps({"turns": numbered_turns(5)}).encode()
    settings.INGEST_MAX_BATCH_BYTES = len(body)

    response = post_raw(client, demo.name, body)

    assert response.status_code == 201


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_batch_in_another_content_type_is_refused_with_415(client, demo, media_storage, content_type):
    body = json.dumps({"turns": numbered_turns(1)}).encode()

    response = post_raw(client, demo.name, body, content_type=content_type)

    assert response.status_code == 415
    assert content_type in response.json()["detail"]
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_a_multipart_batch_is_refused_with_415(client, demo, media_storage):
    response = client.post(recordings_url(demo.name, "turns"), {"turns": "[]"}, format="multipart")

    assert response.status_code == 415
    assert_nothing_stored(demo, media_storage, turns=1, blobs=3)


def test_turns_for_an_unknown_recording_are_404(client, media_storage):
    response = post_turns(client, "nosuchdemo", numbered_turns(1))

    assert response.status_code == 404
    assert "nosuchdemo" in response.json()["detail"]
