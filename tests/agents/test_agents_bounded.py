"""Bounded work in headless Chromium: long text goes into a field in seconds with the events typing makes, text past
the limit is refused naming the field, and a field's actions stop at its time limit (the instance goes on)."""

import time

import pytest
from selenium.webdriver.common.by import By

from agents import page
from agents.actions import MAX_TEXT_CHARS, TYPED_CHARS, ActionError, Actions, FieldTimeLimit
from agents.server import serve
from agents.turkle import Dataset
from tests.support.agents_data import write_task

pytestmark = pytest.mark.browser

# A page that records the events its fields get, as a template's word counter or validation would listen.
LISTENING = """
<textarea name="story"></textarea>
<input type="text" name="title" value="">
<input type="text" name="short" maxlength="1500" value="">
<script>
  window.seen = [];
  for (const kind of ['keydown', 'keyup', 'beforeinput', 'input', 'change'])
    document.addEventListener(kind, event => window.seen.push(kind + ':' + event.target.name), true);
</script>
"""


@pytest.fixture(scope="module")
def listening(tmp_path_factory):
    root = tmp_path_factory.mktemp("listening")
    write_task(root, "Listening", LISTENING, ["x", "Answer.story", "Answer.title", "Answer.short"], [["1", "", "", ""]])
    with serve(Dataset(root)) as pages:
        yield pages.url("Listening", 0)


@pytest.fixture
def fresh(driver, listening):
    driver.origin_guard.allow_only(listening)
    driver.get(listening)
    return driver


def seen(driver, name):
    return [
        kind
        for kind, _, field in (e.partition(":") for e in driver.execute_script("return window.seen"))
        if field == name
    ]


def test_a_100_kb_text_goes_in_within_seconds_with_the_events_of_typing(fresh):
    text = ("A long answer, line after line.\n" * 4000)[:102_400]
    actions = Actions(fresh)
    actions.begin_field(60)

    actions.modify_text("story", text)

    element = fresh.find_element(By.NAME, "story")
    assert element.get_property("value") == text
    assert page.read_values(fresh, [("story", "textarea")])[0]["values"] == [text]
    events = seen(fresh, "story")
    assert {"beforeinput", "input", "keydown", "keyup"} <= set(events)  # chunks, then the last characters typed
    actions.modify_text("title", "next")  # leaving the field: its change event, as after typing
    assert "change" in seen(fresh, "story")


def test_a_short_text_is_still_typed_key_by_key(fresh):
    actions = Actions(fresh)
    actions.modify_text("title", "hello")
    assert seen(fresh, "title").count("keydown") == 5 + 3  # select all (ctrl, a), delete, then five letters
    assert fresh.find_element(By.NAME, "title").get_property("value") == "hello"


def test_long_text_keeps_to_the_field_s_maxlength_as_typing_does(fresh):
    Actions(fresh).modify_text("short", "x" * (TYPED_CHARS * 3))
    assert len(fresh.find_element(By.NAME, "short").get_property("value")) == 1500


def test_text_past_the_limit_is_refused_naming_the_field_and_the_page_is_untouched(fresh):
    actions = Actions(fresh)
    with pytest.raises(ActionError, match=r"the text for 'story' has 5,242,880 characters; at most 200,000"):
        actions.modify_text("story", "x" * 5 * 1024 * 1024)
    with pytest.raises(ActionError, match=r"at most 10 are typed"):
        Actions(fresh, max_text_chars=10).type("x" * 11)
    assert fresh.find_element(By.NAME, "story").get_property("value") == ""
    assert seen(fresh, "story") == []
    assert MAX_TEXT_CHARS == 200_000
    assert actions.history == []


def test_a_field_past_its_time_limit_stops_at_its_next_action(fresh):
    actions = Actions(fresh)
    actions.begin_field(0.5)
    actions.modify_text("title", "first")  # starts the clock
    started = time.monotonic()
    while time.monotonic() - started <= 0.5:  # the solver thinks (or a call takes) past the limit
        fresh.execute_script("return 1")
    with pytest.raises(FieldTimeLimit, match="more than its limit of 0.5 s"):
        actions.modify_text("title", "second")
    assert fresh.find_element(By.NAME, "title").get_property("value") == "first"
    actions.begin_field(0.5)  # the next field has its own time
    actions.modify_text("story", "fine")
    assert fresh.find_element(By.NAME, "story").get_property("value") == "fine"
