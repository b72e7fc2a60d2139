"""Research output for people: nested counts and score rows as tables, numbers rounded for reading.

Pure (no models, no Django): the export and evaluation pages turn what a job stored (``ExportJob.counts``,
``Evaluation.results``) into ``{"title", "columns", "rows"}`` tables their templates print as they are.
"""

from collections.abc import Mapping, Sequence

DECIMALS = 4


def number(value) -> str:
    """A count (an int) as a whole number (``11``, never ``11.0000``), a score (a float) with four decimals,
    anything else as text; None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{DECIMALS}f}"
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {number(inner)}" for key, inner in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(number(inner) for inner in value)
    return str(value)


def label(key) -> str:
    return str(key).replace("_", " ")


def count_tables(counts: Mapping) -> list[dict]:
    """``counts`` as tables: the top-level numbers in one (``Totals``), then one per nested mapping: a mapping of
    mappings (``per_split``: a row per split, a column per count), or of numbers (``per_batch``: a row each)."""
    totals = [[label(key), number(value)] for key, value in counts.items() if not isinstance(value, Mapping)]
    tables = [{"title": "Totals", "columns": ["", "count"], "rows": totals}] if totals else []
    for key, value in counts.items():
        if not isinstance(value, Mapping) or not value:
            continue
        if all(isinstance(inner, Mapping) for inner in value.values()):
            columns = list(dict.fromkeys(name for inner in value.values() for name in inner))
            rows = [[str(name), *(number(inner.get(column)) for column in columns)] for name, inner in value.items()]
            tables.append({"title": label(key), "columns": ["", *map(label, columns)], "rows": rows})
        else:
            rows = [[label(name), number(inner)] for name, inner in value.items()]
            tables.append({"title": label(key), "columns": ["", "count"], "rows": rows})
    return tables


# What a row is about comes first (stored JSON does not keep the keys' order), then the scores by name.
IDENTIFYING = ("demo_name", "turn_index", "annotation_id", "action_index", "intent", "predicted_intent")


def score_table(rows: Sequence[Mapping], limit: int) -> dict:
    """Per-turn (or per-step) scores as a table of at most ``limit`` rows: the identifying columns first, then the
    others by name, every number rounded; ``total`` says how many rows there were."""
    shown = list(rows[:limit])
    present = {name for row in shown for name in row}
    columns = [name for name in IDENTIFYING if name in present] + sorted(present - set(IDENTIFYING))
    return {
        "columns": [label(column) for column in columns],
        "keys": columns,
        "rows": [[number(row.get(column)) for column in columns] for row in shown],
        "total": len(rows),
    }


def lines(text: str) -> list[str]:
    """What a person typed one item per line (a form's text area): the non-empty lines, stripped."""
    return [line.strip() for line in text.splitlines() if line.strip()]
