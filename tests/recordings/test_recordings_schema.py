"""Unit tests of ``annotation.lib.schema``: the WebLINX turn validation, without database or HTTP."""

import json
import math

import pytest

from annotation import synth
from annotation.lib import jsonsafe, schema
from annotation.lib.schema import INTENTS, FieldError, validate_turn
from tests.support.payloads import browser_turn, chat_turn, sha

SHA = sha(b"blob")


def fields(errors: list[FieldError]) -> list[str]:
    return [error.field for error in errors]


@pytest.mark.parametrize("intent", INTENTS)
def test_a_complete_turn_of_every_intent_is_valid(intent):
    assert validate_turn(browser_turn("t", intent, screenshot=SHA, page=SHA, bboxes=SHA)) == []


@pytest.mark.parametrize("speaker", schema.SPEAKERS)
def test_a_chat_turn_of_either_speaker_is_valid(speaker):
    assert validate_turn(chat_turn("c", speaker)) == []


def test_an_empty_utterance_is_valid():
    assert validate_turn(chat_turn("c", utterance="")) == []


def test_a_timestamp_of_zero_and_an_integer_timestamp_are_valid():
    assert validate_turn(chat_turn("c", timestamp=0)) == []
    assert validate_turn(browser_turn("b", timestamp=12)) == []


def test_errors_name_the_field_under_the_given_prefix():
    turn = browser_turn("t", "textInput")
    del turn["arguments"]["text"]

    assert validate_turn(turn, "turns[7]") == [FieldError("turns[7].arguments.text", "required; expected string")]


def test_the_default_prefix_is_turn():
    assert fields(validate_turn(chat_turn("c", speaker="bot"))) == ["turn.speaker"]


def test_an_unknown_intent_lists_every_allowed_intent():
    (error,) = validate_turn({**browser_turn("t"), "intent": "drag"})

    assert error.field == "turn.intent"
    assert error.message == "unknown intent 'drag'; allowed: " + ", ".join(INTENTS)


def test_an_intent_that_is_not_a_string_is_named_by_its_type():
    (error,) = validate_turn({**browser_turn("t"), "intent": 3})

    assert error.message.startswith("unknown intent number; allowed: click")


def test_the_intent_is_case_sensitive():
    assert fields(validate_turn({**browser_turn("t", "textInput"), "intent": "textinput"})) == ["turn.intent"]


@pytest.mark.parametrize("value", ["1", None, True, [], -1.5])
def test_a_timestamp_must_be_a_non_negative_number(value):
    errors = validate_turn(chat_turn("c", timestamp=value))

    assert fields(errors) == ["turn.timestamp"]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_timestamp_must_be_finite(value):
    (error,) = validate_turn(chat_turn("c", timestamp=value))

    assert "finite number" in error.message


def test_a_turn_that_is_not_an_object_is_one_error():
    assert validate_turn(["type", "chat"], "turns[0]") == [FieldError("turns[0]", "expected object, got array")]


def test_an_unknown_type_lists_the_allowed_types():
    assert validate_turn(chat_turn("c", type="system"))[-1] == FieldError("turn.type", "expected one of: chat, browser")


def test_unknown_top_level_fields_are_refused_one_by_one_and_sorted():
    errors = validate_turn(browser_turn("t", zeta=1, alpha=2))

    assert fields(errors) == ["turn.alpha", "turn.zeta"]
    assert errors[0].message == "unknown field; allowed: " + ", ".join(sorted(schema.BROWSER_FIELDS))


def test_a_chat_turn_may_not_carry_browser_fields():
    assert fields(validate_turn(chat_turn("c", screenshot=SHA, arguments={}))) == ["turn.arguments", "turn.screenshot"]


@pytest.mark.parametrize("client_id", ["", "x" * 65, None, 12])
def test_a_client_id_must_be_a_string_of_1_to_64_characters(client_id):
    assert fields(validate_turn(chat_turn(client_id))) == ["turn.client_id"]


def test_a_client_id_of_64_characters_is_valid():
    assert validate_turn(chat_turn("x" * 64)) == []


def test_metadata_is_required_on_every_browser_turn_even_tab_events():
    turn = browser_turn("t", "tabcreate")
    del turn["arguments"]["metadata"]

    assert validate_turn(turn) == [
        FieldError("turn.arguments.metadata", "required on every browser turn; expected object, got null")
    ]


def test_metadata_needs_only_url_and_tab_id():
    turn = browser_turn("t", "scroll")
    turn["arguments"]["metadata"] = {"url": "https://example.com/", "tabId": 3}

    assert validate_turn(turn) == []


@pytest.mark.parametrize("key", ["viewportWidth", "viewportHeight"])
def test_optional_viewport_sizes_must_be_integers_when_present(key):
    turn = browser_turn("t")
    turn["arguments"]["metadata"][key] = 1280.5

    assert validate_turn(turn) == [FieldError(f"turn.arguments.metadata.{key}", "expected integer, got number")]


def test_optional_mouse_position_must_be_a_number_when_present():
    turn = browser_turn("t")
    turn["arguments"]["metadata"]["mouseX"] = "250"

    assert fields(validate_turn(turn)) == ["turn.arguments.metadata.mouseX"]


@pytest.mark.parametrize(
    ("intent", "path"),
    [
        ("textInput", ("text",)),
        ("change", ("value",)),
        ("scroll", ("scrollX",)),
        ("scroll", ("scrollY",)),
        ("copy", ("selected",)),
        ("paste", ("pasted",)),
        ("load", ("properties", "url")),
        ("load", ("properties", "transitionType")),
        ("load", ("properties", "transitionQualifiers")),
        ("load", ("properties", "tabId")),
        ("tabcreate", ("properties", "tabId")),
        ("tabremove", ("properties", "tabId")),
        ("tabswitch", ("properties", "tabId")),
        ("tabswitch", ("properties", "tabIdOrigin")),
    ],
)
def test_each_intent_specific_argument_is_required(intent, path):
    turn = browser_turn("t", intent)
    parent = turn["arguments"]
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]

    (error,) = validate_turn(turn)

    assert error.field == "turn.arguments." + ".".join(path)
    assert error.message.startswith("required; expected ")


def test_text_input_uses_text_not_value():
    turn = browser_turn("t", "textInput")
    turn["arguments"]["value"] = turn["arguments"].pop("text")

    assert fields(validate_turn(turn)) == ["turn.arguments.text"]


def test_transition_qualifiers_must_all_be_strings():
    turn = browser_turn("t", "load")
    turn["arguments"]["properties"]["transitionQualifiers"] = ["from_address_bar", 1]

    assert validate_turn(turn) == [
        FieldError("turn.arguments.properties.transitionQualifiers", "expected list of strings, got array")
    ]


def test_an_empty_list_of_transition_qualifiers_is_valid():
    turn = browser_turn("t", "load")
    turn["arguments"]["properties"]["transitionQualifiers"] = []

    assert validate_turn(turn) == []


def test_a_tab_id_may_not_be_a_boolean():
    turn = browser_turn("t", "tabswitch")
    turn["arguments"]["properties"]["tabIdOrigin"] = False

    assert validate_turn(turn)[0].message == "expected integer, got boolean"


@pytest.mark.parametrize("intent", schema.ELEMENT_INTENTS)
def test_element_intents_require_an_element(intent):
    turn = browser_turn("t", intent)
    del turn["arguments"]["element"]

    assert fields(validate_turn(turn)) == ["turn.arguments.element"]


@pytest.mark.parametrize("intent", sorted(set(INTENTS) - set(schema.ELEMENT_INTENTS)))
def test_other_intents_need_no_element(intent):
    turn = browser_turn("t", intent)

    assert "element" not in turn["arguments"]
    assert validate_turn(turn) == []


@pytest.mark.parametrize("key", ["attributes", "bbox", "tagName", "xpath", "textContent", "outerHTML"])
def test_each_element_key_is_required(key):
    turn = browser_turn("t", "click")
    del turn["arguments"]["element"][key]

    assert f"turn.arguments.element.{key}" in fields(validate_turn(turn))


def test_inner_html_is_optional_but_must_be_a_string():
    turn = browser_turn("t", "click")
    del turn["arguments"]["element"]["innerHTML"]
    assert validate_turn(turn) == []

    turn["arguments"]["element"]["innerHTML"] = None
    assert fields(validate_turn(turn)) == ["turn.arguments.element.innerHTML"]


@pytest.mark.parametrize("uid", [None, "", 5])
def test_the_element_needs_a_non_empty_string_uid(uid):
    turn = browser_turn("t", "click")
    turn["arguments"]["element"]["attributes"]["data-webtasks-id"] = uid

    assert fields(validate_turn(turn)) == ["turn.arguments.element.attributes.data-webtasks-id"]


@pytest.mark.parametrize("key", schema.BBOX_KEYS)
def test_every_bbox_value_must_be_a_number(key):
    turn = browser_turn("t", "click")
    turn["arguments"]["element"]["bbox"][key] = "10"

    assert validate_turn(turn) == [FieldError(f"turn.arguments.element.bbox.{key}", "expected number, got string")]


def test_extra_argument_keys_are_kept_for_forward_compatibility():
    turn = browser_turn("t", "click")
    turn["arguments"]["properties"]["pointerType"] = "mouse"
    turn["arguments"]["element"]["attributes"]["aria-label"] = "Search"

    assert validate_turn(turn) == []


@pytest.mark.parametrize("field", list(schema.BLOB_FIELDS))
def test_a_blob_reference_must_be_a_lowercase_sha256(field):
    refs = {"page": SHA, "bboxes": SHA, field: SHA.upper()}  # a page always comes with its bboxes
    errors = validate_turn(browser_turn("t", **refs))

    assert errors == [FieldError(f"turn.{field}", "expected the sha256 of an uploaded blob (64 lowercase hex)")]


def test_a_page_without_its_bboxes_is_refused():
    errors = validate_turn(browser_turn("t", page=SHA))

    assert errors == [FieldError("turn.bboxes", "required when a page is given: the boxes of its elements")]


def test_a_null_blob_reference_means_no_blob():
    turn = browser_turn("t", screenshot=None, page=SHA, bboxes=SHA)

    assert validate_turn(turn) == []
    assert schema.referenced_blobs(turn) == {"page": SHA, "bboxes": SHA}


def test_referenced_blobs_lists_each_blob_field_present():
    turn = browser_turn("t", screenshot=SHA, page=sha(b"p"), bboxes=sha(b"b"))

    assert schema.referenced_blobs(turn) == {"screenshot": SHA, "page": sha(b"p"), "bboxes": sha(b"b")}
    assert schema.referenced_blobs(chat_turn("c")) == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, True),
        (-2.5, True),
        (10**20, True),
        (-(10**308), True),
        pytest.param(10**400, False, id="10**400"),  # no double holds it (math.isfinite raised OverflowError)
        (float("inf"), False),
        (float("nan"), False),
        (True, False),
        (None, False),
    ],
)
def test_is_number_accepts_finite_numbers_but_not_booleans(value, expected):
    assert schema.is_number(value) is expected


BOX = {"x": 1, "y": 2.5, "width": 3, "height": 4, "top": 2.5, "right": 4, "bottom": 6.5, "left": 1}


@pytest.mark.parametrize(
    ("changed", "refused"),
    [
        ({}, False),
        ({"x": 1e308, "y": 1e308, "width": 1e308, "height": 1e308}, False),  # only their sum overflows
        ({"x": -(10**300), "y": 10**300}, False),
        ({"x": "1"}, True),
        ({"top": None}, True),
        ({"width": True}, True),
        ({"height": float("inf")}, True),
        ({"y": float("nan")}, True),
        ({"x": 10**400}, True),
        ({"left": -(10**400)}, True),
        ({"extra": [1]}, True),
    ],
)
def test_the_fast_bboxes_check_agrees_with_the_per_box_check(changed, refused):
    boxes = {f"uid-{index}": dict(BOX) for index in range(50)}
    boxes["uid-17"].update(changed)
    bad = [(uid, box) for uid, box in boxes.items() if schema.bad_box(box)]
    precise = [error for uid, box in bad for error in schema.box_errors(box, f"b.{uid}")]

    assert bool(precise) is refused
    assert not (refused and schema.boxes_ok(boxes))  # the fast check passes nothing the precise one refuses
    assert schema.boxes_ok(boxes) or changed  # and the common case takes the fast path
    data = json.dumps(boxes).encode()  # NaN and infinities come out as NaN and Infinity: not JSON
    assert not (refused and schema.bboxes_blob_ok(data))  # nor does the check on the blob's bytes
    assert schema.bboxes_blob_ok(data) or changed
    assert schema.validate_bboxes(boxes, "b") == precise
    assert all(error.field.startswith("b.uid-17.") for error in precise)


BOX_JSON = b'{"x":1,"y":2.5,"width":3,"height":4}'


@pytest.mark.parametrize(
    ("data", "valid", "fast"),
    [
        (b'{"u":' + BOX_JSON + b"}", True, True),
        (b"{}", True, True),
        (b'{"u":{"x":1,"x":2,"y":2,"width":3,"height":4}}', True, True),  # a repeated key: the last one counts
        (b'{"u":{"x":12345678901234567890123,"y":2,"width":3,"height":4}}', True, True),
        (b'{"u":{"x":1,"y":2,"width":3,"height":4,"extra":5}}', True, False),  # another key: the precise check
        (b'{"\\ud800":' + BOX_JSON + b"}", False, False),  # a lone surrogate
        (b'{"\xff":' + BOX_JSON + b"}", False, False),  # not UTF-8
        (b'\xef\xbb\xbf{"u":' + BOX_JSON + b"}", False, False),  # a byte order mark
        (b'{"u":' + BOX_JSON + b"} x", False, False),
        (b'{"u":' + BOX_JSON + b",}", False, False),
        (b'{"u":{"x":1e400,"y":2,"width":3,"height":4}}', False, False),
        (b'{"u":{"x":NaN,"y":2,"width":3,"height":4}}', False, False),
        (b'{"u":{"x":1,"y":2,"width":3}}', False, False),
        (b'{"u":{"x":1,"y":2,"width":3,"height":4,"top":null}}', False, False),
        (b'[{"x":1,"y":2,"width":3,"height":4}]', False, False),
    ],
)
def test_the_check_on_a_bboxes_blobs_bytes_passes_only_what_the_precise_check_accepts(data, valid, fast):
    try:
        precise = schema.validate_bboxes(jsonsafe.loads(data, "body", walk=False)) == []
    except jsonsafe.JSONProblem:
        precise = False

    assert (precise, schema.bboxes_blob_ok(data)) == (valid, fast)


def test_the_recorders_bboxes_take_the_check_on_the_bytes():
    spec = next(synth.generate_corpus(1, 6, 300, 7))
    pages = [data for data, media_type in spec.blobs if media_type == "application/json"]

    assert pages
    assert all(schema.bboxes_blob_ok(data) for data in pages)


@pytest.mark.parametrize(
    ("boxes", "field"),
    [
        ({"a": [1, 2]}, "b.a"),
        ({"a": {"x": 1, "y": 2, "width": 3}}, "b.a.height"),
        ({"a": dict(BOX), "b": 5}, "b.b"),
    ],
)
def test_the_fast_bboxes_check_sends_malformed_boxes_to_the_precise_one(boxes, field):
    assert not schema.boxes_ok(boxes)
    assert [error.field for error in schema.validate_bboxes(boxes, "b")] == [field]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(SHA, True), (SHA.upper(), False), (SHA[:-1], False), (SHA + "a", False), ("z" * 64, False), (None, False)],
)
def test_is_sha256_accepts_only_64_lowercase_hex_digits(value, expected):
    assert schema.is_sha256(value) is expected


@pytest.mark.parametrize(
    ("value", "name"),
    [(None, "null"), (True, "boolean"), (1, "number"), (1.5, "number"), ("a", "string"), ([], "array"), ({}, "object")],
)
def test_type_name_uses_json_names(value, name):
    assert schema.type_name(value) == name


def test_a_field_error_serialises_as_field_and_message():
    assert FieldError("turns[0].type", "bad").as_dict() == {"field": "turns[0].type", "message": "bad"}
