"""The WebLINX export: what it writes, checked with the official ``weblinx`` package as the reference client.

Pure tests build ``ExportDemo`` values by hand and give the exporter a fake blob source; corpus tests store a
synthetic corpus through the real ingest path and export it as an export job would.
"""

import dataclasses
import datetime as dt
import hashlib
import io
import json
import os
from pathlib import Path

import pytest
import weblinx
from PIL import Image
from weblinx.processing.prompt import select_turns_and_candidates_for_prompts

from annotation.lib.splits import WEBLINX_SPLITS
from annotation.models import DemoStatus, Turn
from tests.support.corpus import ingest_corpus
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.exporters.base import ExportDemo, ExportTurn
from workers.exports.exporters.weblinx import WeblinxExporter

UID = "4717de80-eda2-4319"
START = dt.datetime(2024, 3, 1, 9, 30, 15, 250000, tzinfo=dt.UTC)


def png(size=(1280, 720)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (40, 90, 160)).save(buffer, "PNG")
    return buffer.getvalue()


PAGE = f'<html><body><form data-webtasks-id="f1"><input data-webtasks-id="{UID}"></form></body></html>'.encode()
BOX = {"x": 10, "y": 20, "width": 200, "height": 30, "top": 20, "right": 210, "bottom": 50, "left": 10}
BBOXES = json.dumps({"f1": {**BOX, "height": 80}, UID: BOX}).encode()
SCREENSHOT = png()


class FakeBlobs:
    """A blob source holding known bytes; records copies and refuses reads (the exporter must only copy)."""

    def __init__(self, *contents: bytes):
        self.data = {hashlib.sha256(content).hexdigest(): content for content in contents}
        self.copied = []

    def sha(self, content: bytes) -> str:
        return hashlib.sha256(content).hexdigest()

    def read(self, sha256: str) -> bytes:
        raise AssertionError("the exporter should copy blobs, not read them into memory")

    def copy_to(self, sha256: str, destination) -> None:
        self.copied.append((sha256, Path(destination)))
        Path(destination).write_bytes(self.data[sha256])


@pytest.fixture
def out(tmp_path):
    """The export folder, beside (not around) the per-test blob storage of ``conftest.media_storage``."""
    return tmp_path / "out"


@pytest.fixture
def blobs():
    return FakeBlobs(SCREENSHOT, PAGE, BBOXES)


def captured(blobs: FakeBlobs) -> dict:
    return {"screenshot": blobs.sha(SCREENSHOT), "page": blobs.sha(PAGE), "bboxes": blobs.sha(BBOXES)}


def metadata(url="https://shop.example/search") -> dict:
    return {"mouseX": 50, "mouseY": 30, "tabId": 7, "url": url, "viewportWidth": 1280, "viewportHeight": 720}


def element() -> dict:
    return {
        "attributes": {"data-webtasks-id": UID, "type": "text"},
        "bbox": BOX,
        "tagName": "INPUT",
        "textContent": "",
        "innerHTML": "",
        "outerHTML": f'<input data-webtasks-id="{UID}">',
        "xpath": "/html/body/form/input",
    }


def chat(timestamp, speaker, utterance) -> dict:
    return {"type": "chat", "timestamp": timestamp, "speaker": speaker, "utterance": utterance}


def browser(timestamp, intent, **arguments) -> dict:
    return {
        "type": "browser",
        "timestamp": timestamp,
        "intent": intent,
        "arguments": {"metadata": metadata(), **arguments},
    }


def hand_turns(blobs: FakeBlobs) -> tuple:
    """Chat, a load, a click and a text input on the captured page, and a tab creation with nothing captured."""
    load = {"url": "https://shop.example/", "transitionType": "typed", "transitionQualifiers": [], "tabId": 7}
    click = {"x": 50, "y": 30, "clientX": 50, "clientY": 30, "button": 0, "buttons": 1}
    turns = [
        chat(0.0, "instructor", "Find a red scarf, please."),
        chat(2.5, "navigator", "Sure."),
        browser(4.0, "load", properties=load),
        browser(6.2, "click", properties=click, element=element()),
        browser(8.0, "textInput", text="scarf", element=element()),
        browser(9.1, "tabcreate", properties={"tabId": 8}),
    ]
    for turn in turns[2:5]:
        turn.update(captured(blobs))
    return tuple(ExportTurn(index=index, **turn) for index, turn in enumerate(turns))


def hand_demo(blobs: FakeBlobs, name="abcdefg", split="train", **changes) -> ExportDemo:
    demo = ExportDemo(
        name=name,
        project="alpha",
        split=split,
        status="validated",
        mode="chat",
        task_description="Buy a red scarf",
        websites=("shop.example", "pay.example"),
        category="Shopping",
        subcategory="Clothing",
        region="Europe",
        instructor_sees_screen=True,
        navigator="nina",
        instructor="ivan",
        recording_start=START,
        recording_end=START + dt.timedelta(seconds=12, milliseconds=500),
        timezone_offset_minutes=-60,
        user_agent="Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0",
        recorder_version="1.4.2",
        upload_date=dt.datetime(2024, 3, 1, 10, 0, 5, 999000, tzinfo=dt.UTC),
        turns=hand_turns(blobs),
    )
    return dataclasses.replace(demo, **changes)


def read_json(path):
    return json.loads(path.read_text())


def turns_of(base, name):
    return list(weblinx.Replay.from_demonstration(weblinx.Demonstration(name, base_dir=str(base))))


# Pure: hand-built demos and a fake blob source.


def test_get_exporter_finds_the_weblinx_exporter():
    exporter = get_exporter("weblinx")
    assert isinstance(exporter, WeblinxExporter)
    assert (exporter.format, exporter.splits) == ("weblinx", WEBLINX_SPLITS)


def test_hand_built_demo_loads_with_the_weblinx_package(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    base = out / "demonstrations"

    (demo,) = weblinx.list_demonstrations(str(base))
    assert demo.name == "abcdefg"
    assert demo.is_valid()
    replay = weblinx.Replay.from_demonstration(demo)
    assert replay.validate_turns()
    assert [turn.type for turn in replay] == ["chat", "chat", "browser", "browser", "browser", "browser"]
    assert [turn.intent for turn in replay.filter_by_type("browser")] == ["load", "click", "textInput", "tabcreate"]
    assert replay.filter_by_intent("textInput")[0].args["text"] == "scarf"
    click = replay.filter_by_intent("click")[0]
    assert click.element["attributes"]["data-webtasks-id"] == UID
    assert click.bboxes[UID] == BOX
    assert f'data-webtasks-id="{UID}"' in click.html
    assert (click.url, click.tab_id, click.viewport_width) == ("https://shop.example/search", 7, 1280)
    assert Image.open(click.get_screenshot_path()).size == (1280, 720)
    assert demo.get_version() == (1, 4, 2)
    assert demo.get_upload_date(as_datetime=True) == dt.datetime(2024, 3, 1, 10, 0, 5)
    assert all(turn.format_text() for turn in replay)


def test_a_turns_traffic_goes_beside_what_the_package_reads(out, blobs):
    """A HAR (step mode, or a project's record_traffic) is written as traffic/<N>.har; replay.json is unchanged and
    the package loads the demo as without it."""
    log = json.dumps({"log": {"version": "1.2", "entries": []}}).encode()
    blobs.data[blobs.sha(log)] = log
    plain = hand_demo(blobs)
    at = next(turn.index for turn in plain.turns if turn.intent == "click")
    turns = tuple(dataclasses.replace(t, har=blobs.sha(log)) if t.index == at else t for t in plain.turns)
    WeblinxExporter().export([plain], out / "plain", blobs)
    WeblinxExporter().export([dataclasses.replace(plain, turns=turns)], out / "traffic", blobs)
    folder = out / "traffic" / "demonstrations" / "abcdefg"
    assert (folder / "traffic" / f"{at}.har").read_bytes() == log
    assert [p.name for p in (folder / "traffic").iterdir()] == [f"{at}.har"]
    replay_json = (folder / "replay.json").read_bytes()
    assert replay_json == (out / "plain" / "demonstrations" / "abcdefg" / "replay.json").read_bytes()
    assert not (out / "plain" / "demonstrations" / "abcdefg" / "traffic").exists()
    loaded = turns_of(out / "traffic" / "demonstrations", "abcdefg")
    assert [turn.intent for turn in loaded] == [
        turn.intent for turn in turns_of(out / "plain" / "demonstrations", "abcdefg")
    ]


def test_file_numbers_are_the_position_in_the_replay(out, blobs):
    demo = hand_demo(blobs)
    shuffled = tuple(dataclasses.replace(turn, index=99 - turn.index) for turn in demo.turns)
    WeblinxExporter().export([dataclasses.replace(demo, turns=shuffled)], out, blobs)

    for turn in turns_of(out / "demonstrations", "abcdefg"):
        if turn.has_screenshot():
            assert turn["state"]["screenshot"] == f"screenshot-{turn.index}-0.png"
            assert turn["state"]["page"] == f"page-{turn.index}-0.html"
            assert turn.get_bboxes_path().name == f"bboxes-{turn.index}.json"


def test_captures_are_hard_linked_files_of_the_blob_bytes(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    folder = out / "demonstrations" / "abcdefg"

    assert (folder / "screenshots" / "screenshot-3-0.png").read_bytes() == SCREENSHOT
    assert (folder / "pages" / "page-3-0.html").read_bytes() == PAGE
    assert (folder / "bboxes" / "bboxes-3.json").read_bytes() == BBOXES
    assert len(blobs.copied) == 9  # three captured turns, three files each
    demo = weblinx.Demonstration("abcdefg", base_dir=str(out / "demonstrations"))
    assert [os.path.basename(p) for p in demo.list_all_screenshots()] == [f"screenshot-{n}-0.png" for n in (2, 3, 4)]
    assert len(demo.list_all_html_pages()) == 3


def test_chat_turns_have_no_state_and_uncaptured_browser_turns_an_empty_one(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    data = read_json(out / "demonstrations" / "abcdefg" / "replay.json")["data"]
    turns = turns_of(out / "demonstrations", "abcdefg")

    assert data[0] == {"type": "chat", "timestamp": 0.0, "speaker": "instructor", "utterance": data[0]["utterance"]}
    assert not turns[0].has_screenshot()
    assert not turns[0].has_html()
    assert data[5]["state"] == {}
    assert not turns[5].has_screenshot()
    assert not turns[5].has_html()
    assert not turns[5].has_bboxes()
    assert turns[5].get_screenshot_status() is None


def test_browser_turn_state_names_its_files_and_screenshot_status(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    data = read_json(out / "demonstrations" / "abcdefg" / "replay.json")["data"]

    assert data[3]["state"] == {
        "screenshot": "screenshot-3-0.png",
        "page": "page-3-0.html",
        "screenshot_status": "good",
    }
    assert data[3]["action"]["intent"] == "click"
    assert data[3]["action"]["arguments"]["metadata"]["tabId"] == 7


def test_a_turn_marked_broken_has_screenshot_status_broken(out, blobs):
    demo = hand_demo(blobs)
    turns = list(demo.turns)
    turns[3] = dataclasses.replace(turns[3], screenshot_status="broken")
    WeblinxExporter().export([dataclasses.replace(demo, turns=tuple(turns))], out, blobs)

    statuses = [turn.get_screenshot_status() for turn in turns_of(out / "demonstrations", "abcdefg")[2:5]]
    assert statuses == ["good", "broken", "good"]


def test_a_browser_turn_without_metadata_gets_an_empty_dict(out, blobs):
    demo = hand_demo(blobs)
    bare = ExportTurn(index=0, type="browser", timestamp=0.0, intent="tabcreate", arguments={"properties": {}})
    WeblinxExporter().export([dataclasses.replace(demo, turns=(bare,))], out, blobs)

    (turn,) = turns_of(out / "demonstrations", "abcdefg")
    assert turn.metadata == {}
    assert turn.url is None
    assert turn.validate()


def test_metadata_json_fields_and_types(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    meta = read_json(out / "demonstrations" / "abcdefg" / "metadata.json")

    start_ms = int(START.timestamp()) * 1000 + 250
    assert meta == {
        "recordingStart": start_ms,
        "recordingEnd": start_ms + 12_500,
        "recordingStartISO": "2024-03-01T09:30:15.250Z",
        "recordingEndISO": "2024-03-01T09:30:27.750Z",
        "recordingId": "abcdefg",
        "timezoneOffsetMinutes": -60,
        "user": "nina",
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0",
        "version": "1.4.2",
        "recorderVersion": "1.4.2",
    }


@pytest.mark.parametrize(
    ("recorder_version", "version"),
    [("2", "2"), ("0.9.12", "0.9.12"), ("", "1.0.0"), ("v1.2", "1.0.0"), ("1.2.0-beta", "1.0.0"), ("1..2", "1.0.0")],
)
def test_metadata_version_is_dotted_integers(out, blobs, recorder_version, version):
    WeblinxExporter().export([hand_demo(blobs, recorder_version=recorder_version)], out, blobs)

    demo = weblinx.Demonstration("abcdefg", base_dir=str(out / "demonstrations"))
    assert demo.get_version(as_tuple=False) == version
    assert demo.get_version() == tuple(int(part) for part in version.split("."))


def test_unfinished_recording_ends_at_its_last_turn(out, blobs):
    WeblinxExporter().export([hand_demo(blobs, recording_end=None)], out, blobs)
    meta = read_json(out / "demonstrations" / "abcdefg" / "metadata.json")

    assert meta["recordingEnd"] - meta["recordingStart"] == 9_100
    assert meta["recordingEndISO"] == "2024-03-01T09:30:24.350Z"


def test_form_json_fields_and_types(out, blobs):
    WeblinxExporter().export([hand_demo(blobs, split="test_geo")], out, blobs)
    form = read_json(out / "demonstrations" / "abcdefg" / "form.json")

    assert form == {
        "annotator": "nina",
        "description": "Buy a red scarf",
        "tasks": ["Buy a red scarf"],
        "navigator_name": "nina",
        "instructor_name": "ivan",
        "shortcode": "abcdefg",
        "upload_date": "2024-03-01 10:00:05",
        "website": "shop.example",
        "websites": ["shop.example", "pay.example"],
        "category": "Shopping",
        "subcategory": "Clothing",
        "region": "Europe",
        "instructor_sees_screen": True,
        "split": "test_geo",
        "mode": "chat",
    }


def test_replay_json_has_version_created_and_data(out, blobs):
    WeblinxExporter().export([hand_demo(blobs)], out, blobs)
    replay = read_json(out / "demonstrations" / "abcdefg" / "replay.json")

    assert replay["version"] == "1.0.0"
    assert replay["created"] == int(START.timestamp())
    assert isinstance(replay["created"], int)
    assert len(replay["data"]) == 6
    created = weblinx.Replay.from_demonstration(weblinx.Demonstration("abcdefg", str(out / "demonstrations")))
    assert created.created == dt.datetime.fromtimestamp(int(START.timestamp()))


def test_a_rejected_demo_has_invalid_json_and_is_not_valid(out, blobs):
    demos = [hand_demo(blobs), hand_demo(blobs, name="rejected", status="rejected", rejected=True)]
    WeblinxExporter().export(demos, out, blobs)
    base = out / "demonstrations"

    assert read_json(base / "rejected" / "invalid.json") == {"reason": "rejected in review", "status": "rejected"}
    assert not (base / "abcdefg" / "invalid.json").exists()
    valid = {demo.name: demo.is_valid() for demo in weblinx.list_demonstrations(str(base))}
    assert valid == {"abcdefg": True, "rejected": False}
    assert [demo.name for demo in weblinx.list_demonstrations(str(base), valid_only=True)] == ["abcdefg"]


def test_splits_json_lists_every_split_with_unique_names(out, blobs):
    demos = [
        hand_demo(blobs, name="zeta", split="train"),
        hand_demo(blobs, name="alpha", split="train"),
        hand_demo(blobs, name="vis", split="test_vis"),
    ]
    WeblinxExporter().export(demos, out, blobs)
    splits = read_json(out / "splits.json")

    assert list(splits) == sorted(WEBLINX_SPLITS)
    assert splits["train"] == ["alpha", "zeta"]
    assert splits["test_vis"] == ["vis"]
    assert all(splits[name] == [] for name in WEBLINX_SPLITS if name not in ("train", "test_vis"))
    names = [name for members in splits.values() for name in members]
    assert len(names) == len(set(names)) == 3
    loaded = weblinx.load_demos_in_split(out / "splits.json", "train", demo_base_dir=out / "demonstrations")
    assert [demo.name for demo in loaded] == ["alpha", "zeta"]
    assert all(demo.is_valid() for demo in loaded)


def test_an_empty_export_still_writes_every_split(out, blobs):
    counts = WeblinxExporter().export([], out, blobs)

    assert read_json(out / "splits.json") == {split: [] for split in WEBLINX_SPLITS}
    assert weblinx.list_demonstrations(str(out / "demonstrations")) == []
    assert (counts.demos, counts.turns, counts.files) == (0, 0, 1)


def test_progress_is_called_once_per_demo_with_increasing_counts(out, blobs):
    calls = []
    demos = [hand_demo(blobs, name=name) for name in ("aaa", "bbb", "ccc")]
    WeblinxExporter().export(iter(demos), out, blobs, progress=calls.append)

    assert calls == [1, 2, 3]


def test_counts_per_split_and_files(out, blobs):
    short = hand_demo(blobs, name="short", split="valid")
    short = dataclasses.replace(short, turns=short.turns[:2])
    demos = [hand_demo(blobs, name="one"), hand_demo(blobs, name="two"), short]
    counts = WeblinxExporter().export(demos, out, blobs)

    assert (counts.demos, counts.turns) == (3, 14)
    assert counts.per_split["train"] == {"demos": 2, "turns": 12}
    assert counts.per_split["valid"] == {"demos": 1, "turns": 2}
    assert counts.per_split["test_cat"] == {"demos": 0, "turns": 0}
    files = [path for path in out.rglob("*") if path.is_file()]
    assert counts.files == len(files) == 2 * (3 + 9) + 3 + 1  # JSON documents and captures, + splits.json


def test_the_same_demos_give_the_same_bytes(out, blobs):
    for run in ("first", "second"):
        WeblinxExporter().export([hand_demo(blobs)], out / run, blobs)

    first = {path.relative_to(out / "first"): path.read_bytes() for path in (out / "first").rglob("*.json")}
    second = {path.relative_to(out / "second"): path.read_bytes() for path in (out / "second").rglob("*.json")}
    assert first == second
    assert len(first) == 7
    replay = (out / "first" / "demonstrations" / "abcdefg" / "replay.json").read_bytes()
    assert replay.isascii()
    assert b"\n" not in replay
    assert b'": ' not in replay


def test_non_ascii_text_is_escaped_so_any_default_encoding_reads_it(out, blobs):
    demo = hand_demo(blobs, task_description="Réserver un hôtel à Zürich — 2 nuits")
    WeblinxExporter().export([demo], out, blobs)

    raw = (out / "demonstrations" / "abcdefg" / "form.json").read_bytes()
    assert raw.isascii()
    assert json.loads(raw)["description"] == "Réserver un hôtel à Zürich — 2 nuits"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"split": "test_task"}, "unknown split"),
        ({"name": "../escape"}, "not a safe folder name"),
        ({"name": ""}, "not a safe folder name"),
    ],
)
def test_bad_demos_are_refused(out, blobs, changes, message):
    with pytest.raises(ValueError, match=message):
        WeblinxExporter().export([hand_demo(blobs, **changes)], out, blobs)


def test_a_demo_name_exported_twice_is_refused(out, blobs):
    demos = [hand_demo(blobs, split="train"), hand_demo(blobs, split="valid")]
    with pytest.raises(ValueError, match="appears twice"):
        WeblinxExporter().export(demos, out, blobs)


# The synthetic corpus, stored through the ingest path and exported from the database.


@pytest.fixture
def corpus(db):
    """Three validated demos of every intent and one rejected demo, as ``{name: Demonstration}``."""
    demos = ingest_corpus(demos=3, turns=24, elements=30, seed=11)
    demos += ingest_corpus(demos=1, turns=24, elements=30, seed=12, status=DemoStatus.REJECTED)
    return {demo.name: demo for demo in demos}


def export_corpus(corpus, out, **kwargs):
    """Export the corpus to ``out`` as an export job would."""
    project = next(iter(corpus.values())).project
    statuses = (DemoStatus.VALIDATED, DemoStatus.REJECTED)
    return WeblinxExporter().export(export_demos(project, "weblinx", statuses), out, storage_blobs(), **kwargs)


def stored_turns(demo):
    return list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))


def test_corpus_export_loads_and_walks_with_the_weblinx_package(corpus, out):
    export_corpus(corpus, out)
    base = str(out / "demonstrations")

    demos = weblinx.list_demonstrations(base)
    assert sorted(demo.name for demo in demos) == sorted(corpus)
    for demo in demos:
        replay = weblinx.Replay.from_demonstration(demo)
        stored = stored_turns(corpus[demo.name])
        assert len(replay) == len(stored)
        assert replay.validate_turns()
        stamps = [turn.timestamp for turn in replay]
        assert stamps == sorted(stamps)
        for turn, row in zip(replay, stored, strict=True):
            assert (turn.type, turn.timestamp) == (row.type, row.timestamp)
            if turn.type == "chat":
                assert (turn["speaker"], turn["utterance"]) == (row.speaker, row.utterance)
            else:
                assert turn.intent == row.intent
                assert turn.args == row.arguments
                assert_captures_resolve(turn, row)
    screenshots = list((out / "demonstrations").glob("*/screenshots/*.png"))
    assert screenshots
    assert all(path.stat().st_nlink >= 2 for path in screenshots)  # hard links into the blob storage


def assert_captures_resolve(turn, row):
    """A captured browser turn's screenshot, page and boxes exist, join on the element's uid, and decode."""
    if row.screenshot_id is None:
        assert not turn.has_screenshot()
        assert not turn.has_html()
        return
    assert turn.has_screenshot()
    assert turn.has_html()
    assert turn.has_bboxes()
    assert turn.get_screenshot_status() == "good"
    for path in (turn.get_screenshot_path(), turn.get_html_path(), turn.get_bboxes_path()):
        assert os.path.isfile(path)
    uid = row.element_uid
    if uid is not None:
        assert uid in turn.bboxes
        assert f'data-webtasks-id="{uid}"' in turn.html
    with Image.open(turn.get_screenshot_path()) as image:
        image.load()
        assert image.size == (1280, 720)


def test_corpus_export_covers_every_intent_and_both_speakers(corpus, out):
    export_corpus(corpus, out)

    for name in corpus:
        replay = weblinx.Replay.from_demonstration(weblinx.Demonstration(name, str(out / "demonstrations")))
        intents = {turn.intent for turn in replay.filter_by_type("browser")}
        assert intents >= {"click", "hover", "textInput", "change", "submit", "load", "scroll", "copy", "paste"}
        assert {turn["speaker"] for turn in replay.filter_by_type("chat")} == {"instructor", "navigator"}
        assert replay.filter_if_screenshot()
        assert replay.filter_if_html_page()


def test_corpus_rejected_demo_is_exported_but_not_valid(corpus, out):
    export_corpus(corpus, out)

    validity = {demo.name: demo.is_valid() for demo in weblinx.list_demonstrations(str(out / "demonstrations"))}
    assert validity == {name: demo.status == DemoStatus.VALIDATED for name, demo in corpus.items()}
    assert list(validity.values()).count(False) == 1


def test_corpus_splits_load_with_the_weblinx_package_and_match_the_counts(corpus, out):
    calls = []
    counts = export_corpus(corpus, out, progress=calls.append)

    splits = read_json(out / "splits.json")
    assert set(splits) == set(WEBLINX_SPLITS)
    loaded = []
    for split in WEBLINX_SPLITS:
        demos = weblinx.load_demos_in_split(out / "splits.json", split, demo_base_dir=out / "demonstrations")
        assert all(demo.has_file("replay.json") for demo in demos)
        assert counts.per_split[split]["demos"] == len(demos)
        loaded += [demo.name for demo in demos]
    assert sorted(loaded) == sorted(corpus)
    # synth makes every third demo one whose instructor cannot see the screen
    assert splits["test_vis"]
    assert splits["test_vis"] == sorted(name for name, demo in corpus.items() if not demo.instructor_sees_screen)
    assert calls == list(range(1, len(corpus) + 1))
    assert (counts.demos, counts.turns) == (len(corpus), Turn.objects.filter(demonstration__in=corpus.values()).count())
    assert sum(entry["turns"] for entry in counts.per_split.values()) == counts.turns
    assert counts.files == sum(1 for path in out.rglob("*") if path.is_file())


def test_corpus_turn_marked_broken_comes_through(corpus, out):
    project = next(iter(corpus.values())).project
    demo = next(export_demos(project, "weblinx"))
    modelled = ("click", "change", "textInput", "scroll", "load", "submit")  # what the package selects for prompts
    captured_at = [turn.index for turn in demo.turns if turn.screenshot and turn.intent in modelled][:2]
    turns = [
        dataclasses.replace(turn, screenshot_status="broken") if turn.index == captured_at[0] else turn
        for turn in demo.turns
    ]
    WeblinxExporter().export([dataclasses.replace(demo, turns=tuple(turns))], out, storage_blobs())

    replay = turns_of(out / "demonstrations", demo.name)
    assert replay[captured_at[0]].get_screenshot_status() == "broken"
    assert replay[captured_at[1]].get_screenshot_status() == "good"
    assert os.path.isfile(replay[captured_at[0]].get_screenshot_path())
    # The package's own turn selection for modelling keeps only turns whose screenshot is "good".
    selected = select_turns_and_candidates_for_prompts([weblinx.Demonstration(demo.name, str(out / "demonstrations"))])
    indexes = {record["turn"].index for record in selected}
    assert captured_at[0] not in indexes
    assert captured_at[1] in indexes
