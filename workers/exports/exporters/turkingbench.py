"""The TurkingBench export (pure): ``tasks/<batch name>/template.html`` + ``batch.csv`` per batch, and
``splits/<list>.txt``, the layout TurkingBench's own tools read (``src/2_generate_input_csv.py``, the evaluator).

``batch.csv`` is written like TurkingBench's: UTF-8 with a BOM, ``\\n`` line ends, the bare input columns and the
``Answer.<field>`` columns in the order of the uploaded file (new answer fields after them, sorted), one row per
answer row: the imported gold rows (when asked for, in their file order) and every submitted assignment, a name
submitted several times joined with ``|``. A cell a spreadsheet would run as a formula is written with a leading ``'``
(``annotation.lib.spreadsheet``; ``agents.turkle`` and the import read it back without), unless the export asks for
*exact cells* (``exact=True``): then every cell is written verbatim, as TurkingBench's own tools read it, and the file
is not safe to open in a spreadsheet. Nothing here reads the database: ``workers.exports.form_dataset`` does.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from annotation.lib import spreadsheet

FORMAT = "turkingbench"


@dataclass
class ExportBatch:
    """One form batch ready for export: ``rows`` are ``{column: cell}`` dicts, in order."""

    name: str
    template: str
    columns: list
    rows: Iterable = field(default_factory=list)


def write_batch(out: Path, batch: ExportBatch, exact: bool = False) -> int:
    """Write one task directory; returns the number of CSV rows written. ``exact``: cells verbatim (not escaped)."""
    folder = out / "tasks" / batch.name
    folder.mkdir(parents=True, exist_ok=False)
    with (folder / "template.html").open("w", encoding="utf-8", newline="") as handle:
        handle.write(batch.template)
    written = 0
    with (folder / "batch.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        writer = spreadsheet.writer(handle, escape=not exact, lineterminator="\n")
        writer.writerow(batch.columns)
        for row in batch.rows:
            writer.writerow([row.get(column, "") for column in batch.columns])
            written += 1
    return written


def write_split_lists(out: Path, lists: dict) -> None:
    """``splits/<name>.txt``: one task name a line, as TurkingBench ships them."""
    if not lists:
        return
    folder = out / "splits"
    folder.mkdir(parents=True, exist_ok=True)
    for name, tasks in sorted(lists.items()):
        (folder / f"{name}.txt").write_text("".join(f"{task}\n" for task in tasks), encoding="utf-8")


def export(
    batches: Iterable[ExportBatch],
    out: Path,
    split_lists: dict,
    progress: Callable[[int], None] = lambda done: None,
    exact: bool = False,
) -> dict:
    """Write every batch and the split lists under ``out``; returns ``{"batches", "rows", "per_batch"}``.
    ``exact``: ``batch.csv`` cells verbatim (``write_batch``)."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {"batches": 0, "rows": 0, "per_batch": {}}
    for batch in batches:
        rows = write_batch(out, batch, exact)
        counts["batches"] += 1
        counts["rows"] += rows
        counts["per_batch"][batch.name] = rows
        progress(counts["batches"])
    write_split_lists(out, split_lists)
    return counts
