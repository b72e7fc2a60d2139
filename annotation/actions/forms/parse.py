"""Reading an uploaded form batch: the HTML template and the CSV, checked the way Turkle checks them, with every
problem named (field, line) and nothing stored until all of it is valid.

- Template: UTF-8 (a BOM is fine), at most ``FORM_TEMPLATE_MAX_BYTES`` (413 above), at least one
  ``input``/``select``/``textarea``. Its ``${name}`` placeholders (Turkle's ``\\$\\{(\\w+)\\}``) are the fields the
  CSV must provide.
- CSV: UTF-8 (a BOM is fine), at most ``FORM_CSV_MAX_BYTES``, a header of distinct, non-empty names, every row as
  long as the header (blank lines are skipped), at least one row. ``Answer.<field>`` columns are gold answers;
  every other column is an input (TurkingBench: Title, Description and Keywords too).
- Instances: rows with the same input values are one task (TurkingBench's instance identity), numbered in file
  order; each row's ``Answer.*`` cells are one gold entry of that task, ``a|b`` becoming ``["a", "b"]``.
"""

import contextlib
import csv
import gc
import io
import operator
import re
from dataclasses import dataclass, field

import lxml.html
from django.conf import settings
from django.db import connection
from lxml.etree import ParserError

from agents.turkle import PLACEHOLDER as FIELD  # Turkle's Project.process_template: one regex for both

from ...lib import spreadsheet
from ..errors import TooLarge, ValidationFailed, invalid

CONTROLS = ("input", "select", "textarea")
ANSWER = "Answer."
MULTI = "|"  # MTurk / TurkingBench: several values of one name in one cell
BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")
MAX_NAME_BYTES = 255  # a folder name (the batch's in a TurkingBench export) on common file systems


@dataclass(frozen=True)
class TemplateInfo:
    """What the platform needs to know about a template."""

    fields: tuple  # ${name} placeholders, sorted
    has_submit_button: bool
    uses_crowd_elements: bool
    control_names: frozenset  # name= of the static input/select/textarea elements
    has_controls: bool = True
    hidden_names: frozenset = frozenset()  # names whose every static control is an <input type=hidden>


@dataclass
class ParsedTask:
    index: int
    inputs: dict
    gold: list = field(default_factory=list)


@dataclass
class ParsedBatch:
    """A template and a CSV that passed every check, ready to be stored."""

    template: str
    info: TemplateInfo
    csv_filename: str
    columns: list
    tasks: list  # ParsedTask, in instance order
    rows: int  # data rows read

    @property
    def answer_columns(self) -> list:
        return [c for c in self.columns if c.startswith(ANSWER)]


def check_size(field_name: str, data: bytes, limit: int, setting: str) -> None:
    if len(data) > limit:
        message = f"{len(data)} bytes is over the limit of {limit} bytes ({setting})"
        raise TooLarge(f"{field_name}: {message}", [{"field": field_name, "message": message}])


def decode(field_name: str, data: bytes) -> str:
    """UTF-8 text without its BOM; a clear error naming the line of the first bad byte otherwise."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise invalid(
            field_name, f"is not UTF-8: byte 0x{data[error.start]:02x} on line {line} cannot be decoded"
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise invalid(field_name, f"contains a NUL character on line {line}")
    return text


def analyse_template(text: str) -> TemplateInfo:
    """Placeholders, submit button (Turkle: ``input``/``button`` with ``type=submit``), crowd elements, controls."""
    try:
        root = lxml.html.document_fromstring(text)
    except (ParserError, ValueError):
        root = None
    controls = list(root.iter(*CONTROLS)) if root is not None else []
    submit = any(
        (element.get("type") or "").strip().lower() == "submit"
        for element in (root.iter("input", "button") if root is not None else ())
    )
    return TemplateInfo(
        fields=tuple(sorted(set(FIELD.findall(text)))),
        has_submit_button=submit,
        uses_crowd_elements=bool(re.search(r"<crowd-", text, re.IGNORECASE)),
        control_names=frozenset(c.get("name") for c in controls if c.get("name")),
        has_controls=bool(controls),
        hidden_names=hidden_only(controls),
    )


def hidden_only(controls: list) -> frozenset:
    """The names all of whose controls are ``<input type=hidden>`` (never displayed, so never scored)."""
    kinds: dict[str, set] = {}
    for control in controls:
        if control.get("name"):
            hidden = control.tag == "input" and (control.get("type") or "").strip().lower() == "hidden"
            kinds.setdefault(control.get("name"), set()).add(hidden)
    return frozenset(name for name, seen in kinds.items() if seen == {True})


def parse_template(data: bytes) -> tuple[str, TemplateInfo]:
    check_size("template", data, settings.FORM_TEMPLATE_MAX_BYTES, "FORM_TEMPLATE_MAX_BYTES")
    text = decode("template", data)
    info = analyse_template(text)
    if not info.has_controls:
        raise invalid("template", "has no input, select or textarea element: there is nothing to answer")
    return text, info


def check_header(header: list) -> None:
    seen = set()
    for number, name in enumerate(header, start=1):
        if not name.strip():
            raise invalid("csv", f"column {number} of the header has no name")
        if name in seen:
            raise invalid("csv", f"column {name!r} appears twice in the header")
        seen.add(name)


def csv_reader(text: str):
    csv.field_size_limit(max(settings.FORM_CSV_MAX_BYTES, 131072))
    return csv.reader(io.StringIO(text, newline=""), strict=True)


def answer_value(cell: str):
    return cell.split(MULTI) if MULTI in cell else cell


@contextlib.contextmanager
def no_cyclic_gc():
    """Python's cyclic garbage collector off while a million small containers are made: none of them form cycles,
    and its passes over an ever larger heap took two thirds of a large CSV's parse."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def row_limit() -> int | None:
    """Rows a batch may have: ``FORM_SQLITE_MAX_ROWS`` on SQLite, where storing them holds the database's only
    write lock (every other user's writes wait); none on PostgreSQL."""
    return settings.FORM_SQLITE_MAX_ROWS if connection.vendor == "sqlite" else None


def too_many_rows(limit: int) -> TooLarge:
    message = (
        f"has more than {limit} rows, the limit of a batch on SQLite (FORM_SQLITE_MAX_ROWS); split it into "
        "several batches, or run the platform on PostgreSQL, which has no such limit"
    )
    return TooLarge(f"csv: {message}", [{"field": "csv", "message": message}])


def group_instances(
    header: list, reader, limit: int | None = None, unescape: bool = False
) -> tuple[list[ParsedTask], int]:
    """The rows after the header, in one pass: one task per distinct tuple of input values, in file order; each
    row's answers are a gold entry. Returns the tasks and the number of (non-blank) rows; more than ``limit`` rows
    is a 413 as soon as the row after the limit is read. ``unescape``: undo the platform's formula escaping of
    each cell (``annotation.lib.spreadsheet``)."""
    width, inputs = len(header), [i for i, name in enumerate(header) if not name.startswith(ANSWER)]
    answers = [(i, name[len(ANSWER) :]) for i, name in enumerate(header) if name.startswith(ANSWER)]
    names = [header[i] for i in inputs]
    key_of = operator.itemgetter(*inputs) if len(inputs) > 1 else lambda row: tuple(row[i] for i in inputs)
    tasks: dict[tuple, ParsedTask] = {}
    number, line = 0, reader.line_num + 1
    try:
        for row in reader:
            if row:
                if number == limit:
                    raise too_many_rows(limit)
                if len(row) != width:
                    raise invalid("csv", f"line {line} has {len(row)} fields; the header has {width}")
                if unescape:
                    row = spreadsheet.unescape_row(row)
                key = key_of(row)
                task = tasks.get(key)
                if task is None:
                    task = tasks[key] = ParsedTask(len(tasks), dict(zip(names, key, strict=True)))
                if answers:
                    gold = {name: answer_value(row[i]) for i, name in answers}
                    task.gold.append({"row": number, "answers": gold})
                number += 1
            line = reader.line_num + 1
    except csv.Error as error:
        raise invalid("csv", f"line {line}: {error}") from None
    return list(tasks.values()), number


def check_fields(info: TemplateInfo, header: list) -> None:
    missing = [name for name in info.fields if name not in header]
    if missing:
        listed = ", ".join("${" + name + "}" for name in missing)
        raise ValidationFailed(
            f"csv: the template uses {listed}, which the CSV has no column for",
            [
                {"field": "csv", "message": f"missing column {name!r} (the template uses ${{{name}}})"}
                for name in missing
            ],
        )


def parse_csv(data: bytes, info: TemplateInfo) -> tuple[list, list[ParsedTask], int]:
    """The CSV's header and tasks, its cells as written before the platform's formula escaping (an exported
    ``batch.csv`` or results CSV imports back as it was; a file with no escaped cell is read as it is, at full
    speed)."""
    check_size("csv", data, settings.FORM_CSV_MAX_BYTES, "FORM_CSV_MAX_BYTES")
    text = decode("csv", data)
    unescape = spreadsheet.may_hold_escaped(text)
    reader = csv_reader(text)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise invalid("csv", f"line 1: {error}") from None
    if not header:
        raise invalid("csv", "is empty: expected a header row")
    header = spreadsheet.unescape_row(header) if unescape else header
    check_header(header)
    check_fields(info, header)
    with no_cyclic_gc():
        tasks, rows = group_instances(header, reader, row_limit(), unescape)
    if not rows:
        raise invalid("csv", "has a header but no rows: a batch needs at least one task")
    return header, tasks, rows


def parse_batch(template: bytes, csv_data: bytes, csv_filename: str = "batch.csv") -> ParsedBatch:
    """Check a template and a CSV together; raises ``ValidationFailed`` (400) or ``TooLarge`` (413)."""
    text, info = parse_template(template)
    header, tasks, rows = parse_csv(csv_data, info)
    return ParsedBatch(text, info, csv_filename, header, tasks, rows)


def check_batch_name(name) -> str:
    """A batch name usable as a directory name in exports (TurkingBench task names have spaces, brackets, ...)."""
    if not isinstance(name, str) or not name.strip():
        raise invalid("name", "must not be empty")
    if len(name) > 200:
        raise invalid("name", f"is {len(name)} characters long; at most 200")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:  # an export's folder: 255 bytes at most
        raise invalid("name", f"is {len(name.encode('utf-8', 'surrogatepass'))} bytes in UTF-8; at most 255")
    if BAD_NAME.search(name) or name.strip() in (".", ".."):
        raise invalid("name", "must not contain '/', '\\' or control characters, nor be '.' or '..'")
    return name


# --- Uploaded files (the upload page and the API) -------------------------------------------------------------


def read_upload(upload, limit: int, field: str, setting: str) -> bytes:
    """An uploaded file's bytes (a Django ``UploadedFile``: the upload page's form and ``POST /api/batches/``); 413
    naming the field when it is over ``limit`` (read no further than that)."""
    if upload.size is not None and upload.size > limit:
        message = f"{upload.size} bytes is over the limit of {limit} bytes ({setting})"
        raise TooLarge(f"{field}: {message}", [{"field": field, "message": message}])
    upload.seek(0)
    data = upload.read(limit + 1)
    if len(data) > limit:
        message = f"over the limit of {limit} bytes ({setting})"
        raise TooLarge(f"{field}: {message}", [{"field": field, "message": message}])
    return data


def parse_upload(template, csv_file):
    """Both files read within their limits and checked together (``parse_batch``)."""
    template_bytes = read_upload(template, settings.FORM_TEMPLATE_MAX_BYTES, "template", "FORM_TEMPLATE_MAX_BYTES")
    csv_bytes = read_upload(csv_file, settings.FORM_CSV_MAX_BYTES, "csv", "FORM_CSV_MAX_BYTES")
    return parse_batch(template_bytes, csv_bytes, csv_file.name or "batch.csv")
