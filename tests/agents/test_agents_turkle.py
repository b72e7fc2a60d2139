"""Task directories: instances, gold answers and Turkle-style pages, read as the official code reads them."""

import math

import pytest

from agents.turkle import Dataset, TaskDir, fill_template, has_submit_button, template_fields, wrap_page
from tests.support.agents_data import form_dataset, real_data, write_task


def test_instances_are_distinct_inputs_in_file_order_with_every_annotator_in_gold(tmp_path):
    task = form_dataset(tmp_path).task("Form task")
    assert len(task) == 2
    assert task.field_names[:3] == ["name", "story", "grade"]
    gold = task.gold(0)
    assert gold["name"] == ["Ann", "ann"]
    assert gold["grade"] == [-1.0, -1.0]  # the column is numeric with a blank cell: floats, as pandas infers
    assert gold["level"] == [4, 6]
    assert gold["tags"] == ["b|a", "a"]
    assert math.isnan(task.gold(1)["name"][0])
    assert task.instructions(0) == "Form\nFill the form"
    with pytest.raises(IndexError, match="has 2 instances"):
        task.gold(2)


def test_rows_with_a_blank_input_still_find_their_instance(tmp_path):
    write_task(
        tmp_path, "t", "<input name='a'>", ["x", "y", "Answer.a"], [["1", "", "p"], ["1", "", "q"], ["2", "", "r"]]
    )
    task = Dataset(tmp_path).task("t")
    assert len(task) == 2
    assert task.gold(0)["a"] == ["p", "q"]


def test_values_fill_placeholders_raw_in_header_order_as_input_csv_writes_them(tmp_path):
    write_task(
        tmp_path,
        "t",
        "<b>${a}</b><i>${b}</i>${missing}<input name='x'>",
        ["a", "b", "Answer.x"],
        [["${b}", "3.0", ""], ["<em>&</em>", "4", ""]],
    )
    task = Dataset(tmp_path).task("t")
    assert task.fragment(0) == "<b>3.0</b><i>3.0</i>${missing}<input name='x'>"
    assert task.fragment(1) == "<b><em>&</em></b><i>4.0</i>${missing}<input name='x'>"  # a float column: 4.0
    assert template_fields(task.template) == {"a", "b", "missing"}


def test_preview_page_wraps_the_fragment_in_turkles_form_with_a_disabled_submit_button():
    page = wrap_page("<input name='q'>")
    assert '<form name="mturk_form" method="post" id="mturk_form"' in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert 'id="submitButton"' in page
    assert "disabled" in page
    assert 'id="submitButton"' not in wrap_page("<input type='SUBMIT' name='go'>")
    assert "disabled" not in wrap_page("<input name='q'>", preview=False)
    assert has_submit_button("<p><input type=submit></p>")
    assert not has_submit_button("<button type=submit>go</button>")  # the fork looks at inputs only
    assert fill_template("${a}${a}", {"a": "x"}) == "xx"


def test_splits_list_their_tasks_and_train_is_the_rest(tmp_path):
    for name in ("one", "two", "three"):
        write_task(tmp_path, name, "<input name='a'>", ["x", "Answer.a"], [["1", "p"]])
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "evaluation_tasks_easy.txt").write_text("two\nmissing\none\n")
    data = Dataset(tmp_path)
    assert data.split("test_easy") == ["two", "one"]
    assert data.split("train") == ["three"]
    assert data.split_names() == ["test_easy"]
    with pytest.raises(KeyError, match="unknown split 'test_hard'"):
        data.split("test_hard")


def test_real_tasks_load_with_their_answer_fields():
    data = real_data()
    easy = data.split("test_easy")
    assert len(easy) == 19
    task = TaskDir.load(data.root / "tasks" / "Ethical rule-of-thumb quality")
    assert len(task) == 10
    assert task.gold(0)["action-fwd-good"][:2] == [0.0, 0.0]
    filled = task.fragment(0)
    assert all("${" + name + "}" not in filled for name in task.input_columns)
