"""The synthetic corpus: valid for ingest, every intent, the uid join, real screenshots, determinism, variety."""

import hashlib
import io
import json
from html.parser import HTMLParser

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from annotation import actions, synth
from annotation.lib import schema
from annotation.models import Blob, Demonstration, DemoStatus, Membership, Role, Turn
from workers.management.commands.synth_demos import INSTRUCTOR, NAVIGATOR, ingest_demo

ELEMENTS = 60


@pytest.fixture(scope="module")
def corpus():
    return list(synth.generate_corpus(demos=4, turns=24, elements=ELEMENTS, seed=3))


def blob_map(spec) -> dict:
    return {hashlib.sha256(data).hexdigest(): data for data, _ in spec.blobs}


def browser_turns(spec):
    return [turn for turn in spec.turns if turn["type"] == "browser"]


class UidCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.uids, self.elements = [], 0

    def handle_starttag(self, tag, attrs):
        self.elements += 1
        self.uids += [value for name, value in attrs if name == schema.UID_ATTRIBUTE]


def page_uids(html: bytes) -> UidCollector:
    collector = UidCollector()
    collector.feed(html.decode())
    return collector


def test_corpus_passes_the_ingest_validation(corpus, alpha):
    for spec in corpus:
        for data, media_type in spec.blobs:
            actions.do_store_blob_bytes(data, media_type, alpha)
        assert actions.check_turn_batch(spec.turns, alpha) == spec.turns


def test_every_intent_appears_in_each_demo_of_20_turns_or_more(corpus):
    for spec in corpus:
        assert {turn["intent"] for turn in browser_turns(spec)} == set(schema.INTENTS)


def test_short_demos_still_cover_every_intent_over_the_corpus():
    specs = synth.generate_corpus(demos=8, turns=10, elements=ELEMENTS, seed=5)
    assert {turn["intent"] for spec in specs for turn in browser_turns(spec)} == set(schema.INTENTS)


def test_both_speakers_chat_with_words(corpus):
    chats = [turn for spec in corpus for turn in spec.turns if turn["type"] == "chat"]
    assert {turn["speaker"] for turn in chats} == {"instructor", "navigator"}
    assert all(len(turn["utterance"].split()) >= 1 for turn in chats)
    assert all(spec.turns[0]["speaker"] == "instructor" for spec in corpus)


def test_timestamps_increase_from_zero(corpus):
    for spec in corpus:
        stamps = [turn["timestamp"] for turn in spec.turns]
        assert stamps[0] == 0.0
        assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))


def test_every_page_element_has_a_unique_uid_and_a_box(corpus):
    spec = corpus[0]
    blobs = blob_map(spec)
    for turn in browser_turns(spec):
        if "page" not in turn:
            continue
        found = page_uids(blobs[turn["page"]])
        assert found.elements == len(found.uids) == len(set(found.uids)) == ELEMENTS
        boxes = json.loads(blobs[turn["bboxes"]])
        assert set(boxes) == set(found.uids)
        assert all(set(box) == set(schema.BBOX_KEYS) for box in boxes.values())


def test_acted_elements_join_page_and_bboxes_by_uid(corpus):
    for spec in corpus:
        blobs = blob_map(spec)
        for turn in browser_turns(spec):
            element = turn["arguments"].get("element")
            if element is None:
                continue
            uid = element["attributes"][schema.UID_ATTRIBUTE]
            assert element["bbox"] == json.loads(blobs[turn["bboxes"]])[uid]
            assert f'data-webtasks-id="{uid}"' in blobs[turn["page"]].decode()
            assert f'data-webtasks-id="{uid}"' in element["outerHTML"]


def test_intents_carry_their_weblinx_arguments(corpus):
    by_intent = {turn["intent"]: turn["arguments"] for spec in corpus for turn in browser_turns(spec)}
    assert isinstance(by_intent["textInput"]["text"], str)
    assert isinstance(by_intent["change"]["value"], str)
    assert {"scrollX", "scrollY"} <= set(by_intent["scroll"])
    assert by_intent["copy"]["selected"]
    assert by_intent["paste"]["pasted"]
    assert {"url", "transitionType", "transitionQualifiers", "tabId"} <= set(by_intent["load"]["properties"])
    assert by_intent["tabswitch"]["properties"]["tabIdOrigin"] != by_intent["tabswitch"]["properties"]["tabId"]
    assert by_intent["submit"]["element"]["tagName"] == "FORM"
    metadata = by_intent["click"]["metadata"]
    assert (metadata["viewportWidth"], metadata["viewportHeight"], metadata["zoomLevel"]) == (1280, 720, 1.0)


def test_screenshots_are_1280_by_720_pngs(corpus):
    spec = corpus[0]
    blobs = blob_map(spec)
    shots = {turn["screenshot"] for turn in browser_turns(spec) if "screenshot" in turn}
    for sha in list(shots)[:5]:
        with Image.open(io.BytesIO(blobs[sha])) as image:
            assert (image.format, image.size) == ("PNG", (1280, 720))
            image.load()


def test_consecutive_pages_differ_but_keep_their_uids(corpus):
    spec = corpus[0]
    blobs = blob_map(spec)
    captured = [turn for turn in browser_turns(spec) if "page" in turn]
    pairs = [
        (a, b)
        for a, b in zip(captured, captured[1:], strict=False)
        if a["arguments"]["metadata"]["url"] == b["arguments"]["metadata"]["url"]
    ]
    assert pairs
    for a, b in pairs:
        assert a["page"] != b["page"]
        assert a["screenshot"] != b["screenshot"]
        assert page_uids(blobs[a["page"]]).uids == page_uids(blobs[b["page"]]).uids


def test_same_seed_gives_the_same_corpus_and_another_seed_another():
    def fingerprint(seed):
        digest = hashlib.sha256()
        for spec in synth.generate_corpus(demos=2, turns=12, elements=30, seed=seed):
            digest.update(json.dumps([spec.client_id, spec.start_body("p"), spec.turns]).encode())
            for data, media_type in spec.blobs:
                digest.update(media_type.encode() + data)
        return digest.hexdigest()

    assert fingerprint(11) == fingerprint(11)
    assert fingerprint(11) != fingerprint(12)


def test_demos_vary_in_website_category_region_and_screen_sharing():
    specs = list(synth.generate_corpus(demos=6, turns=3, elements=20, seed=1))
    fields = [spec.fields for spec in specs]
    assert len({f["websites"][0] for f in fields}) == 6
    assert len({f["category"] for f in fields}) >= 2
    assert len({f["subcategory"] for f in fields}) >= 3
    assert len({f["region"] for f in fields}) >= 2
    assert {f["instructor_sees_screen"] for f in fields} == {True, False}
    assert {f["mode"] for f in fields} == {"chat"}
    assert len({spec.client_id for spec in specs}) == 6


def test_too_few_elements_is_refused():
    with pytest.raises(ValueError, match="at least"):
        synth.generate_demo(0, 0, 10, synth.MIN_ELEMENTS - 1)


def test_command_creates_demos_through_ingest(db, capsys):
    specs = list(synth.generate_corpus(demos=2, turns=21, elements=40, seed=9))
    call_command("synth_demos", demos=2, turns=21, elements=40, seed=9, project="sample")
    demos = Demonstration.objects.filter(project__name="sample")
    assert demos.count() == 2
    assert set(demos.values_list("status", flat=True)) == {DemoStatus.RECORDED}
    assert set(demos.values_list("instructor__username", flat=True)) == {INSTRUCTOR}
    assert Turn.objects.filter(demonstration__in=demos).count() == 42
    assert Blob.objects.count() == len({hashlib.sha256(d).hexdigest() for s in specs for d, _ in s.blobs})
    roles = Membership.objects.filter(project__name="sample").values_list("user__username", "role")
    assert set(roles) == {(NAVIGATOR, Role.ANNOTATOR), (INSTRUCTOR, Role.ANNOTATOR)}
    out = capsys.readouterr().out
    assert out.count(" 21 turns (") == 2
    assert "Total: 2 demos, 42 turns" in out
    assert all(name in out for name in demos.values_list("name", flat=True))


def test_command_run_twice_with_a_seed_stores_nothing_new(db):
    for _ in range(2):
        call_command("synth_demos", demos=1, turns=6, elements=20, seed=2, project="sample")
    assert Demonstration.objects.count() == 1
    assert Turn.objects.count() == 6


def test_command_refuses_too_small_pages(db):
    with pytest.raises(CommandError, match="elements"):
        call_command("synth_demos", demos=1, turns=5, elements=3)


def test_ingest_demo_uses_an_existing_project_and_member(owner, alpha):
    spec = synth.generate_demo(4, 0, 8, 30)
    demo, created, new_blobs = ingest_demo(spec, owner, alpha)
    assert created
    assert new_blobs == len(spec.blobs)
    assert (demo.project, demo.navigator, demo.status) == (alpha, owner, DemoStatus.RECORDED)
    assert list(demo.turns.order_by("seq").values_list("client_id", flat=True)) == [t["client_id"] for t in spec.turns]
