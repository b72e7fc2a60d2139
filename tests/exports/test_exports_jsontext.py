"""Readable JSON files written with json's C encoder (``workers.exports.jsontext``): the same values as ``json.dumps``,
and its indented text where every level is indented."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workers.exports.jsontext import indented

leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
# no deadline: a loaded machine (the suite runs under CPU stress too) is not a failure
PROPERTIES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
values = st.recursive(leaves, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30)


@PROPERTIES
@given(values, st.integers(0, 4), st.booleans(), st.booleans())
def test_any_value_reads_back_as_itself(value, levels, sort_keys, ensure_ascii):
    text = indented(value, levels, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    assert json.loads(text) == value
    if ensure_ascii:
        assert text.isascii()


@PROPERTIES
@given(values, st.booleans())
def test_indented_all_the_way_down_it_is_json_dumps_indent_1(value, ensure_ascii):
    assert indented(value, 99, ensure_ascii=ensure_ascii) == json.dumps(value, indent=1, ensure_ascii=ensure_ascii)


def test_deeper_values_are_on_one_line_and_keys_that_are_not_strings_are_written_as_json_writes_them():
    value = {"steps": [{"a": [1, 2]}, {"b": {}}], 5: True, None: 1.5}
    assert indented(value, 2) == '{\n "steps": [\n  {"a": [1, 2]},\n  {"b": {}}\n ],\n "5": true,\n "null": 1.5\n}'
    assert json.loads(indented(value, 2)) == json.loads(json.dumps(value))
