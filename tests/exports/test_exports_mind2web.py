"""The Mind2Web export: task records checked against the spec's schema, steps, candidates and both HTML views.

Pure tests build ``ExportDemo`` values by hand on a tiny page whose every box is known; corpus tests store a
synthetic corpus through the real ingest path and export it as an export job would (``export_demos``).
HTML is read back with ``lxml.etree.fromstring``, as the Mind2Web code reads it.
"""

import datetime as dt
import hashlib
import json
import re
import uuid

import lxml.html
import pytest
from lxml import etree

from annotation.lib.splits import MIND2WEB_SPLITS
from annotation.models import DemoStatus
from tests.support.corpus import ingest_corpus
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.exporters.base import ExportDemo, ExportTurn
from workers.exports.exporters.mind2web import NAMESPACE, Mind2WebExporter, website_name
from workers.exports.exporters.mind2web.page import SALIENT_ATTRIBUTES

START = dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC)
PAGE_HTML = """<!DOCTYPE html>
<html data-webtasks-id="html" lang="en"><head data-webtasks-id="head"><meta data-webtasks-id="meta" charset="utf-8">
<title data-webtasks-id="title">Shoes</title><script data-webtasks-id="script">var secret = 1;</script>
<style data-webtasks-id="style">p { color: red }</style></head>
<body data-webtasks-id="body"><!-- a comment the export must drop -->
<form data-webtasks-id="form" action="/search" role="search">
  <input data-webtasks-id="query" type="search" name="q" placeholder="Search shoes" aria-label="Search" onclick="go()">
  <select data-webtasks-id="size" name="size"><option data-webtasks-id="small" value="s">Small</option>
    <option data-webtasks-id="medium" value="m">Medium</option></select>
  <input data-webtasks-id="stock" type="checkbox" name="stock" checked>
  <input data-webtasks-id="volume" type="range" name="volume">
  <input data-webtasks-id="token" type="hidden" name="token" value="abc">
  <button data-webtasks-id="go" type="submit" class="btn"><i data-webtasks-id="icon" class="icon"></i>
    <span data-webtasks-id="go-label">Go</span></button>
</form>
<ul data-webtasks-id="list"><li data-webtasks-id="item"><span data-webtasks-id="name">Red shoe</span>
  <span data-webtasks-id="price">$10</span></li></ul>
<div data-webtasks-id="deco" role="presentation"><p data-webtasks-id="note">Free delivery</p></div>
<div data-webtasks-id="gone" style="display:none">Hidden text</div>
</body></html>"""
# Client boxes as the recorder captures them, unscrolled: (x, y, width, height); hidden elements have zero boxes.
BOXES = {
    "html": (0, 0, 1280, 800),
    "head": (0, 0, 0, 0),
    "meta": (0, 0, 0, 0),
    "title": (0, 0, 0, 0),
    "script": (0, 0, 0, 0),
    "style": (0, 0, 0, 0),
    "body": (0, 0, 1280, 792),
    "form": (10, 10, 600, 40),
    "query": (10, 10, 200, 40),
    "size": (220, 10, 100, 40),
    "small": (0, 0, 0, 0),
    "medium": (0, 0, 0, 0),
    "stock": (330, 22, 16, 16),
    "volume": (350, 20, 80, 20),
    "token": (0, 0, 0, 0),
    "go": (440, 10, 80, 40),
    "icon": (445, 20, 4, 4),
    "go-label": (450, 20, 30, 20),
    "list": (0, 100, 1280, 60),
    "item": (0, 100, 1280, 50),
    "name": (10, 110, 100, 20),
    "price": (200, 110, 50, 20),
    "deco": (0, 300, 400, 50),
    "note": (0, 300, 400, 50),
    "gone": (0, 0, 0, 0),
}
PAGE_UIDS = [  # the uids of the tiny page in document order, but for the elements the export removes
    el.get("data-webtasks-id")
    for el in etree.fromstring(PAGE_HTML.encode(), etree.HTMLParser()).iter(etree.Element)
    if el.tag not in ("script", "style", "meta")
]
TAGS = {"query": "INPUT", "size": "SELECT", "stock": "INPUT", "volume": "INPUT", "go": "BUTTON", "form": "FORM"}
VISIBLE = {uid for uid, box in BOXES.items() if box[2] and box[3]}
# Candidates of the tiny page: the visible elements but the presentational one (and the hidden input has no box).
CANDIDATES = VISIBLE - {"deco"}
OPS, ORIGINAL_OPS = {"CLICK", "TYPE", "SELECT"}, {"CLICK", "TYPE", "SELECT", "HOVER", "ENTER"}
RECORD_KEYS = ["annotation_id", "website", "domain", "subdomain", "confirmed_task", "action_reprs", "actions"]
ACTION_KEYS = ["action_uid", "operation", "raw_html", "cleaned_html", "pos_candidates", "neg_candidates"]
POS_KEYS = ["tag", "backend_node_id", "is_original_target", "is_top_level_target", "attributes"]
NEG_KEYS = ["tag", "backend_node_id", "attributes"]
RECT = re.compile(r"-?\d+(\.\d+)?(,-?\d+(\.\d+)?){3}")
REPR = re.compile(r"\[[^\]]+\]  .* -> (CLICK|TYPE|SELECT|HOVER|ENTER)(: .*)?", re.DOTALL)
SYNTHETIC = {"backend_node_id", "bounding_box_rect"}
TARGET = "data_pw_testid_buckeye"


def box(x, y, w, h) -> dict:
    return {"x": x, "y": y, "width": w, "height": h, "top": y, "right": x + w, "bottom": y + h, "left": x}


def bboxes_json(scroll=0) -> bytes:
    """The bboxes file at a vertical scroll offset: every element moves up, as client rectangles do."""
    return json.dumps({uid: box(x, y - scroll, w, h) for uid, (x, y, w, h) in BOXES.items()}).encode()


class FakeBlobs:
    """Blob bytes held in memory, by sha256."""

    def __init__(self, *contents: bytes):
        self.data = {}
        for content in contents:
            self.add(content)

    def add(self, content: bytes) -> str:
        sha = hashlib.sha256(content).hexdigest()
        self.data[sha] = content
        return sha

    def read(self, sha256: str) -> bytes:
        return self.data[sha256]

    def copy_to(self, sha256, destination) -> None:
        destination.parent.mkdir(parents=True, exist_ok=True)  # as a BlobSource does
        destination.write_bytes(self.data[sha256])


@pytest.fixture
def blobs():
    return FakeBlobs()


@pytest.fixture
def out(tmp_path):
    return tmp_path / "out"


def element(uid: str, scroll=0) -> dict:
    x, y, w, h = BOXES[uid]
    return {
        "attributes": {"data-webtasks-id": uid},
        "bbox": box(x, y - scroll, w, h),
        "tagName": TAGS.get(uid, "SPAN"),
        "textContent": "",
        "innerHTML": "",
        "outerHTML": f'<{TAGS.get(uid, "SPAN").lower()} data-webtasks-id="{uid}">',
        "xpath": "/html/body",
    }


def browser(blobs: FakeBlobs, intent: str, uid: str | None = None, scroll=0, page=True, **arguments) -> dict:
    """A browser turn on the tiny page (``uid`` the acted element); ``page=False`` captures nothing."""
    arguments = {"metadata": {"url": "https://www.shoes.example/", "tabId": 1}, **arguments}
    if uid is not None:
        arguments["element"] = element(uid, scroll)
    turn = {"type": "browser", "timestamp": 1.0, "intent": intent, "arguments": arguments}
    if page:
        turn.update(page=blobs.add(PAGE_HTML.encode()), bboxes=blobs.add(bboxes_json(scroll)))
    return turn


def chat(speaker="instructor", utterance="Find red shoes in size M, please.") -> dict:
    return {"type": "chat", "timestamp": 0.5, "speaker": speaker, "utterance": utterance}


def make_demo(*turns: dict, name="shoeshop", split="train", **changes) -> ExportDemo:
    fields = {
        "name": name,
        "project": "alpha",
        "split": split,
        "status": "validated",
        "mode": "task",
        "task_description": "Find red shoes in size M",
        "websites": ("www.shoes.example", "pay.example"),
        "category": "Shopping",
        "subcategory": "Shoes",
        "region": "Europe",
        "instructor_sees_screen": True,
        "navigator": "nina",
        "instructor": "",
        "recording_start": START,
        "recording_end": START + dt.timedelta(seconds=30),
        "timezone_offset_minutes": -60,
        "user_agent": "Mozilla/5.0",
        "recorder_version": "1.0.0",
        "upload_date": START,
        "turns": tuple(ExportTurn(index=index, **turn) for index, turn in enumerate(turns)),
    }
    return ExportDemo(**{**fields, **changes})


def export(out, blobs, *demos) -> dict:
    """``{split: records}`` after exporting ``demos``."""
    Mind2WebExporter().export(list(demos), out, blobs)
    return {split: json.loads((out / f"{split}.json").read_text()) for split in MIND2WEB_SPLITS}


def only_record(out, blobs, *turns, **changes) -> dict:
    return export(out, blobs, make_demo(*turns, **changes))["train"][0]


def only_action(out, blobs, turn) -> dict:
    return only_record(out, blobs, turn)["actions"][0]


# --- Schema and invariants, shared by the hand-built and the corpus tests ----------------------------------


def check_candidate(candidate: dict, keys: list) -> dict:
    assert list(candidate) == keys
    assert isinstance(candidate["tag"], str)
    assert candidate["tag"]
    assert isinstance(candidate["backend_node_id"], str)
    assert candidate["backend_node_id"].isdigit()
    assert isinstance(candidate["attributes"], str)
    attributes = json.loads(candidate["attributes"])
    assert isinstance(attributes, dict)
    assert all(re.fullmatch(r"\w+", key) for key in attributes)
    assert all(isinstance(value, str) for value in attributes.values())
    assert attributes["backend_node_id"] == candidate["backend_node_id"]
    assert RECT.fullmatch(attributes["bounding_box_rect"])
    assert TARGET not in attributes, "the target mark would give the answer away"
    return attributes


def check_action(action: dict, line: str) -> None:
    assert list(action) == ACTION_KEYS
    uuid.UUID(action["action_uid"])
    operation = action["operation"]
    assert list(operation) == ["op", "original_op", "value"]
    assert operation["op"] in OPS
    assert operation["original_op"] in ORIGINAL_OPS
    assert all(isinstance(value, str) for value in operation.values())
    if operation["original_op"] in ("HOVER", "ENTER"):
        assert operation["op"] == "CLICK"
    else:
        assert operation["op"] == operation["original_op"]
    if operation["op"] == "CLICK":
        assert operation["value"] == ""
    assert isinstance(action["raw_html"], str)
    assert isinstance(action["cleaned_html"], str)
    assert REPR.fullmatch(line)
    assert line.endswith(f"-> {operation['original_op']}" + (f": {operation['value']}" * (operation["op"] != "CLICK")))
    for candidate in action["pos_candidates"]:
        check_candidate(candidate, POS_KEYS)
        assert isinstance(candidate["is_original_target"], bool)
        assert isinstance(candidate["is_top_level_target"], bool)
    for candidate in action["neg_candidates"]:
        check_candidate(candidate, NEG_KEYS)
    assert sum(c["is_original_target"] for c in action["pos_candidates"]) == 1
    assert sum(c["is_top_level_target"] for c in action["pos_candidates"]) == 1


def check_record(record: dict) -> None:
    """Every key and type of a Mind2Web task record (``/work/shared/specs/mind2web-format.md``)."""
    assert list(record) == RECORD_KEYS
    uuid.UUID(record["annotation_id"])
    for key in ("website", "domain", "subdomain", "confirmed_task"):
        assert isinstance(record[key], str)
    assert isinstance(record["action_reprs"], list)
    assert isinstance(record["actions"], list)
    assert len(record["action_reprs"]) == len(record["actions"])
    for action, line in zip(record["actions"], record["action_reprs"], strict=True):
        check_action(action, line)
        check_html(action)


def elements(html: str) -> list:
    return list(etree.fromstring(html).iter(etree.Element))


def check_html(action: dict) -> None:
    """raw_html: every element numbered and boxed, salient attributes only, the target marked once, and the
    marked element the original positive; cleaned_html: exactly the candidates."""
    raw = elements(action["raw_html"])
    assert not {"script", "style", "meta"} & {el.tag for el in raw}
    assert "<!--" not in action["raw_html"]
    for el in raw:
        assert RECT.fullmatch(el.get("bounding_box_rect"))
        assert el.get("backend_node_id").isdigit()
        assert set(el.keys()) <= SALIENT_ATTRIBUTES | SYNTHETIC | {TARGET}
    assert len({el.get("backend_node_id") for el in raw}) == len(raw)
    marked = [el for el in raw if el.get(TARGET) is not None]
    assert len(marked) == 1
    assert marked[0].get(TARGET) == action["action_uid"]
    original = [c for c in action["pos_candidates"] if c["is_original_target"]][0]
    assert original["backend_node_id"] == marked[0].get("backend_node_id")
    candidates = {c["backend_node_id"] for c in action["pos_candidates"] + action["neg_candidates"]}
    assert len(candidates) == len(action["pos_candidates"]) + len(action["neg_candidates"])
    cleaned = elements(action["cleaned_html"])
    assert [el.get("backend_node_id") for el in cleaned] == sorted(candidates, key=int)
    for el in cleaned:
        assert set(el.keys()) <= SALIENT_ATTRIBUTES | {"backend_node_id"}


def rect_of(action: dict, backend_node_id: str) -> str:
    [el] = [el for el in elements(action["raw_html"]) if el.get("backend_node_id") == backend_node_id]
    return el.get("bounding_box_rect")


def uid_ids(action: dict) -> dict:
    """backend_node_id → data-webtasks-id on the tiny page: raw_html keeps its elements in document order."""
    return {el.get("backend_node_id"): uid for el, uid in zip(elements(action["raw_html"]), PAGE_UIDS, strict=True)}


def candidate_uids(action: dict, key: str) -> set:
    ids = uid_ids(action)
    return {ids[c["backend_node_id"]] for c in action[key]}


# --- Files and records --------------------------------------------------------------------------------------


def test_every_split_file_is_written_even_when_there_is_nothing_to_export(out, blobs):
    counts = Mind2WebExporter().export([], out, blobs)
    assert sorted(path.name for path in out.iterdir()) == sorted(f"{split}.json" for split in MIND2WEB_SPLITS)
    assert all(json.loads((out / f"{split}.json").read_text()) == [] for split in MIND2WEB_SPLITS)
    assert (counts.demos, counts.turns, counts.files) == (0, 0, 4)


SPLIT_DEMOS = [("alpha", "train"), ("bravo", "test_domain"), ("charlie", "train"), ("delta", "test_task")]


def test_each_demo_is_one_record_in_the_file_of_its_split(out, blobs):
    demos = [make_demo(browser(blobs, "click", "go"), name=name, split=split) for name, split in SPLIT_DEMOS]
    done = []
    counts = Mind2WebExporter().export(demos, out, blobs, progress=done.append)
    records = {split: json.loads((out / f"{split}.json").read_text()) for split in MIND2WEB_SPLITS}
    ids = {split: [r["annotation_id"] for r in rows] for split, rows in records.items()}
    expected = {split: [] for split in MIND2WEB_SPLITS}
    for name, split in SPLIT_DEMOS:
        expected[split].append(str(uuid.uuid5(NAMESPACE, name)))
    assert ids == expected
    assert done == [1, 2, 3, 4]
    assert counts.as_dict() == {
        "demos": 4,
        "turns": 4,
        "files": 4,
        "per_split": {
            "train": {"demos": 2, "turns": 2},
            "test_domain": {"demos": 1, "turns": 1},
            "test_task": {
                "demos": 1,
                "turns": 1,
            },
        },
    }


def test_a_demo_outside_the_mind2web_splits_is_refused(out, blobs):
    with pytest.raises(ValueError, match="test_iid"):
        Mind2WebExporter().export([make_demo(split="test_iid")], out, blobs)


def test_the_record_describes_the_task(out, blobs):
    record = only_record(out, blobs, browser(blobs, "click", "go"))
    check_record(record)
    assert record["website"] == "shoes"
    assert (record["domain"], record["subdomain"]) == ("Shopping", "Shoes")
    assert record["confirmed_task"] == "Find red shoes in size M"


def test_a_chat_demo_without_a_description_is_about_the_first_instruction(out, blobs):
    turns = (chat("navigator", "Hello!"), chat(), browser(blobs, "click", "go"))
    record = only_record(out, blobs, *turns, mode="chat", task_description="", websites=())
    assert record["confirmed_task"] == "Find red shoes in size M, please."
    assert record["website"] == "shoes", "without listed websites the first page's address names it"


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("www.booking.com", "booking"),
        ("en.wikipedia.org", "wikipedia"),
        ("mail.google.com", "google"),
        ("www.rakuten.co.jp", "rakuten"),
        ("www.abc.net.au", "abc"),
        ("https://www.zalando.de/herren", "zalando"),
        ("localhost", "localhost"),
        ("", ""),
    ],
)
def test_the_website_is_the_registrable_name_of_the_domain(address, name):
    assert website_name(address) == name


def test_ids_are_stable_across_exports(tmp_path, blobs):
    demo = make_demo(browser(blobs, "click", "go"), browser(blobs, "textInput", "query", text="red"))
    first = export(tmp_path / "one", blobs, demo)["train"][0]
    second = export(tmp_path / "two", blobs, demo)["train"][0]
    assert first == second
    assert len({action["action_uid"] for action in first["actions"]}) == 2
    assert (
        first["annotation_id"]
        != export(tmp_path / "three", blobs, make_demo(name="other"))["train"][0]["annotation_id"]
    )


def test_the_registry_knows_the_format():
    exporter = get_exporter("mind2web")
    assert isinstance(exporter, Mind2WebExporter)
    assert (exporter.format, exporter.splits) == ("mind2web", MIND2WEB_SPLITS)


# --- Steps and operations -----------------------------------------------------------------------------------


def test_only_actions_on_elements_are_steps(out, blobs):
    """Chat, load, scroll, tab and clipboard turns are not steps; the click among them is."""
    turns = (
        chat(),
        browser(blobs, "load", properties={"url": "https://www.shoes.example/", "tabId": 1}),
        browser(blobs, "scroll", scrollX=0, scrollY=300),
        browser(blobs, "copy", "note", selected="Free"),
        browser(blobs, "paste", "query", pasted="Free"),
        browser(blobs, "tabcreate", page=False, properties={"tabId": 2}),
        browser(blobs, "tabswitch", page=False, properties={"tabId": 1, "tabIdOrigin": 2}),
        browser(blobs, "tabremove", page=False, properties={"tabId": 2}),
        chat("navigator", "Done."),
        browser(blobs, "click", "go"),
    )
    record = only_record(out, blobs, *turns, mode="chat")
    check_record(record)
    assert [a["operation"] for a in record["actions"]] == [{"op": "CLICK", "original_op": "CLICK", "value": ""}]
    assert record["actions"][0]["action_uid"] == str(uuid.uuid5(NAMESPACE, "shoeshop/9"))


@pytest.mark.parametrize(
    ("intent", "uid", "arguments", "operation", "line"),
    [
        ("click", "go", {}, ("CLICK", "CLICK", ""), "[button]  Go -> CLICK"),
        ("hover", "name", {}, ("CLICK", "HOVER", ""), "[span]  Red shoe -> HOVER"),
        ("submit", "form", {}, ("CLICK", "ENTER", ""), "[search]  Small Medium Go -> ENTER"),
        (
            "textInput",
            "query",
            {"text": "red shoes"},
            ("TYPE", "TYPE", "red shoes"),
            "[input]  Search -> TYPE: red shoes",
        ),
        ("change", "size", {"value": "m"}, ("SELECT", "SELECT", "Medium"), "[select]  size -> SELECT: Medium"),
        ("change", "size", {"value": "Small"}, ("SELECT", "SELECT", "Small"), "[select]  size -> SELECT: Small"),
        ("change", "size", {"value": "xl"}, ("SELECT", "SELECT", "xl"), "[select]  size -> SELECT: xl"),
        ("change", "stock", {"value": "on"}, ("CLICK", "CLICK", ""), "[input]  stock -> CLICK"),
        ("change", "volume", {"value": "70"}, ("TYPE", "TYPE", "70"), "[input]  volume -> TYPE: 70"),
    ],
)
def test_intents_map_to_mind2web_operations(out, blobs, intent, uid, arguments, operation, line):
    record = only_record(out, blobs, browser(blobs, intent, uid, **arguments))
    check_record(record)
    assert record["actions"][0]["operation"] == dict(zip(("op", "original_op", "value"), operation, strict=True))
    assert record["action_reprs"] == [line]


def test_a_change_that_commits_typed_text_is_not_a_second_step(out, blobs):
    turns = (
        browser(blobs, "textInput", "volume", text="70"),
        browser(blobs, "change", "volume", value="70"),
        browser(blobs, "change", "volume", value="80"),
    )
    record = only_record(out, blobs, *turns)
    assert [a["operation"]["value"] for a in record["actions"]] == ["70", "80"]


# --- raw_html -----------------------------------------------------------------------------------------------


def test_raw_html_is_the_page_with_ids_boxes_and_salient_attributes(out, blobs):
    action = only_action(out, blobs, browser(blobs, "textInput", "query", text="red"))
    check_html(action)
    raw = elements(action["raw_html"])
    assert [el.tag for el in raw[:4]] == ["html", "head", "title", "body"]
    assert "secret" not in action["raw_html"]
    assert "color: red" not in action["raw_html"]
    assert len(raw) == len(BOXES) - 3  # script, style and meta are gone
    [query] = [el for el in raw if el.get(TARGET)]
    assert dict(query.attrib) == {
        "backend_node_id": query.get("backend_node_id"),
        "bounding_box_rect": "10,10,200,40",
        "type": "search",
        "name": "q",
        "placeholder": "Search shoes",
        "aria_label": "Search",  # renamed; onclick is not salient
        TARGET: action["action_uid"],
    }
    [stock] = [el for el in raw if el.get("name") == "stock"]
    assert stock.get("input_checked") == "true"
    assert not [el for el in raw if el.get("bounding_box_rect") == "-1,-1,-1,-1"]


def test_raw_html_reads_as_html_too(out, blobs):
    """Empty elements keep their end tag (``<i></i>``, not ``<i/>``), so HTML parsers nest what follows right."""
    action = only_action(out, blobs, browser(blobs, "click", "go"))
    assert '<i backend_node_id="' in action["raw_html"]
    assert 'class="icon"></i>' in action["raw_html"]

    def shape(root):
        return [(el.tag, el.getparent().tag if el.getparent() is not None else None) for el in root.iter(etree.Element)]

    assert shape(lxml.html.document_fromstring(action["raw_html"])) == shape(etree.fromstring(action["raw_html"]))


def test_boxes_are_in_page_coordinates_when_the_page_was_scrolled(out, blobs):
    action = only_action(out, blobs, browser(blobs, "click", "price", scroll=80))
    [original] = [c for c in action["pos_candidates"] if c["is_original_target"]]
    assert rect_of(action, original["backend_node_id"]) == "200,110,50,20"
    assert json.loads(original["attributes"])["bounding_box_rect"] == "200,110,50,20"


# --- Candidates ---------------------------------------------------------------------------------------------


def positives(action) -> dict:
    """uid → (is_original_target, is_top_level_target) of the positives."""
    ids = uid_ids(action)
    return {
        ids[c["backend_node_id"]]: (c["is_original_target"], c["is_top_level_target"]) for c in action["pos_candidates"]
    }


def test_a_clickable_target_is_its_own_top_level_target_with_what_lies_inside_it(out, blobs):
    action = only_action(out, blobs, browser(blobs, "click", "go"))
    assert positives(action) == {"go": (True, True), "icon": (False, False), "go-label": (False, False)}


def test_a_target_that_is_not_clickable_climbs_to_its_clickable_ancestor(out, blobs):
    """The span inside a list item: the item is the top-level target; its other span is not under the click."""
    action = only_action(out, blobs, browser(blobs, "click", "name"))
    assert positives(action) == {"item": (False, True), "name": (True, False)}


def test_a_target_with_no_clickable_ancestor_stands_alone(out, blobs):
    action = only_action(out, blobs, browser(blobs, "submit", "form"))
    assert positives(action)["form"] == (True, True)
    assert set(positives(action)) == {"form", "query", "size", "stock", "volume", "go", "icon", "go-label"}


def test_negatives_are_every_other_visible_element(out, blobs):
    action = only_action(out, blobs, browser(blobs, "click", "go"))
    assert candidate_uids(action, "neg_candidates") == CANDIDATES - {"go", "icon", "go-label"}
    tags = {c["tag"] for c in action["neg_candidates"]}
    assert "option" not in tags
    assert "title" not in tags


def test_cleaned_html_holds_the_candidates_and_their_text(out, blobs):
    action = only_action(out, blobs, browser(blobs, "change", "size", value="m"))
    check_html(action)
    cleaned = etree.fromstring(action["cleaned_html"])
    assert cleaned.tag == "html"
    text = " ".join(" ".join(cleaned.itertext()).split())
    assert "Free delivery" in text, "the presentational wrapper is unwrapped, its content kept"
    assert "Hidden text" not in text, "what renders nothing goes"
    assert "Shoes" not in text, "the title is not rendered either"
    [select] = cleaned.iter("select")
    assert " ".join(select.itertext()).split() == ["Small", "Medium"]
    assert "bounding_box_rect" not in action["cleaned_html"]
    assert TARGET not in action["cleaned_html"]


# --- Steps without a page or boxes --------------------------------------------------------------------------


def test_a_step_without_a_page_is_exported_on_its_element_alone(out, blobs):
    action = only_action(out, blobs, browser(blobs, "click", "go", page=False))
    check_html(action)
    [positive] = action["pos_candidates"]
    assert (positive["tag"], positive["is_original_target"], positive["is_top_level_target"]) == ("button", True, True)
    assert json.loads(positive["attributes"])["bounding_box_rect"] == "440,10,80,40"
    assert action["neg_candidates"][0]["tag"] == "html"


def test_a_step_on_a_page_without_boxes_keeps_the_turns_own_box(out, blobs):
    turn = browser(blobs, "click", "go")
    turn["bboxes"] = None
    action = only_action(out, blobs, turn)
    check_html(action)
    assert [json.loads(c["attributes"])["bounding_box_rect"] for c in action["pos_candidates"]] == ["440,10,80,40"]
    assert [c["tag"] for c in action["neg_candidates"]] == ["html"]


def test_a_step_with_neither_page_nor_element_html_is_skipped(out, blobs):
    turn = browser(blobs, "click", "go", page=False)
    turn["arguments"]["element"]["outerHTML"] = ""
    assert only_record(out, blobs, turn, browser(blobs, "click", "go"))["action_reprs"] == ["[button]  Go -> CLICK"]


def test_a_stale_page_without_the_element_falls_back_to_the_element(out, blobs):
    turn = browser(blobs, "click", "go")
    turn["arguments"]["element"]["attributes"]["data-webtasks-id"] = "not-on-the-page"
    action = only_action(out, blobs, turn)
    check_html(action)
    assert [c["tag"] for c in action["pos_candidates"]] == ["button"]


def test_pages_that_are_not_well_formed_still_give_well_formed_html(out, blobs):
    """A form feed (not XML), a prefixed tag of pasted Word HTML and unclosed tags: the output parses as XML."""
    page = b'<p data-webtasks-id="p">a\x0cb <o:p data-webtasks-id="w">word</o:p> <b data-webtasks-id="x">bold'
    boxes = {"p": box(0, 0, 50, 10), "w": box(0, 0, 20, 10), "x": box(20, 0, 9, 9)}
    turn = {
        "type": "browser",
        "timestamp": 1.0,
        "intent": "click",
        "arguments": {"metadata": {}, "element": {"attributes": {"data-webtasks-id": "x"}, "bbox": boxes["x"]}},
        "page": blobs.add(page),
        "bboxes": blobs.add(json.dumps(boxes).encode()),
    }
    action = only_action(out, blobs, turn)
    check_html(action)
    assert [el.tag for el in elements(action["raw_html"])] == ["html", "body", "p", "o_p", "b"]


# --- The synthetic corpus through the real ingest path ------------------------------------------------------


@pytest.fixture
def corpus(db):
    return ingest_corpus(project="corpus", demos=3, turns=24, elements=60, status=DemoStatus.VALIDATED)


def step_turns(demo) -> dict:
    """action_uid → turn, for the turns of a stored demo that can be steps."""
    return {
        str(uuid.uuid5(NAMESPACE, f"{export.name}/{turn.key or turn.index}")): turn
        for export in [demo]
        for turn in export.turns
        if turn.type == "browser" and turn.intent in ("click", "hover", "submit", "textInput", "change")
    }


def page_origin(turn, blobs) -> tuple:
    """The client position of the page's root element: minus the scroll offset."""
    root = etree.fromstring(blobs.read(turn.page), etree.HTMLParser())
    root_box = json.loads(blobs.read(turn.bboxes))[root.get("data-webtasks-id")]
    return root_box["x"], root_box["y"]


def test_the_corpus_exports_valid_records_with_every_operation(corpus, tmp_path):
    project, blobs = corpus[0].project, storage_blobs()
    demos = list(export_demos(project, "mind2web"))
    counts = Mind2WebExporter().export(demos, tmp_path, blobs)
    records = {
        record["annotation_id"]: record
        for split in MIND2WEB_SPLITS
        for record in json.loads((tmp_path / f"{split}.json").read_text())
    }
    assert counts.demos == len(records) == 3
    original_ops = set()
    for demo in demos:
        record = records[str(uuid.uuid5(NAMESPACE, demo.name))]
        assert record in json.loads((tmp_path / f"{demo.split}.json").read_text())
        check_record(record)
        turns = step_turns(demo)
        assert len(record["actions"]) == len(turns)  # the corpus changes no text fields: no repeats to drop
        for action in record["actions"]:
            turn = turns[action["action_uid"]]
            operation = action["operation"]
            original_ops.add(operation["original_op"])
            check_turn(turn, action, blobs)
    assert original_ops == ORIGINAL_OPS


def check_turn(turn, action, blobs) -> None:
    """The step agrees with its turn: operation, and the acted element's box from the turn's bboxes."""
    operation, element = action["operation"], turn.arguments["element"]
    expected = {"click": "CLICK", "hover": "HOVER", "submit": "ENTER", "textInput": "TYPE"}.get(turn.intent)
    if turn.intent == "change":
        expected = "SELECT" if element["tagName"] == "SELECT" else "CLICK"
    assert operation["original_op"] == expected
    if expected == "TYPE":
        assert operation["value"] == turn.arguments["text"]
    if expected == "SELECT":  # the option's text, not its value
        assert operation["value"] == operation["value"].capitalize() != turn.arguments["value"]
        assert f">{operation['value']}<" in element["outerHTML"]
    [original] = [c for c in action["pos_candidates"] if c["is_original_target"]]
    x, y = page_origin(turn, blobs)
    bbox = json.loads(blobs.read(turn.bboxes))[turn.element_uid]
    assert bbox == element["bbox"]
    expected_rect = f"{bbox['x'] - x},{bbox['y'] - y},{bbox['width']},{bbox['height']}"
    assert json.loads(original["attributes"])["bounding_box_rect"] == expected_rect
    assert rect_of(action, original["backend_node_id"]) == expected_rect


def test_the_corpus_exports_the_same_bytes_twice(corpus, tmp_path):
    project, blobs = corpus[0].project, storage_blobs()
    for folder in ("one", "two"):
        Mind2WebExporter().export(export_demos(project, "mind2web"), tmp_path / folder, blobs)
    for split in MIND2WEB_SPLITS:
        assert (tmp_path / "one" / f"{split}.json").read_bytes() == (tmp_path / "two" / f"{split}.json").read_bytes()


def test_only_demos_of_the_chosen_statuses_are_exported(corpus, tmp_path):
    corpus[0].status = DemoStatus.REJECTED
    corpus[0].save(update_fields=["status"])
    demos = list(export_demos(corpus[0].project, "mind2web"))
    assert Mind2WebExporter().export(demos, tmp_path, storage_blobs()).demos == 2


def test_rejected_demos_are_left_out_because_mind2web_cannot_mark_them(out, blobs):
    kept = make_demo(browser(blobs, "click", "go"), name="kept")
    rejected = make_demo(browser(blobs, "click", "go"), name="dropped", status="rejected", rejected=True)

    records = export(out, blobs, kept, rejected)["train"]

    assert [record["annotation_id"] for record in records] == [str(uuid.uuid5(NAMESPACE, "kept"))]


def test_action_ids_follow_the_turns_key_so_curation_cannot_change_them(tmp_path, blobs):
    click, typing = browser(blobs, "click", "go"), browser(blobs, "textInput", "query", text="red")
    both = make_demo({**click, "key": "c-1"}, {**typing, "key": "c-2"})
    typing_only = make_demo({**typing, "key": "c-2"})  # the click was deleted in review: indexes shift

    before = export(tmp_path / "before", blobs, both)["train"][0]["actions"]
    after = export(tmp_path / "after", blobs, typing_only)["train"][0]["actions"]

    assert after[0]["action_uid"] == before[1]["action_uid"]


def test_a_step_with_a_raw_snapshot_writes_it_where_the_raw_dump_keeps_it(out, blobs):
    """Step mode's MHTML of the page before the action (``arguments.properties.mhtml``) is exported as
    ``task/<annotation_id>/processed/snapshots/<action_uid>_before.mhtml``; a step without one writes nothing."""
    mhtml = b"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=x\r\n\r\n--x--\r\n"
    turns = (
        browser(blobs, "click", "go", properties={"mhtml": blobs.add(mhtml)}),
        browser(blobs, "textInput", "query", text="red shoes"),
    )
    record = only_record(out, blobs, *turns)
    first, second = (action["action_uid"] for action in record["actions"])
    folder = out / "task" / record["annotation_id"] / "processed" / "snapshots"
    assert (folder / f"{first}_before.mhtml").read_bytes() == mhtml
    assert sorted(path.name for path in folder.iterdir()) == [f"{first}_before.mhtml"]
    assert not (folder / f"{second}_before.mhtml").exists()
