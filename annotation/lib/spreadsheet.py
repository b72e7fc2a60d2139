"""CSV files a person may open in a spreadsheet: every CSV the platform writes goes through ``writer`` (results CSV,
agreement tables, statistics, activity and pay, the TurkingBench export's ``batch.csv``), and every CSV it reads back
(decisions uploaded in the results CSV, a batch's CSV, an exported ``batch.csv``) through ``unescape_row``.

A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading ``'`` (a plain
number such as ``-5`` stays as it is), and read back without it: the rule is ``agents.cells`` (the TurkingBench
reader of ``agents``, which has no Django, undoes it too). docs/security.md, "Spreadsheet formulas".
"""

import csv

from agents.cells import escape_cell, may_hold_escaped, unescape_cell

__all__ = [
    "escape_cell",
    "may_hold_escaped",
    "unescape_cell",
    "cell_text",
    "exact_text",
    "unescape_row",
    "writer",
    "Writer",
]


def cell_text(value) -> str:
    """A value as the cell written: ``None`` empty, numbers as ``str`` gives them, formula-like text escaped."""
    return escape_cell("" if value is None else value if isinstance(value, str) else str(value))


def exact_text(value) -> str:
    """A value as written verbatim (``Writer(escape=False)``): ``None`` empty, numbers as ``str`` gives them."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def unescape_row(row: list) -> list:
    return [unescape_cell(cell) for cell in row]


class Writer:
    """``csv.writer`` whose every cell goes through ``cell_text`` (``escape=False``: ``exact_text``, cells verbatim,
    for a file only tools that are not spreadsheets read: the TurkingBench export's *exact cells*).

    Python's writer quotes a cell for the characters of its own line terminator only: with ``\n`` line ends (the
    TurkingBench export, the agreement tables) a cell holding a lone carriage return was written bare, and every
    reader split the row there. Such a row is written with every cell quoted."""

    def __init__(self, handle, escape=True, **options):
        self.text = cell_text if escape else exact_text
        self.csv = csv.writer(handle, **options)
        bare_cr = "\r" not in options.get("lineterminator", "\r\n") and options.get("quoting") != csv.QUOTE_ALL
        self.quoted = csv.writer(handle, **{**options, "quoting": csv.QUOTE_ALL}) if bare_cr else None

    def writerow(self, row):
        cells = [self.text(value) for value in row]
        if self.quoted is not None and any("\r" in cell for cell in cells):
            return self.quoted.writerow(cells)
        return self.csv.writerow(cells)

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(handle, escape=True, **options) -> Writer:
    """The platform's CSV writer: ``csv.writer(handle, **options)`` with formula-like cells escaped (unless
    ``escape=False``)."""
    return Writer(handle, escape, **options)
