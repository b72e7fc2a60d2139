"""Validation of submitted turns against the WebLINX replay schema (pure: no database).

``validate_turn`` returns a list of ``FieldError`` naming the offending field by its path inside the
submitted batch and saying what is allowed, so the recorder (and a person reading the log) can fix it.
The argument shapes are those of ``../shared/specs/weblinx-format.md`` and the official ``weblinx`` package.
"""

import math
import operator
from dataclasses import dataclass
from itertools import chain, repeat

import msgspec

from .jsonsafe import in_double_range

INTENTS = (
    "click",
    "hover",
    "textInput",
    "change",
    "submit",
    "load",
    "scroll",
    "copy",
    "paste",
    "tabcreate",
    "tabremove",
    "tabswitch",
)
ELEMENT_INTENTS = ("click", "hover", "textInput", "change", "submit", "copy", "paste")
SPEAKERS = ("instructor", "navigator")
TURN_TYPES = ("chat", "browser")
# Screenshots are PNG: the WebLINX format (and its library) name and list them as screenshot-N-M.png.
BLOB_FIELDS = {"screenshot": "image/png", "page": "text/html", "bboxes": "application/json"}
# Step mode's raw dump before the action (``annotation/lib/rawdump.py``): the traffic since the previous step (HAR 1.2)
# and the DOM snapshot with layout and computed styles. Turn columns too, but not WebLINX fields: its export omits them.
RAW_FIELDS = {"har": "application/har+json", "dom_snapshot": "application/vnd.webtasks.dom-snapshot+json"}
BBOX_KEYS = ("x", "y", "width", "height", "top", "right", "bottom", "left")
UID_ATTRIBUTE = "data-webtasks-id"

CHAT_FIELDS = {"client_id", "type", "timestamp", "speaker", "utterance"}
BROWSER_FIELDS = {"client_id", "type", "timestamp", "intent", "arguments", "frames", "label", *BLOB_FIELDS, *RAW_FIELDS}
# The recorder's name for the action, shown in review (``annotation.lib.labels``); the model column's length.
LABEL_MAX = 200
# Extra screenshots captured around an action (e.g. just before and after it), for re-alignment in review.
MAX_FRAMES = 8
FRAME_FIELDS = {"screenshot", "timestamp", "label"}

# Intent-specific arguments: (path inside ``arguments``, expected type name).
INTENT_ARGUMENTS = {
    "textInput": [(("text",), "string")],
    "change": [(("value",), "string")],
    "scroll": [(("scrollX",), "number"), (("scrollY",), "number")],
    "copy": [(("selected",), "string")],
    "paste": [(("pasted",), "string")],
    "load": [
        (("properties", "url"), "string"),
        (("properties", "transitionType"), "string"),
        (("properties", "transitionQualifiers"), "list of strings"),
        (("properties", "tabId"), "integer"),
    ],
    "tabcreate": [(("properties", "tabId"), "integer")],
    "tabremove": [(("properties", "tabId"), "integer")],
    "tabswitch": [(("properties", "tabId"), "integer"), (("properties", "tabIdOrigin"), "integer")],
}
ELEMENT_KEYS = [
    (("attributes",), "object"),
    (("bbox",), "object"),
    (("tagName",), "string"),
    (("xpath",), "string"),
    (("textContent",), "string"),
    (("outerHTML",), "string"),
]
OPTIONAL_ELEMENT_KEYS = [(("innerHTML",), "string")]
METADATA_KEYS = [(("url",), "string"), (("tabId",), "integer")]
OPTIONAL_METADATA_KEYS = [
    (("viewportWidth",), "count"),
    (("viewportHeight",), "count"),
    (("mouseX",), "number"),
    (("mouseY",), "number"),
    (("zoomLevel",), "number"),
]
SHA256_CHARS = set("0123456789abcdef")


@dataclass(frozen=True)
class FieldError:
    """One problem with a submitted value: where it is and what is wrong with it."""

    field: str
    message: str

    def as_dict(self):
        return {"field": self.field, "message": self.message}


def is_number(value) -> bool:
    """A finite int or float; booleans are not numbers here, whatever Python says."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and in_double_range(value)


def is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= SHA256_CHARS


MAX_SAFE_INTEGER = 2**53 - 1  # the largest integer a JavaScript client (the recorder) represents exactly
MAX_COUNT = 2**31 - 1  # the largest value of the database's integer columns (viewport sizes, video chunk index)


def is_integer(value) -> bool:
    """An int within JSON's safe range (tab ids are stored as 64-bit integers)."""
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def is_count(value) -> bool:
    """A non-negative int that fits the database's integer columns."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "number": is_number,
    "integer": is_integer,
    "count": is_count,
    "object": lambda v: isinstance(v, dict),
    "list of strings": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
}
TYPE_NAMES = {"count": "integer"}
INTEGER_RANGES = {"integer": (-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER), "count": (0, MAX_COUNT)}


def type_name(value) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def type_message(expected: str, value) -> str:
    """What is wrong: the wrong JSON type, or an integer outside its column's range (integers are never too big for
    Python, but are for the database and for JavaScript clients)."""
    if expected in INTEGER_RANGES and isinstance(value, int) and not isinstance(value, bool):
        low, high = INTEGER_RANGES[expected]
        shown = value if abs(value) < 10**15 else ("a larger one" if value > 0 else "a smaller one")
        return f"expected an integer from {low} to {high}, got {shown}"
    return f"expected {TYPE_NAMES.get(expected, expected)}, got {type_name(value)}"


def check_keys(obj: dict, specs, where: str, required=True) -> list[FieldError]:
    """Check that each ``(path, type)`` of ``specs`` is present in ``obj`` (if required) with that type."""
    errors = []
    for path, expected in specs:
        value, found = obj, True
        for key in path:
            if not isinstance(value, dict) or key not in value:
                found = False
                break
            value = value[key]
        field = ".".join([where, *path])
        if not found:
            if required:
                errors.append(FieldError(field, f"required; expected {TYPE_NAMES.get(expected, expected)}"))
        elif not TYPE_CHECKS[expected](value):
            errors.append(FieldError(field, type_message(expected, value)))
    return errors


def check_bbox(bbox: dict, where: str) -> list[FieldError]:
    return check_keys(bbox, [((key,), "number") for key in BBOX_KEYS], where)


BOX_REQUIRED = frozenset(("x", "y", "width", "height"))  # what the exporters, metrics and quality checks read
NUMBER_TYPES = frozenset((int, float))  # not bool
DICT_ONLY = frozenset((dict,))


def boxes_ok(boxes: dict) -> bool:
    """Fast test of a whole bboxes blob (it runs for every page a recorder uploads: 2,000 boxes of 8 numbers):
    every box an object with x, y, width and height, every value a finite number. Each step is one pass in C
    (``map``, ``set``, ``sum``), no Python frame per box; False sends the blob to the precise per-box check. One sum
    tests finiteness: inf or NaN anywhere makes it non-finite, an int past a double makes it raise (a sum that
    merely overflows sends valid boxes to the precise check, which accepts them)."""
    values = boxes.values()
    if not set(map(type, values)) <= DICT_ONLY:
        return False
    if not all(map(operator.ge, map(dict.keys, values), repeat(BOX_REQUIRED))):
        return False
    numbers = list(chain.from_iterable(map(dict.values, values)))
    if not set(map(type, numbers)) <= NUMBER_TYPES:
        return False
    try:
        return math.isfinite(sum(numbers))
    except OverflowError:
        return False


# A box exactly as the recorder sends it: the four required numbers and the four optional ones, no other key.
RecorderBox = msgspec.defstruct(
    "RecorderBox",
    [(key, float) for key in BBOX_KEYS if key in BOX_REQUIRED]
    + [(key, float, 0.0) for key in BBOX_KEYS if key not in BOX_REQUIRED],
    forbid_unknown_fields=True,
)
RECORDER_BOXES = msgspec.json.Decoder(dict[str, RecorderBox])


def bboxes_blob_ok(data) -> bool:
    """Fastest test of a bboxes blob, on its bytes: decoded by msgspec into typed boxes in C (no dict per box, no
    Python pass over the numbers), ~2.8x faster than orjson then ``boxes_ok`` on a 2,000-box page. It refuses
    malformed JSON, invalid UTF-8, lone surrogates, a non-object, a box missing x, y, width or height, a key
    beyond ``BBOX_KEYS``, and any value that is not a finite number (NaN and infinities are not JSON; a number
    past a double is out of range). True: valid. False: not necessarily invalid (a box with another numeric key,
    an integer past a double's precision): the caller parses and checks precisely, which names the problem."""
    try:
        RECORDER_BOXES.decode(data)
    except (msgspec.MsgspecError, ValueError):  # ValueError: UnicodeDecodeError on invalid UTF-8
        return False
    return True


def bad_box(box) -> bool:
    """Precise test of one box: not an object of finite numbers with x, y, width, height."""
    return (
        type(box) is not dict
        or not box.keys() >= BOX_REQUIRED
        or not set(map(type, box.values())) <= NUMBER_TYPES
        or not all(map(in_double_range, box.values()))
    )


def box_errors(box, where: str) -> list[FieldError]:
    if not isinstance(box, dict):
        return [FieldError(where, f"expected a box object {{x, y, width, height, ...}}, got {type_name(box)}")]
    infinite = [key for key, value in box.items() if type(value) in NUMBER_TYPES and not in_double_range(value)]
    if infinite:  # the message jsonsafe gives for such numbers elsewhere
        return [FieldError(f"{where}.{key}", "number out of range (a finite double is expected)") for key in infinite]
    errors = check_keys(box, [((key,), "number") for key in sorted(BOX_REQUIRED)], where)
    extra = [key for key in box if key not in BOX_REQUIRED and not is_number(box[key])]
    return errors + [FieldError(f"{where}.{key}", f"expected number, got {type_name(box[key])}") for key in extra]


def validate_bboxes(boxes, where: str = "body", most: int = 20) -> list[FieldError]:
    """A page's bboxes blob: ``{uid: box}``, each box an object of numbers with at least x, y, width and height
    (the recorder sends top, right, bottom and left too). At most ``most`` problems are listed."""
    if not isinstance(boxes, dict):
        return [FieldError(where, f"expected an object {{uid: box}}, got {type_name(boxes)}")]
    if boxes_ok(boxes):
        return []
    errors = []
    for uid, box in boxes.items():
        if bad_box(box):
            errors += box_errors(box, f"{where}.{uid}")
            if len(errors) >= most:
                break
    return errors[:most]


def check_element(element, where: str) -> list[FieldError]:
    """The acted element: its uid, box, tag, xpath and text."""
    if not isinstance(element, dict):
        return [FieldError(where, f"required for element intents; expected object, got {type_name(element)}")]
    errors = check_keys(element, ELEMENT_KEYS, where) + check_keys(element, OPTIONAL_ELEMENT_KEYS, where, False)
    if isinstance(element.get("attributes"), dict):
        uid = element["attributes"].get(UID_ATTRIBUTE)
        if not isinstance(uid, str) or not uid:
            errors.append(FieldError(f"{where}.attributes.{UID_ATTRIBUTE}", "required; expected non-empty string"))
        errors += [
            FieldError(f"{where}.attributes.{name}", f"expected string (a DOM attribute value), got {type_name(value)}")
            for name, value in element["attributes"].items()
            if name != UID_ATTRIBUTE and not isinstance(value, str)
        ]
    if isinstance(element.get("bbox"), dict):
        errors += check_bbox(element["bbox"], f"{where}.bbox")
    return errors


def check_arguments(intent: str, arguments, where: str) -> list[FieldError]:
    """The WebLINX arguments of one browser action."""
    if not isinstance(arguments, dict):
        return [FieldError(where, f"required; expected object, got {type_name(arguments)}")]
    metadata = arguments.get("metadata")
    if not isinstance(metadata, dict):
        errors = [
            FieldError(
                f"{where}.metadata", f"required on every browser turn; expected object, got {type_name(metadata)}"
            )
        ]
    else:
        errors = check_keys(metadata, METADATA_KEYS, f"{where}.metadata")
        errors += check_keys(metadata, OPTIONAL_METADATA_KEYS, f"{where}.metadata", required=False)
    if "properties" in arguments and not isinstance(arguments["properties"], dict):
        errors.append(FieldError(f"{where}.properties", f"expected object, got {type_name(arguments['properties'])}"))
    errors += check_keys(arguments, INTENT_ARGUMENTS.get(intent, []), where)
    # Any intent may carry the element it concerns; when it does, the review page and exporters read it.
    if intent in ELEMENT_INTENTS or arguments.get("element") is not None:
        errors += check_element(arguments.get("element"), f"{where}.element")
    return errors


def check_blob_refs(turn: dict, where: str) -> list[FieldError]:
    errors = []
    for name in (*BLOB_FIELDS, *RAW_FIELDS):
        value = turn.get(name)
        if value is not None and not is_sha256(value):
            errors.append(FieldError(f"{where}.{name}", "expected the sha256 of an uploaded blob (64 lowercase hex)"))
    mhtml = snapshot_of(turn)
    if mhtml is not None and not is_sha256(mhtml):
        errors.append(
            FieldError(f"{where}.{SNAPSHOT_FIELD}", "expected the sha256 of an uploaded MHTML blob (64 lowercase hex)")
        )
    if turn.get("page") is not None and turn.get("bboxes") is None:
        # The page's elements are only usable (evaluation, candidates) with their boxes, keyed by uid.
        errors.append(FieldError(f"{where}.bboxes", "required when a page is given: the boxes of its elements"))
    return errors


def check_common(turn: dict, where: str) -> list[FieldError]:
    """Fields every turn has: client_id, type, timestamp."""
    errors = []
    client_id = turn.get("client_id")
    if not isinstance(client_id, str) or not 1 <= len(client_id) <= 64:
        errors.append(FieldError(f"{where}.client_id", "required; expected a string of 1 to 64 characters"))
    if not is_number(turn.get("timestamp")):
        errors.append(
            FieldError(
                f"{where}.timestamp",
                f"required; expected a finite number of seconds since the "
                f"recording started, got {type_name(turn.get('timestamp'))}",
            )
        )
    elif turn["timestamp"] < 0:
        errors.append(FieldError(f"{where}.timestamp", "must be >= 0 (seconds since the recording started)"))
    return errors


def check_unknown_fields(turn: dict, allowed: set, where: str) -> list[FieldError]:
    unknown = sorted(set(turn) - allowed)
    return [FieldError(f"{where}.{key}", f"unknown field; allowed: {', '.join(sorted(allowed))}") for key in unknown]


def validate_chat(turn: dict, where: str) -> list[FieldError]:
    errors = check_unknown_fields(turn, CHAT_FIELDS, where)
    if turn.get("speaker") not in SPEAKERS:
        errors.append(FieldError(f"{where}.speaker", f"expected one of: {', '.join(SPEAKERS)}"))
    if not isinstance(turn.get("utterance"), str):
        errors.append(
            FieldError(f"{where}.utterance", f"required; expected string, got {type_name(turn.get('utterance'))}")
        )
    return errors


def check_frame(frame, where: str) -> list[FieldError]:
    if not isinstance(frame, dict):
        return [FieldError(where, f"expected object, got {type_name(frame)}")]
    errors = check_unknown_fields(frame, FRAME_FIELDS, where)
    if not is_sha256(frame.get("screenshot")):
        errors.append(FieldError(f"{where}.screenshot", "required; expected the sha256 of an uploaded image/png blob"))
    if not is_number(frame.get("timestamp")) or frame["timestamp"] < 0:
        errors.append(FieldError(f"{where}.timestamp", "required; expected seconds since the recording started (>= 0)"))
    if "label" in frame and not isinstance(frame["label"], str):
        errors.append(FieldError(f"{where}.label", f"expected string, got {type_name(frame['label'])}"))
    return errors


def check_frames(frames, where: str) -> list[FieldError]:
    """Optional ``frames``: up to MAX_FRAMES ``{screenshot, timestamp, label?}``."""
    if frames is None:
        return []
    if not isinstance(frames, list) or len(frames) > MAX_FRAMES:
        return [FieldError(where, f"expected a list of at most {MAX_FRAMES} frames")]
    return [error for i, frame in enumerate(frames) for error in check_frame(frame, f"{where}[{i}]")]


def check_label(label, where: str) -> list[FieldError]:
    """Optional ``label``: a string of at most LABEL_MAX characters."""
    if label is None or (isinstance(label, str) and len(label) <= LABEL_MAX):
        return []
    if isinstance(label, str):
        return [FieldError(where, f"at most {LABEL_MAX} characters, got {len(label)}")]
    return [FieldError(where, f"expected string, got {type_name(label)}")]


def validate_browser(turn: dict, where: str) -> list[FieldError]:
    errors = check_unknown_fields(turn, BROWSER_FIELDS, where) + check_blob_refs(turn, where)
    errors += check_label(turn.get("label"), f"{where}.label")
    errors += check_frames(turn.get("frames"), f"{where}.frames")
    intent = turn.get("intent")
    if intent not in INTENTS:
        shown = repr(intent) if isinstance(intent, str) else type_name(intent)
        return errors + [FieldError(f"{where}.intent", f"unknown intent {shown}; allowed: {', '.join(INTENTS)}")]
    return errors + check_arguments(intent, turn.get("arguments"), f"{where}.arguments")


def nul_at(value, where: str) -> str | None:
    """The path of the first string or key holding a NUL in ``value`` (PostgreSQL stores none), or None."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return path
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and "\x00" in key:
                    return path
                stack.append((child, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def validate_turn(turn, where: str = "turn") -> list[FieldError]:
    """All problems of one submitted turn, or an empty list when it is a valid WebLINX turn."""
    if not isinstance(turn, dict):
        return [FieldError(where, f"expected object, got {type_name(turn)}")]
    errors = check_common(turn, where)
    if (path := nul_at(turn, where)) is not None:
        errors.append(FieldError(path, "holds a NUL character (\\u0000), which cannot be stored"))
    if turn.get("type") == "chat":
        return errors + validate_chat(turn, where)
    if turn.get("type") == "browser":
        return errors + validate_browser(turn, where)
    return errors + [FieldError(f"{where}.type", f"expected one of: {', '.join(TURN_TYPES)}")]


# Step mode's raw snapshot of the page before the action (MHTML, Mind2Web's raw dump); the WebLINX turn has no field
# for it, so the recorder puts it in the arguments' properties.
SNAPSHOT_FIELD = "arguments.properties.mhtml"
SNAPSHOT_MEDIA_TYPE = "multipart/related"


def snapshot_of(turn: dict):
    """The turn's MHTML snapshot reference (``arguments.properties.mhtml``), or None."""
    arguments = turn.get("arguments")
    properties = arguments.get("properties") if isinstance(arguments, dict) else None
    return properties.get("mhtml") if isinstance(properties, dict) else None


def referenced_blobs(turn: dict) -> dict[str, str]:
    """``{field: sha256}`` of the blobs a (valid) turn refers to, frames as ``frames[i].screenshot``."""
    refs = {name: turn[name] for name in (*BLOB_FIELDS, *RAW_FIELDS) if turn.get(name)}
    for index, frame in enumerate(turn.get("frames") or []):
        refs[f"frames[{index}].screenshot"] = frame["screenshot"]
    if snapshot_of(turn):
        refs[SNAPSHOT_FIELD] = snapshot_of(turn)
    return refs


def expected_media_type(field: str) -> str:
    """The media type a referenced blob must have in this field of a turn."""
    if field == SNAPSHOT_FIELD:
        return SNAPSHOT_MEDIA_TYPE
    if field in RAW_FIELDS:
        return RAW_FIELDS[field]
    return BLOB_FIELDS["screenshot" if field.startswith("frames[") else field]
