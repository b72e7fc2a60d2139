"""Malformed input at every entry point is a 4xx naming the field, never a 500, and stores nothing.

A table of hostile values (JSON nested deeper than any parser should follow, ``1e400``, lone surrogates, integers
no column holds, wrong container types, absurd Range headers) sent to each entry point that takes them: recording
start, turn batches, video chunks, JSON blobs, missing-blob queries, review edits, evaluations, split
configuration, blob and export downloads, and the JSON files people upload (websites, seed tasks, predictions).
(The live-session socket's frames: ``tests/live/test_live_consumer.py``.)
"""

import hashlib
import html
import json

import pytest
from django.core.files.base import ContentFile

from annotation.models import Blob, Comment, Demonstration, Edit, ExportJob, JobStatus, Turn, VideoChunk
from tests.support.payloads import BlobFile, browser_turn, chat_turn, png_bytes, state_blobs, state_refs
from tests.support.recorder import start_demo, upload_blobs
from tests.support.review_data import recorded_demo

DEEP = "[" * 1000 + "]" * 1000  # JSON nested 1,000 deep: json.loads raises RecursionError, not ValueError
HUGE = 2**64


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def raw(value) -> bytes:
    """JSON text with Python's escapes (``\\ud800`` stays an escape, as a hostile client would send it)."""
    return json.dumps(value).encode()


def with_marker(value, marker: str, replacement: str) -> bytes:
    """JSON of ``value`` with the string ``"marker"`` replaced by raw JSON text (``1e400``, deep nesting)."""
    text = json.dumps(value)
    assert f'"{marker}"' in text
    return text.replace(f'"{marker}"', replacement, 1).encode()


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def recording(client):
    files = state_blobs()
    upload_blobs(client, files.values())
    demo = start_demo(client)
    return demo, state_refs(files)


def turns_body(refs, turn) -> dict:
    return {"turns": [chat_turn("ok-0"), turn]}


def click(refs, extra=None, metadata=None) -> dict:
    """A valid click turn with ``extra`` added to its arguments and ``metadata`` merged into its metadata."""
    turn = browser_turn("b", **refs)
    if extra is not None:
        turn["arguments"]["extra"] = extra
    turn["arguments"]["metadata"].update(metadata or {})
    return turn


# (case id, body builder(refs) -> bytes, field named in the error)
TURN_BODIES = [
    ("deep-arguments", lambda r: with_marker(turns_body(r, click(r, "X")), "X", DEEP), ""),
    (
        "1e400-in-arguments",
        lambda r: with_marker(turns_body(r, click(r, "X")), "X", "1e400"),
        "turns[1].arguments.extra",
    ),
    (
        "400-digit-integer-in-arguments",  # no double holds it (math.isfinite raised OverflowError: a 500)
        lambda r: with_marker(turns_body(r, click(r, "X")), "X", "1" + "0" * 400),
        "turns[1].arguments.extra",
    ),
    (
        "400-digit-timestamp",
        lambda r: with_marker(turns_body(r, chat_turn("c", timestamp="X")), "X", "-1" + "0" * 400),
        "turns[1].timestamp",
    ),
    (
        "lone-surrogate-utterance",
        lambda r: raw(turns_body(r, chat_turn("c", utterance="\ud800"))),
        "turns[1].utterance",
    ),
    ("lone-surrogate-key", lambda r: raw({"turns": [{"\udc00": 1}]}), "turns[0]"),
    (
        "tabId-2-to-the-64",
        lambda r: raw(turns_body(r, click(r, metadata={"tabId": HUGE}))),
        "turns[1].arguments.metadata.tabId",
    ),
    (
        "viewportWidth-negative",
        lambda r: raw(turns_body(r, click(r, metadata={"viewportWidth": -5}))),
        "turns[1].arguments.metadata.viewportWidth",
    ),
    ("turns-is-an-object", lambda r: raw({"turns": {"0": chat_turn("c")}}), "turns"),
    ("body-is-a-list", lambda r: raw([chat_turn("c")]), "turns"),
    ("huge-integer-literal", lambda r: b'{"turns": [' + b"9" * 5000 + b"]}", "body"),
]


def assert_names(response, status: int, field: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["detail"]
    if field:
        assert field in [error["field"] for error in body["errors"]], body


@pytest.mark.parametrize(("build", "field"), [pytest.param(b, f, id=i) for i, b, f in TURN_BODIES])
def test_a_hostile_turn_batch_is_a_400_naming_the_field_and_stores_nothing(client, recording, build, field):
    demo, refs = recording
    response = client.post(f"/api/recordings/{demo.name}/turns/", build(refs), content_type="application/json")

    assert_names(response, 400, field)
    assert Turn.objects.filter(demonstration=demo).count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(with_marker({"project": "alpha", "client_id": "c", "websites": "X"}, "X", DEEP), "", id="deep"),
        pytest.param(
            raw({"project": "alpha", "client_id": "c", "task_description": "\ud800"}),
            "task_description",
            id="surrogate",
        ),
        pytest.param(
            with_marker({"project": "alpha", "client_id": "c", "timezone_offset_minutes": "X"}, "X", "1e400"),
            "timezone_offset_minutes",
            id="1e400",
        ),
        pytest.param(
            raw({"project": "alpha", "client_id": "c", "timezone_offset_minutes": HUGE}),
            "timezone_offset_minutes",
            id="huge-offset",
        ),
        pytest.param(raw(["alpha"]), "", id="body-is-a-list"),
    ],
)
def test_a_hostile_recording_start_is_a_400_naming_the_field(client, owner, body, field):
    response = client.post("/api/recordings/", body, content_type="application/json")

    assert_names(response, 400, field)
    assert not Demonstration.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"index": HUGE, "started_at": 0}, "index", id="index-2-to-the-64"),
        pytest.param({"index": -1, "started_at": 0}, "index", id="index-negative"),
        pytest.param({"index": 0, "started_at": "X"}, "started_at", id="started-at-1e400"),
    ],
)
def test_a_hostile_video_chunk_is_a_400_naming_the_field(client, recording, body, field):
    demo, _ = recording
    video = BlobFile(b"\x1a\x45\xdf\xa3 webm", "video/webm")
    upload_blobs(client, [video])
    payload = {**body, "blob": video.sha256}
    data = with_marker(payload, "X", "1e400") if body.get("started_at") == "X" else raw(payload)

    response = client.post(f"/api/recordings/{demo.name}/video/", data, content_type="application/json")

    assert_names(response, 400, field)
    assert not VideoChunk.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(with_marker({"project": "alpha", "sha256": "X"}, "X", DEEP), "", id="deep"),
        pytest.param(raw({"project": "alpha", "sha256": ["\ud800"]}), "sha256[0]", id="surrogate"),
        pytest.param(raw({"project": "alpha", "sha256": "abc"}), "sha256", id="not-a-list"),
    ],
)
def test_a_hostile_missing_blob_query_is_a_400(client, body, field):
    response = client.post("/api/blobs/missing/", body, content_type="application/json")
    assert_names(response, 400, field)


def test_a_deeply_nested_json_blob_is_a_400(client, media_storage):
    data = DEEP.encode()
    response = client.put(
        f"/api/blobs/{hashlib.sha256(data).hexdigest()}?project=alpha", data, content_type="application/json"
    )
    assert_names(response, 400, "body")
    assert not Blob.objects.exists()


# --- Review edits ------------------------------------------------------------------------------------------


@pytest.fixture
def review(client, reviewer, alpha):
    client.force_login(reviewer)
    return recorded_demo()


def edit(client, demo, body: bytes):
    return client.post(f"/review/{demo.name}/edit", body, content_type="application/json")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        pytest.param(lambda d, t: with_marker({"op": "comment", "revision": 0, "text": "X"}, "X", DEEP), "", id="deep"),
        pytest.param(
            lambda d, t: raw({"op": "comment", "revision": 0, "text": "\ud800"}), "text", id="comment-surrogate"
        ),
        pytest.param(
            lambda d, t: raw({"op": "edit_text", "revision": 0, "turn": t, "text": "a\udfffb"}),
            "text",
            id="edit-text-surrogate",
        ),
        pytest.param(
            lambda d, t: raw({"op": "edit_metadata", "revision": 0, "fields": ["category"]}), "fields", id="fields-list"
        ),
        pytest.param(
            lambda d, t: raw({"op": "edit_metadata", "revision": 0, "fields": "category"}), "fields", id="fields-string"
        ),
        pytest.param(lambda d, t: raw({"op": "delete", "revision": 0, "turn": HUGE}), "turn", id="turn-id-huge"),
        pytest.param(lambda d, t: raw({"op": "delete", "revision": HUGE, "turn": t}), "", id="revision-huge"),
        pytest.param(
            lambda d, t: with_marker({"op": "move", "revision": 0, "turn": t, "to_index": "X"}, "X", "1e400"),
            "to_index",
            id="1e400",
        ),
    ],
)
def test_a_hostile_review_edit_is_a_4xx_naming_the_field_and_changes_nothing(client, review, make, field):
    turn = Turn.objects.filter(demonstration=review, type="chat").values_list("pk", flat=True).first()

    response = edit(client, review, make(review, turn))

    assert 400 <= response.status_code < 500, response.content
    if field:
        assert field in [error["field"] for error in response.json()["errors"]], response.json()
    assert not Edit.objects.exists()
    assert not Comment.objects.exists()


# --- Researchers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(
            with_marker({"project": "alpha", "format": "weblinx", "split": "valid", "predictions": "X"}, "X", DEEP),
            "",
            id="deep-predictions",
        ),
        pytest.param(
            raw(
                {
                    "project": "alpha",
                    "format": "weblinx",
                    "split": "valid",
                    "predictions": [{"output_predicted": "\ud800"}],
                }
            ),
            "predictions[0].output_predicted",
            id="surrogate",
        ),
    ],
)
def test_hostile_predictions_are_a_400(researcher, api_for, body, field):
    response = api_for(researcher).post("/api/evaluations/", body, content_type="application/json")
    assert_names(response, 400, field)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"seed": HUGE}, "seed", id="seed-2-to-the-64"),
        pytest.param({"held_out_websites": "bbc.com"}, "held_out_websites", id="websites-string"),
        pytest.param({"valid_fraction": "nan"}, "valid_fraction", id="nan-string"),
    ],
)
def test_a_hostile_split_configuration_is_a_400(alpha, owner, api_for, body, field):
    from annotation.models import Membership, Role

    Membership.objects.filter(user=owner).update(role=Role.ADMIN)
    response = api_for(owner).patch("/api/projects/alpha/splits/", raw(body), content_type="application/json")
    assert_names(response, 400, field)


# --- Downloads -----------------------------------------------------------------------------------------------


@pytest.fixture
def finished_export(researcher, alpha):
    data = bytes(range(256)) * 20
    job = ExportJob.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        status=JobStatus.DONE,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    job.file.save(f"exports/{job.pk}/{job.filename}", ContentFile(data), save=True)
    return job


@pytest.mark.parametrize("header", ["bytes=" + "9" * 5000 + "-", "bytes=-" + "1" * 5000, "bytes=0-" + "7" * 400])
def test_an_absurd_range_header_is_a_416_naming_it(researcher, api_for, finished_export, owner, header):
    export = api_for(researcher).get(f"/api/exports/{finished_export.pk}/download/", HTTP_RANGE=header)

    demo = start_demo(api_for(owner))
    shot = BlobFile(png_bytes(), "image/png")
    upload_blobs(api_for(owner), [shot])
    Turn.objects.create(
        demonstration=demo, client_id="t", seq=0, type="browser", timestamp=0, screenshot_id=shot.sha256
    )
    blob = api_for(owner).get(f"/api/blobs/{shot.sha256}", HTTP_RANGE=header)

    for response in (export, blob):
        assert response.status_code == 416
        assert response.json()["errors"][0]["field"] == "Range"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b'{"a": {"x": NaN}}', "Out of range float"),
        (b'{"a": {"x": 1e400}}', None),  # parses (to infinity): the bboxes check names the box
        (b'{"\\ud800": {"x": 1}}', "surrogate"),
        (b'{"a": "\xff"}', "not UTF-8"),
        (b"[" * 2000 + b"]" * 2000, "nested too deeply"),
        (b'{"a": {"x": 1, "x": 2}, "b": {"y": 18446744073709551616}}', None),
    ],
)
def test_the_fast_bboxes_parse_refuses_and_accepts_exactly_what_the_precise_one_does(text, message, monkeypatch):
    """Bboxes blobs are parsed with orjson first (``walk=False``); whatever it refuses is parsed again with json
    for the message, so what is accepted and refused, and why, is as with the json parse alone."""
    import orjson

    from annotation.lib import jsonsafe

    def outcome():
        try:
            value = jsonsafe.loads(text, walk=False)
        except jsonsafe.JSONProblem as problem:
            return "refused", problem.message
        return "parsed", type(value).__name__  # checked, never stored: the blob's bytes are (an int past 64 bits
        # comes out of orjson as a float; either way a finite number)

    fast = outcome()

    def refuse(_):
        raise orjson.JSONDecodeError("off", "", 0)

    monkeypatch.setattr(orjson, "loads", refuse)
    assert outcome() == fast
    if message:
        assert fast[0] == "refused"
        assert message in fast[1]


# --- Uploaded JSON files: the request bodies' depth limit holds for them too ---------------------------------

# (content, message, where inside the file: the field is the upload's name followed by this path)
HOSTILE_FILES = [
    pytest.param(nested(100_000), "nested too deeply", "", id="100000-deep"),  # json.loads: RecursionError
    pytest.param(nested(65), "nested too deeply", "[0]" * 64, id="65-deep"),  # one level past jsonsafe.MAX_DEPTH
    pytest.param("[1e400]", "number out of range", "[0]", id="1e400"),
]


def json_file(content: str, name: str = "upload.json"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content.encode(), content_type="application/json")


def page_client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def shown_messages(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


@pytest.mark.parametrize(("content", "message", "path"), HOSTILE_FILES)
def test_a_hostile_website_file_is_a_400_naming_the_file_in_api_and_page(researcher, api_for, content, message, path):
    from annotation.models import Website

    response = api_for(researcher).post(
        "/api/websites/import/", {"project": "alpha", "file": json_file(content)}, format="multipart"
    )
    assert_names(response, 400, "file" + path)
    assert message in response.json()["detail"]

    # the page again (400) with the refusal next to the import form, and a word to choose the file again
    page = page_client(researcher).post("/mind2web/projects/alpha/websites/import", {"file": json_file(content)})
    assert page.status_code == 400
    shown = html.unescape(page.content.decode())
    assert f"file{path}: {message}" in shown
    assert "Choose the file again" in shown
    assert not Website.objects.exists()


@pytest.mark.parametrize(("content", "message", "path"), HOSTILE_FILES)
def test_a_hostile_seed_task_file_is_a_400_naming_the_file_in_api_and_page(researcher, api_for, content, message, path):
    from tests.support.mind2web_data import website

    site = website(researcher.memberships.get().project)
    before = site.seed_tasks.count()
    response = api_for(researcher).post(
        f"/api/websites/{site.pk}/seed-tasks/", {"file": json_file(content, "seeds.json")}, format="multipart"
    )
    assert_names(response, 400, "file" + path)
    assert message in response.json()["detail"]

    page = page_client(researcher).post(
        f"/mind2web/websites/{site.pk}/seeds", {"file": json_file(content, "seeds.json")}
    )
    assert page.status_code == 400
    shown = html.unescape(page.content.decode())
    assert f"file{path}: {message}" in shown
    assert "Choose the file again" in shown
    assert site.seed_tasks.count() == before


@pytest.mark.parametrize(("content", "message", "path"), HOSTILE_FILES)
def test_a_hostile_predictions_file_is_refused_on_the_evaluations_page(researcher, api_for, content, message, path):
    from annotation.models import Evaluation

    form = {"format": "weblinx", "split": "test_iid", "predictions": json_file(content, "results.json")}
    response = page_client(researcher).post("/projects/alpha/evaluations/", form)
    assert response.status_code == 400
    error = response.context["form"].errors["predictions"][0]
    assert error.startswith("not a JSON file: ")
    assert (f"predictions{path}: {message}" if path else message) in error
    assert not Evaluation.objects.exists()
