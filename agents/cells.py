"""Spreadsheet formulas in CSV cells: the escaping the platform writes and its exact inverse (pure).

A spreadsheet runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` as a formula (and some take a tab or a
carriage return before one), so a worker's answer ``=HYPERLINK("https://…")`` in a results CSV would run on the
requester's machine. Every CSV the platform writes (``annotation.lib.spreadsheet``: results, agreement, statistics,
the TurkingBench export's ``batch.csv``) writes such a cell with a leading ``'``, which spreadsheets show as text;
a plain number (``-5``, ``+3.2``, ``1e-3``) stays a number. A cell that is only apostrophes before such a start
(``'=x``) gets one more, so the escaping is one-to-one and ``unescape_cell`` gives back exactly what was written:
the platform's readers (a results CSV uploaded back, a batch imported, ``agents.turkle`` reading an export) use it.

Here, not in the platform, because ``agents.turkle`` (importable without Django) reads the export too.
"""

import re

STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")
# Text that holds an escaped cell holds an apostrophe right before one of these (a fast test for a whole file).
ESCAPED = re.compile(r"'['=+\-@\t\r]")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet would read ``text`` as a formula (a plain number is a number, not a formula)."""
    return text[:1] in STARTS and not NUMBER.match(text)


def guarded(text: str) -> bool:
    """Whether ``text`` is written with a leading ``'``: formula-like once its leading apostrophes are set aside."""
    return formula_like(text.lstrip("'"))


def escape_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text (see the module)."""
    return "'" + text if guarded(text) else text


def unescape_cell(text: str) -> str:
    """The exact inverse of ``escape_cell``: ``'=x`` → ``=x``, ``''=x`` → ``'=x``; anything else as it is."""
    return text[1:] if text[:1] == "'" and guarded(text[1:]) else text


def may_hold_escaped(text: str) -> bool:
    """False when no cell of ``text`` (a whole CSV) can be an escaped one: its readers then skip the cells."""
    return ESCAPED.search(text) is not None
