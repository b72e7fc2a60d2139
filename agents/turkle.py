"""Turkle-compatible task pages from a TurkingBench task directory, without Django.

A task directory holds ``template.html`` (an MTurk-style HTML fragment with ``${var}`` placeholders) and
``batch.csv`` (inputs under their bare names, gold answers as ``Answer.<field>``, one row per annotator). This
module reads them as the official evaluator does and renders a page as Turkle (the klxu03 fork TurkingBench uses)
serves it. See ``docs/agents.md`` and the TurkingBench spec §1–2.

- **Reading** (``TaskDir.load``): ``pandas.read_csv`` with default dtype inference, as ``retrieve_gold_labels``
  does, so gold values are the same Python objects the official scorer compares (``4.0`` for a numeric column,
  ``nan`` for an empty cell); a cell the platform's export escaped for spreadsheets reads as it was
  (``agents.cells``). An instance is a distinct tuple of all non-``Answer.`` columns, numbered in
  ``drop_duplicates`` order; its gold for a field is the column's values over the instance's rows, in file order.
- **Rendering** (``render_page``): each CSV value as pandas writes ``input.csv`` (``3.0`` stays ``3.0``, an empty
  cell is empty) replaces ``${column}`` in header order, raw, with no escaping (Turkle's ``str.replace``). The
  fragment goes inside ``<form name="mturk_form" id="mturk_form" method="post">`` after a hidden
  ``csrfmiddlewaretoken`` input; in preview a disabled ``#submitButton`` is appended when the template has no
  ``input[type=submit]`` (the fork's BeautifulSoup test).
"""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import lxml.html

from . import cells, lazy, vendor

if TYPE_CHECKING:  # pandas loads when a batch is read (agents.lazy)
    import pandas as pd

ANSWER_PREFIX = "Answer."
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
# MTurk HIT metadata columns: the batch's title and description are the closest thing to task instructions.
INSTRUCTION_COLUMNS = ("Title", "Description")


def template_fields(template: str) -> set[str]:
    """The ``${name}`` placeholders Turkle recognises (``\\w+`` names only)."""
    return set(PLACEHOLDER.findall(template))


def has_submit_button(template: str) -> bool:
    """Whether the fragment has its own ``<input type=submit>`` (Turkle then adds none)."""
    if not template.strip():
        return False
    root = lxml.html.fragment_fromstring(template, create_parent="div")
    return any((element.get("type") or "").strip().lower() == "submit" for element in root.iter("input"))


def fill_template(template: str, values: dict[str, str]) -> str:
    """Replace ``${column}`` by its value for every column in order, raw (no HTML or JS escaping).

    Sequential ``str.replace`` like Turkle's ``populate_html_template``: a value that itself contains
    ``${other}`` is filled by a later column, and placeholders with no column stay as they are."""
    result = template
    for name, value in values.items():
        result = result.replace("${" + name + "}", value)
    return result


def wrap_page(fragment: str, *, preview: bool = True, submit_button: bool | None = None, action: str = "#") -> str:
    """A whole page around a filled fragment, as Turkle's ``preview_iframe.html`` / ``task_assignment_iframe.html``.

    ``submit_button``: append Turkle's ``#submitButton`` (default: when the fragment has none); it is disabled in
    preview."""
    if submit_button is None:
        submit_button = not has_submit_button(fragment)
    button = ""
    if submit_button:
        state = (
            'disabled value="You must ACCEPT the Task before you can submit the results."'
            if preview
            else 'value="Submit"'
        )
        button = (
            '\n<p class="text-center">\n<input type="submit" id="submitButton" class="btn btn-primary" '
            f"{state} />\n</p>"
        )
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<title>Task</title>\n"
        '<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"/>\n</head>\n<body>\n'
        f'<form name="mturk_form" method="post" id="mturk_form" target="_parent" action="{html.escape(action)}">\n'
        '<input type="hidden" name="csrfmiddlewaretoken" value="turkingbench-preview">\n'
        f"{fragment}{button}\n</form>\n</body>\n</html>\n"
    )


def read_batch(path: Path) -> pd.DataFrame:
    """``batch.csv`` as the official evaluator reads it (default dtype inference), with the platform export's
    formula escaping undone (``agents.cells``: a cell ``'=x`` reads ``=x``; TurkingBench's own files have no such
    cell, so they read exactly as the evaluator reads them)."""
    pd = lazy.load("pandas")
    frame = pd.read_csv(path)
    if not cells.may_hold_escaped(path.read_text(encoding="utf-8-sig")):
        return frame
    frame.columns = [cells.unescape_cell(name) if isinstance(name, str) else name for name in frame.columns]
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):  # text columns: numbers are never escaped
            frame[column] = frame[column].map(unescaped)
    return frame


def unescaped(value):
    return cells.unescape_cell(value) if isinstance(value, str) else value


@dataclass
class TaskDir:
    """One TurkingBench task: its template, its batch and the distinct instances in it."""

    name: str
    path: Path
    template: str
    frame: pd.DataFrame = field(repr=False)

    @classmethod
    def load(cls, path: Path | str, name: str | None = None) -> TaskDir:
        path = Path(path)
        template = (path / "template.html").read_text(encoding="utf-8")
        return cls(name=name or path.name, path=path, template=template, frame=read_batch(path / "batch.csv"))

    @cached_property
    def input_columns(self) -> list[str]:
        return [column for column in self.frame.columns if not column.startswith(ANSWER_PREFIX)]

    @cached_property
    def field_names(self) -> list[str]:
        """The answer fields (``Answer.`` columns without the prefix), in column order."""
        return [column[len(ANSWER_PREFIX) :] for column in self.frame.columns if column.startswith(ANSWER_PREFIX)]

    @cached_property
    def _instance_of_row(self) -> list[int]:
        """For each CSV row, the index of its instance (first appearance order, as ``drop_duplicates``).

        Rows are compared by a hash of their input columns in which empty cells are equal, so an instance with an
        empty input still finds its rows (the official ``df.eq(row)`` never matches NaN and fails on them)."""
        pd = lazy.load("pandas")
        hashes = pd.util.hash_pandas_object(self.frame[self.input_columns], index=False).tolist()
        numbering: dict[int, int] = {}
        return [numbering.setdefault(value, len(numbering)) for value in hashes]

    @cached_property
    def _rows(self) -> list[list[int]]:
        rows: list[list[int]] = [[] for _ in range(max(self._instance_of_row, default=-1) + 1)]
        for row, instance in enumerate(self._instance_of_row):
            rows[instance].append(row)
        return rows

    def __len__(self) -> int:
        return len(self._rows)

    @cached_property
    def _input_values(self) -> list[dict[str, str]]:
        """Each instance's inputs as strings, written and read back as ``input.csv`` (so ``3.0`` stays ``3.0``)."""
        firsts = [rows[0] for rows in self._rows]
        buffer = io.StringIO()
        self.frame.iloc[firsts][self.input_columns].to_csv(buffer, index=False)
        buffer.seek(0)
        return list(csv.DictReader(buffer))

    def inputs(self, instance: int) -> dict[str, str]:
        """The instance's input values (column → string), in header order."""
        return self._input_values[self._check(instance)]

    def gold(self, instance: int) -> dict[str, list]:
        """Field name → the annotators' answers in file order, as pandas read them (NaN for an empty cell)."""
        rows = self._rows[self._check(instance)]
        subset = self.frame.iloc[rows]
        return {name: subset[ANSWER_PREFIX + name].tolist() for name in self.field_names}

    def instructions(self, instance: int = 0) -> str:
        """The HIT's title and description (MTurk metadata columns), the task's short instructions."""
        values = self.inputs(instance)
        return "\n".join(values[column] for column in INSTRUCTION_COLUMNS if values.get(column))

    def fragment(self, instance: int, scripts: str = vendor.ORIGINAL) -> str:
        return fill_template(vendor.rewrite(self.template, scripts), self.inputs(instance))

    def render_page(self, instance: int, *, preview: bool = True, scripts: str = vendor.VENDORED) -> str:
        """The whole preview page of an instance, as Turkle's preview iframe serves it; ``scripts``: the template's
        CDN libraries ``vendored`` (from ``/static/vendor/``, ``agents.vendor``) or ``original``."""
        fragment = self.fragment(instance, scripts)
        return wrap_page(fragment, preview=preview, submit_button=not has_submit_button(self.template))

    def _check(self, instance: int) -> int:
        if not isinstance(instance, int) or isinstance(instance, bool) or not 0 <= instance < len(self):
            raise IndexError(f"task {self.name!r} has {len(self)} instances (0 to {len(self) - 1}); got {instance!r}")
        return instance


SPLIT_FILES = {
    "test_easy": "evaluation_tasks_easy.txt",
    "test_hard": "evaluation_tasks_hard.txt",
    "subjective_test": "subjective_evaluation_tasks.txt",
}


class Dataset:
    """A TurkingBench directory: ``tasks/<name>/{template.html,batch.csv}`` and ``splits/*.txt`` (task names)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        if not (self.root / "tasks").is_dir():
            raise FileNotFoundError(f"{self.root} has no tasks/ directory (expected tasks/<name>/template.html)")
        self._loaded: dict[str, TaskDir] = {}

    def task_names(self) -> list[str]:
        """Every task directory with both files, sorted."""
        tasks = self.root / "tasks"
        return sorted(
            path.name
            for path in tasks.iterdir()
            if (path / "template.html").is_file() and (path / "batch.csv").is_file()
        )

    def task(self, name: str) -> TaskDir:
        if name not in self._loaded:
            if name not in self.task_names():
                raise KeyError(f"unknown task {name!r} in {self.root / 'tasks'}")
            self._loaded[name] = TaskDir.load(self.root / "tasks" / name, name)
        return self._loaded[name]

    def split_names(self) -> list[str]:
        folder = self.root / "splits"
        known = {file: split for split, file in SPLIT_FILES.items()}
        return sorted(known.get(path.name, path.stem) for path in folder.glob("*.txt")) if folder.is_dir() else []

    def split(self, split: str) -> list[str]:
        """The task names of a split, in file order, keeping only those present here (``train`` = the rest)."""
        present = self.task_names()
        if split == "all":
            return present
        if split == "train":
            listed = {name for other in SPLIT_FILES for name in self._split_file(other, required=False)}
            return [name for name in present if name not in listed]
        return [name for name in self._split_file(split, required=True) if name in present]

    def _split_file(self, split: str, required: bool) -> list[str]:
        path = self.root / "splits" / SPLIT_FILES.get(split, f"{split}.txt")
        if not path.is_file():
            if required:
                raise KeyError(f"unknown split {split!r}; {self.root / 'splits'} has: {', '.join(self.split_names())}")
            return []
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
