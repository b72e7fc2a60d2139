"""Action call strings and the literals the action library builds, without a browser."""

import ast

import lxml.etree
import pytest

from agents.actions import _js_number, call_string, xpath_literal
from agents.llm_solver import parse_calls


def test_call_strings_are_the_official_form_and_always_parse_back():
    assert call_string("modify_radio", "q1", "3") == "self.actions.modify_radio('q1', '3')"
    awkward = 'it\'s "quoted"\nand on two lines'
    call = call_string("modify_text", "story", awkward)
    parsed = ast.parse(call).body[0].value
    assert [ast.literal_eval(arg) for arg in parsed.args] == ["story", awkward]


@pytest.mark.parametrize("text", ["plain", "it's", 'say "hi"', "both ' and \""])
def test_xpath_literals_hold_any_quotes(text):
    assert lxml.etree.fromstring("<x/>").xpath(f"string({xpath_literal(text)})") == text


def test_range_values_must_be_numbers():
    assert _js_number(3) == "3"
    assert _js_number(2.5) == "2.5"
    assert _js_number(" -1e3 ") == "-1e3"
    for bad in ("alert(1)", "", True, None, float("nan"), float("inf"), "1; x()"):
        assert _js_number(bad) is None, bad


def test_calls_keep_their_source_exactly_and_a_5_mb_answer_parses():
    code = "modify_text('a', 'é\\nx')\nclick(1, 2)\r\nmodify_radio(\n  'q',\n  'ü')\rscroll(0, 1); type('ß')"
    expected = [ast.get_source_segment(code, node) for node in ast.parse(code).body]
    assert [call.source for call in parse_calls(code).calls] == expected
    huge = "x" * (5 * 1024 * 1024)  # ast.get_source_segment takes minutes on this line
    parsed = parse_calls(f"modify_text('story', {huge!r})\nmodify_select('colour', 'red')")
    assert [call.args for call in parsed.calls] == [["story", huge], ["colour", "red"]]
