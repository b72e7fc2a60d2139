"""Task directories built by the tests, and the real TurkingBench data (``TURKINGBENCH_DATA``) when it is set."""

import csv
import io
from pathlib import Path

from agents.turkle import Dataset
from tests.support.forms_data import turkingbench_root


def write_task(root: Path, name: str, template: str, header: list[str], rows: list[list[str]]) -> Path:
    """``root/tasks/<name>/{template.html,batch.csv}``; the CSV with a BOM, as the real files."""
    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    (folder / "template.html").write_text(template, encoding="utf-8")
    with (folder / "batch.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return folder


def real_data() -> Dataset:
    """The real tasks; the test is skipped, naming the variable, when ``TURKINGBENCH_DATA`` is unset."""
    return Dataset(turkingbench_root())


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    """A batch CSV as text (for uploads through the platform's own parser)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    return out.getvalue()


# A form with one field of each type the scorer knows, and the state a person leaves it in per instance.
FORM = """
<p>${question}</p>
<input type="text" name="name" value="">
<textarea name="story"></textarea>
<label><input type="radio" name="grade" value="-1">-1</label>
<label><input type="radio" name="grade" value="0">0</label>
<label><input type="radio" name="grade" value="1">1</label>
<label><input type="checkbox" name="tags" value="a">a</label>
<label><input type="checkbox" name="tags" value="b">b</label>
<label><input type="checkbox" name="tags" value="c">c</label>
<label><input type="checkbox" name="agree">agree (no value: submits "on")</label>
<select name="colour">
  <option value="NA">pick</option><option value="red">red</option><option value="2">two</option>
</select>
<input type="range" name="level" min="0" max="10" value="5">
<input type="hidden" name="secret" value="">
<div style="display:none"><input type="text" name="hidden_text"></div>
<div id="late"></div>
<script>
  const input = document.createElement('input');
  input.type = 'radio'; input.name = 'scripted'; input.value = 'yes';
  document.getElementById('late').appendChild(input);
</script>
"""
FORM_FIELDS = [
    "name",
    "story",
    "grade",
    "tags",
    "agree",
    "colour",
    "level",
    "secret",
    "hidden_text",
    "scripted",
    "not_in_page",
]
FORM_HEADER = ["Title", "Description", "question"] + [f"Answer.{name}" for name in FORM_FIELDS]
FORM_ROWS = [
    # instance 0: two annotators
    [
        "Form",
        "Fill the form",
        "What is it?",
        "Ann",
        "A story &amp; more",
        "-1",
        "b|a",
        "on",
        "red",
        "4",
        "s",
        "h",
        "yes",
        "x",
    ],
    ["Form", "Fill the form", "What is it?", "ann", "A story", "-1", "a", "", "red", "6", "s", "h", "yes", "x"],
    # instance 1: one annotator who left most things blank
    ["Form", "Fill the form", "Second ${question}", "", "", "", "", "", "2", "0", "", "", "", ""],
]


def form_dataset(root: Path) -> Dataset:
    write_task(root, "Form task", FORM, FORM_HEADER, FORM_ROWS)
    return Dataset(root)
