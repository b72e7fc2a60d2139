"""The action library in headless Chromium: each ``modify_*`` on each field type of the real TurkingBench templates,
read back from the page; the visual actions; the harness's field order, visibility and failure rules."""

import pytest
from selenium.webdriver.common.by import By

from agents import page
from agents.actions import ActionError, Actions
from agents.harness import Harness, Solver, order_fields
from agents.server import serve
from tests.support.agents_data import form_dataset, real_data

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def real_pages():
    data = real_data()
    with serve(data) as pages:
        yield data, pages


@pytest.fixture(scope="module")
def form_pages(tmp_path_factory):
    data = form_dataset(tmp_path_factory.mktemp("form"))
    with serve(data) as pages:
        yield pages


def load(driver, url):
    """Load a page outside the harness: the browser's origin guard lets only the allowed origin through."""
    driver.origin_guard.allow_only(url)
    driver.get(url)


def first_real_field(driver, real_pages, field_type):
    """The first displayed field of ``field_type`` on a real task page (tasks in name order), loaded."""
    data, pages = real_pages
    for name in data.task_names():
        task = data.task(name)
        load(driver, pages.url(name, 0))
        for item in page.find_fields(driver, task.field_names):
            if item.get("found") and item["type"] == field_type and item["displayed"]:
                return name, item["name"]
    pytest.fail(f"no real task has a displayed {field_type} field")


def read(driver, name, field_type):
    return page.read_values(driver, [(name, field_type)])[0]["values"]


def test_modify_text_types_and_writes_the_value_attribute_on_a_real_template(driver, real_pages):
    _, name = first_real_field(driver, real_pages, "text")
    actions = Actions(driver)
    assert actions.modify_text(name, "hello world") == f"self.actions.modify_text('{name}', 'hello world')"
    element = driver.find_element(By.NAME, name)
    assert element.get_property("value") == "hello world"
    assert read(driver, name, "text")[0] == "hello world"
    actions.modify_text(name, "second")  # select-all + delete first: replaces, never appends
    assert element.get_property("value") == "second" == read(driver, name, "text")[0]
    actions.modify_text(name, "")  # falsy: nothing happens
    assert read(driver, name, "text")[0] == "second"
    assert actions.history[-1] == f"self.actions.modify_text('{name}', '')"


def test_modify_text_writes_a_textarea_inner_html_with_its_lines(driver, real_pages):
    _, name = first_real_field(driver, real_pages, "textarea")
    Actions(driver).modify_text(name, "line one\nline two & more")
    typed = driver.find_element(By.NAME, name).get_property("value")  # this page's script swallows ENTER
    assert typed.startswith("line one")
    assert typed.endswith("line two & more")
    assert read(driver, name, "textarea")[0] == "line one\nline two &amp; more"  # innerHTML: entities stay


def test_modify_radio_selects_by_value_and_retries_floats_as_ints(driver, real_pages):
    _, name = first_real_field(driver, real_pages, "radio")
    values = driver.execute_script(
        "return Array.from(document.getElementsByName(arguments[0])).map(e => e.value)", name
    )
    actions = Actions(driver)
    target = values[-1]
    assert actions.modify_radio(name, target) == f"self.actions.modify_radio('{name}', '{target}')"
    assert read(driver, name, "radio") == [target]
    numeric = next((value for value in values if value.lstrip("-").isdigit()), None)
    if numeric is not None:
        assert actions.modify_radio(name, float(numeric)) == f"self.actions.modify_radio('{name}', '{numeric}')"
        assert read(driver, name, "radio") == [numeric]
    assert actions.modify_radio(name, "nan").endswith("'nan')")  # no-op
    with pytest.raises(ActionError, match="has the value 'no such value'"):
        actions.modify_radio(name, "no such value")


def test_modify_checkbox_clicks_the_listed_boxes_and_a_second_call_toggles_them_off(driver, real_pages):
    task, name = first_real_field(driver, real_pages, "checkbox")
    values = driver.execute_script(
        "return Array.from(document.getElementsByName(arguments[0])).filter(e => e.type == 'checkbox')"
        ".map(e => e.value)",
        name,
    )
    wanted = values[:2]
    actions = Actions(driver)
    call = actions.modify_checkbox(name, "|".join(wanted))
    assert call == f"self.actions.modify_checkbox('{name}', '{'|'.join(wanted)}')"
    assert sorted(read(driver, name, "checkbox")) == sorted(wanted), task
    actions.modify_checkbox(name, wanted)  # a list works too; the clicks toggle the boxes back off
    assert read(driver, name, "checkbox") == []


def test_modify_select_chooses_an_option_and_refuses_a_value_that_is_not_one(driver, real_pages):
    _, name = first_real_field(driver, real_pages, "select")
    options = driver.execute_script(
        "return Array.from(document.getElementsByName(arguments[0])[0].options).map(o => o.value)", name
    )
    actions = Actions(driver)
    assert actions.modify_select(name, options[-1]) == f"self.actions.modify_select('{name}', '{options[-1]}')"
    assert read(driver, name, "select") == [options[-1]]
    with pytest.raises(ActionError, match="is not among the option values"):
        actions.modify_select(name, "surely not an option")
    assert read(driver, name, "select") == [options[-1]]


def test_modify_range_sets_property_and_attribute_and_refuses_non_numbers(driver, real_pages):
    _, name = first_real_field(driver, real_pages, "range")
    actions = Actions(driver)
    element = driver.find_element(By.NAME, name)
    assert actions.modify_range(name, "2") == f"self.actions.modify_range('{name}', '2')"
    assert read(driver, name, "range") == ["2"] == [element.get_property("value")]
    actions.modify_range(name, 1e9)  # past max: the attribute gets what the control kept, as the property
    assert read(driver, name, "range") == [element.get_property("value")] == [element.get_attribute("max")]
    with pytest.raises(ActionError, match="takes a number"):
        actions.modify_range(name, "alert(1)")


def test_visual_actions_click_type_scroll_and_capture(driver, form_pages):
    load(driver, form_pages.url("Form task", 0))
    actions = Actions(driver)
    radio = driver.find_element(By.CSS_SELECTOR, "input[name=grade][value='1']")
    box = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]", radio
    )
    assert actions.click(*box) == f"self.actions.click({box[0]!r}, {box[1]!r})"
    assert read(driver, "grade", "radio") == ["1"]
    field = driver.find_element(By.NAME, "name")
    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.x + 5, r.y + r.height / 2]", field
    )
    actions.click(*rect)
    assert actions.type("typed by keys") == "self.actions.type('typed by keys')"
    assert read(driver, "name", "text") == ["typed by keys"]  # mirrored into the attribute the scorer reads
    driver.execute_script("document.body.style.minHeight = '3000px'")
    assert actions.scroll(0, 120) == "self.actions.scroll(0, 120)"
    assert driver.execute_script("return window.scrollY") == 120
    png = actions.capture_screen()
    assert png.startswith(b"\x89PNG")
    assert actions.take_full_screenshot() == "self.actions.take_full_screenshot()"
    assert actions.last_image.startswith(b"\x89PNG")
    assert actions.take_element_screenshot("story") == "self.actions.take_element_screenshot('story')"
    assert "mturk_form" in actions.get_html(form_pages.url("Form task", 0))


class FailsHalfway(Solver):
    """Changes each field, then raises: the harness must put the field back."""

    name = "fails-halfway"

    def __init__(self):
        self.seen = []

    def solve(self, request):
        self.seen.append((request.name, request.gold, len(request.relevant_html) > 0))
        if request.type in ("text", "textarea"):
            request.actions.modify_text(request.name, "half done")
        elif request.type == "checkbox":
            request.actions.execute_js_command("document.getElementsByName(arguments[0])[0].click()", request.name)
        raise RuntimeError("model timed out")


def test_a_solver_that_raises_leaves_the_field_untouched_and_the_run_goes_on(driver, form_pages):
    data = form_pages.dataset
    solver = FailsHalfway()
    result = Harness(driver, solver).run_instance(data.task("Form task"), 1, form_pages.url("Form task", 1))
    fields = {f.field: f for f in result.fields}
    assert fields["tags"].prediction == ""
    assert fields["tags"].score == 1.0
    assert fields["tags"].error == "RuntimeError: model timed out"
    assert read(driver, "name", "text") == [""]
    assert driver.find_element(By.NAME, "name").get_property("value") == ""
    assert fields["name"].calls == ["self.actions.modify_text('name', 'half done')"]
    names = [name for name, _, _ in solver.seen]
    assert "secret" not in names
    assert "hidden_text" not in names
    assert all(gold is None for _, gold, _ in solver.seen)  # only the oracle sees gold
    assert all(has_html for _, _, has_html in solver.seen)
    assert fields["not_in_page"].skipped == "not on the page"


def test_fields_are_ordered_top_to_bottom_then_left_to_right_with_visible_ones_first():
    found = [
        {"name": "low", "found": True, "type": "text", "x": 0, "y": 300, "displayed": True},
        {"name": "hidden", "found": True, "type": "hidden", "x": 0, "y": 0, "displayed": False},
        {"name": "right", "found": True, "type": "text", "x": 200, "y": 100.4, "displayed": True},
        {"name": "left", "found": True, "type": "text", "x": 10, "y": 100, "displayed": True},
        {"name": "csrfmiddlewaretoken", "found": True, "type": "hidden", "x": 0, "y": 0, "displayed": False},
        {"name": "gone", "found": False},
    ]
    assert [f.name for f in order_fields(found)] == ["left", "right", "low", "hidden"]
