"""The controls on which the official oracle stayed below the human ceiling, in headless Chromium on the project's own
fixture tasks (``tests/fixtures/turkingbench``, each after a real TurkingBench template): checkbox groups (boxes
checked by default, boxes covered by their styled label, boxes sharing one value), range controls (annotators who
disagree, gold the control cannot hold) and read-only textareas."""

from pathlib import Path

import pytest
from selenium.common.exceptions import ElementClickInterceptedException

from agents import page
from agents.actions import ActionError, Actions
from agents.harness import run
from agents.server import serve
from agents.solvers import Oracle
from agents.turkle import Dataset

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "turkingbench"
CANNOT_HOLD = "the control cannot hold the gold value: "


@pytest.fixture(scope="module")
def fixture_pages():
    data = Dataset(FIXTURES)
    with serve(data) as pages:
        yield data, pages


def load(driver, pages, task, instance=0):
    url = pages.url(task, instance)
    driver.origin_guard.allow_only(url)
    driver.get(url)
    return Actions(driver)


def read(driver, name, field_type):
    return page.read_values(driver, [(name, field_type)])[0]["values"]


def test_set_checkbox_leaves_exactly_the_listed_boxes_checked_where_the_official_clicks_fail(driver, fixture_pages):
    _, pages = fixture_pages
    actions = load(driver, pages, "Checkbox groups")
    # The official action clicks: the pre-checked box it lists ends unchecked, a box under its label is not clickable.
    actions.modify_checkbox("example", "w_no")
    assert read(driver, "example", "checkbox") == []
    with pytest.raises(ElementClickInterceptedException):
        actions.modify_checkbox("need_1", "on")

    actions = load(driver, pages, "Checkbox groups")
    assert actions.set_checkbox("example", "w_no") == "self.actions.set_checkbox('example', 'w_no')"
    assert read(driver, "example", "checkbox") == ["w_no"]
    actions.set_checkbox("need_1", "on")  # through the label that covers the box
    assert read(driver, "need_1", "checkbox") == ["on"]
    actions.set_checkbox("need_1", float("nan"))  # no box: unchecks it
    assert read(driver, "need_1", "checkbox") == []
    actions.set_checkbox("steps", "1|1")  # boxes sharing a value: as many as listed
    assert read(driver, "steps", "checkbox") == ["1", "1"]
    actions.set_checkbox("steps", "1.0")  # numbers retried as ints; one box of the two stays
    assert read(driver, "steps", "checkbox") == ["1"]
    actions.set_checkbox("tags", ["c", "a"])  # "b" was checked by default
    assert sorted(read(driver, "tags", "checkbox")) == ["a", "c"]
    actions.set_checkbox("tags", "a|c")  # idempotent, unlike clicks
    assert sorted(read(driver, "tags", "checkbox")) == ["a", "c"]
    assert (
        driver.execute_script("return document.querySelector('[name=tags][value=b]').hasAttribute('checked')") is False
    )
    with pytest.raises(ActionError, match="the 'yes' box of 'example' is disabled"):
        actions.set_checkbox("example", "yes")
    with pytest.raises(ActionError, match="no \\(or too few\\) boxes of the value 'z'"):
        actions.set_checkbox("tags", "z")
    assert sorted(read(driver, "tags", "checkbox")) == ["a", "c"]  # a refused call changes nothing


def test_modify_range_writes_what_the_control_keeps(driver, fixture_pages):
    _, pages = fixture_pages
    actions = load(driver, pages, "Range controls")
    element = driver.find_element("name", "score")
    for asked, kept in [(12, "10"), ("2.5", "3"), (-4, "0"), (7, "7")]:
        assert actions.modify_range("score", asked) == f"self.actions.modify_range('score', {str(asked)!r})"
        assert read(driver, "score", "range") == [kept] == [element.get_property("value")]
    actions.modify_range("coherence", 3.4)
    assert read(driver, "coherence", "range") == ["3"]


def test_the_oracle_reaches_the_ceiling_on_every_field_it_can_and_names_the_control_on_the_others(
    driver, fixture_pages
):
    data, pages = fixture_pages
    tasks = [data.task(name) for name in ("Checkbox groups", "Range controls", "Read-only steps")]
    result = run(driver, Oracle(seed=0), tasks, pages.url)
    fields = [(r.task, r.instance, f) for r in result.instances for f in r.fields if f.skipped is None]
    assert [f.error for _, _, f in fields if f.error] == []
    below = {(task, i, f.field): f.shortfall for task, i, f in fields if f.score < f.ceiling - 1e-9}
    assert below == {
        ("Range controls", 0, "score"): CANNOT_HOLD + "the range (min 0, max 10, step 1) holds 10 for the gold 12",
        ("Range controls", 1, "score"): CANNOT_HOLD + "the range (min 0, max 10, step 1) holds 3 for the gold 2.5",
        ("Read-only steps", 0, "step1"): CANNOT_HOLD
        + "read-only textarea, which the official reader skips: no answer in it is read",
        ("Read-only steps", 0, "step2"): CANNOT_HOLD
        + "read-only textarea, which the official reader skips: no answer in it is read",
    }
    scores = {(task, i, f.field): (f.prediction, round(f.score, 4), round(f.ceiling, 4)) for task, i, f in fields}
    assert {score for (task, _, _), (_, score, _) in scores.items() if task == "Checkbox groups"} == {1.0}
    assert scores[("Checkbox groups", 0, "example")][0] == "w_no"  # kept, not toggled off
    assert scores[("Checkbox groups", 0, "steps")][0] == "1|1"
    assert scores[("Checkbox groups", 1, "tags")][0] == "b"
    # Annotators 1, 4, 5: the median 4 is the best annotator (the mean 3.33 scored 0.6889); 2, 2, 3: the median 2.
    assert scores[("Range controls", 0, "coherence")] == ("4", 0.7333, 0.7333)
    assert scores[("Range controls", 1, "coherence")] == ("2", 0.8889, 0.8889)
    assert scores[("Range controls", 0, "score")] == ("10", 0.8333, 1.0)
    calls = [call for r in result.instances for f in r.fields for call in f.calls]
    assert "self.actions.set_checkbox('tags', 'a|c')" in calls or "self.actions.set_checkbox('tags', 'c|a')" in calls
    assert "self.actions.modify_range('coherence', '4.0')" in calls
