"""The quality report every export writes beside its data: ``quality.json`` (documented in docs/quality.md).

One writer for every format. The exporter of a format gathers one dict per exported item (a demonstration, a form
task) and hands them here; this module adds the header and the totals and writes the file. Shape::

    {"format": "weblinx", "project": "demo", "generated_at": "2026-11-27T12:00:00+00:00",
     "totals": {"items": 12, "by_status": {"validated": 10, "accepted": 2}, ...},
     "items": [{"id": "...", "kind": "demo", "status": "validated", ...}, ...]}

Each item carries at least ``id`` (the name the item has in the export's data), ``kind`` (``demo`` or ``task``)
and ``status`` (its review outcome); the rest is the format's figures. ``extra_totals`` adds format-wide figures
to ``totals`` (for example agreement over a batch).
"""

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from .jsontext import indented

QUALITY_FILE = "quality.json"


def quality_report(format: str, project: str, items: Iterable[dict], extra_totals: dict | None = None) -> dict:
    """The report as a dict (what ``write_quality_report`` writes)."""
    items = list(items)
    for item in items:
        missing = {"id", "kind", "status"} - item.keys()
        if missing:
            raise ValueError(f"a quality item needs {sorted(missing)}: {item!r}")
    totals = {"items": len(items), "by_status": dict(sorted(Counter(str(i["status"]) for i in items).items()))}
    totals.update(extra_totals or {})
    return {
        "format": format,
        "project": project,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "totals": totals,
        "items": items,
    }


def write_quality_report(
    out: Path, format: str, project: str, items: Iterable[dict], extra_totals: dict | None = None
) -> dict:
    """Write ``out/quality.json`` and return its ``totals`` (an export job keeps them in ``counts["quality"]`` for
    the export page's summary)."""
    report = quality_report(format, project, items, extra_totals)
    text = indented(report, 3, ensure_ascii=False, allow_nan=False)  # an item a line
    (Path(out) / QUALITY_FILE).write_text(text + "\n")
    return report["totals"]
