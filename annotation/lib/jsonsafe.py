"""Parsing JSON from clients into values the database and every later reader can take (pure: no Django).

``json.loads`` accepts more than PostgreSQL's ``jsonb`` and our code can: ``1e400`` parses to infinity, ``"\\ud800"``
to a string that cannot be encoded as UTF-8, and deep nesting raises ``RecursionError`` (not a ``ValueError``).
``loads`` refuses all of these with a ``JSONProblem`` naming the path of the offending value, e.g.
``turns[3].arguments.text``, so every JSON entry point (API bodies, review edits, live-session frames, JSON blobs,
uploaded JSON files through ``actions.errors.parse_json``) answers a 400 or an error message instead of a 500.
"""

import json
import re
import sys

import orjson

FLOAT_MAX = sys.float_info.max  # numbers past a finite double (1e400, or an int of 400 digits) are refused
MAX_DEPTH = 64  # the deepest real payload (a turn batch) is 6 levels; bboxes blobs are 2
SURROGATE_ESCAPE = re.compile(r"\\u[dD]")


class JSONProblem(ValueError):
    """Malformed or unacceptable JSON; ``field`` is the path of the value (``""`` for the whole document)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.message = field, message


def refuse_constant(name: str):
    raise JSONProblem("", f"malformed JSON: Out of range float values are not JSON compliant: {name}")


def loads(text, field: str = "", walk: bool = True):
    """Parse ``text`` (str or UTF-8 bytes) and check it with ``check``; raise ``JSONProblem``. ``walk=False`` is for
    callers that check every value's type, depth and range themselves (bboxes blobs: ``schema.validate_bboxes``):
    the walk then runs only when the text holds ``\\u`` surrogate escapes, and bytes are first tried with orjson (about
    twice as fast on a page's bboxes), which refuses all that ``check`` would (invalid UTF-8, lone surrogates, NaN,
    infinities, 1,024 levels): whatever it refuses is parsed again below for the precise message."""
    if not walk and isinstance(text, (bytes, bytearray)):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise JSONProblem(field, f"body is not UTF-8: {error}") from None
    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except RecursionError:
        raise JSONProblem(field, f"nested too deeply (at most {MAX_DEPTH} levels)") from None
    except JSONProblem:
        raise
    except ValueError as error:
        raise JSONProblem(field, f"malformed JSON: {error}") from None
    # Lone surrogates can only arrive as \\u escapes: a UTF-8 text without "\\ud" has none to look for.
    strings = SURROGATE_ESCAPE.search(text) is not None
    if walk or strings:
        check(value, field, strings=strings)
    return value


def path(where) -> str:
    """``(("", "turns"), 3)`` → ``turns[3]``: paths are built only when a problem is reported."""
    if not isinstance(where, tuple):
        return where
    parent, key = where
    parent = path(parent)
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def encodable(text: str) -> bool:
    """False for strings with lone surrogates (``"\\ud800"``), which have no UTF-8 form."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def in_double_range(value) -> bool:
    """A number a finite double can hold: False for inf, NaN and ints past 1.8e308 (``math.isfinite`` raises
    OverflowError on those ints; every reader of our JSON converts numbers to doubles sooner or later)."""
    return -FLOAT_MAX <= value <= FLOAT_MAX


def check_leaf(value, where, strings: bool) -> None:
    if type(value) in (float, int) and not in_double_range(value):
        raise JSONProblem(path(where), "number out of range (a finite double is expected)")
    if strings and type(value) is str and not encodable(value):
        raise JSONProblem(path(where), "contains a lone surrogate (\\ud800-\\udfff); not valid Unicode")


def check(value, field: str = "", strings: bool = True) -> None:
    """Walk a parsed value (iteratively: no recursion) and refuse nesting deeper than ``MAX_DEPTH``, numbers a
    finite double cannot hold (inf, or an int past 1.8e308) and, when ``strings``, strings (values or keys) that
    are not valid Unicode. Runs once per request body and JSON blob, so the loop touches leaves inline and builds
    paths only for a report."""
    stack = [(value, field, 1)]
    while stack:
        item, where, depth = stack.pop()
        if type(item) not in (dict, list):
            check_leaf(item, where, strings)
            continue
        if depth > MAX_DEPTH:
            raise JSONProblem(path(where), f"nested too deeply (at most {MAX_DEPTH} levels)")
        pairs = item.items() if type(item) is dict else enumerate(item)
        for key, child in pairs:
            if strings and type(key) is str and not encodable(key):
                raise JSONProblem(path(where), "a key contains a lone surrogate; not valid Unicode")
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, (where, key), depth + 1))
            elif kind is float or kind is int or (strings and kind is str):
                check_leaf(child, (where, key), strings)


def nul_path(value, field: str = "") -> str | None:
    """The path of the first string (value or key) holding a NUL character, which PostgreSQL stores in neither text
    nor JSON; None when there is none. Iterative, as ``check``."""
    stack = [(value, field)]
    while stack:
        item, where = stack.pop()
        if type(item) is str:
            if "\x00" in item:
                return path(where)
        elif type(item) in (dict, list):
            for key, child in item.items() if type(item) is dict else enumerate(item):
                if type(key) is str and "\x00" in key:
                    return path(where)
                stack.append((child, (where, key)))
    return None
