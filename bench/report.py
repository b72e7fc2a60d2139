"""The figures of docs/benchmarks.md, from a bench JSON: ``python -m bench.report [JSON] [--write DOC | --check DOC]``.

The JSON is what ``bench.run`` writes (``var/bench/latest.json``) or the committed ``bench/results.json`` (the
figures the docs state; copy a section of ``latest.json`` into it to publish a new run). Every section becomes a
table of its keys: the targeted keys first, each with its target and whether it is met, then the others; the machine
facts (cores, load average, the database, a CPU probe) above it. Only the block between ``<!-- bench:begin -->`` and
``<!-- bench:end -->`` of the doc is rewritten. ``--check`` exits 1 when the doc's block is not what the JSON gives.
"""

import argparse
import json
import operator
import sys
from pathlib import Path

from bench.run import SECTIONS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results.json"
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"

# section → key → (comparison, bound): the targets each bench's docstring states. A bound that is a string is
# another key of the same section (the same query count for both sizes).
TARGETS = {
    "ingest_parallel": {"ratio_vs_checks": ("≥", 0.5)},
    "recorders": {
        "upload_ms_p95": ("≤", 1000),
        "lost": ("=", 0),
        "duplicated": ("=", 0),
        "server_cpu_ratio_vs_bare": ("≤", 1.5),
    },
    "export": {"ratio_vs_pigz": ("≥", 1.0)},
    "export_s3": {"ratio_vs_local": ("≥", 0.5)},
    "export_full": {"ratio_vs_pigz": ("≥", 1.0), "peak_rss_mb": ("≤", 1024)},
    "recorder": {"capture_ms_p50": ("≤", 16)},
    "review": {"server_ms_p50_500": ("≤", 200), "queries_500": ("=", "queries_100")},
    "live_chat": {"latency_ms_p95": ("≤", 50)},
    "form_tasks": {
        "import_rows_per_s": ("≥", 5000),
        "page_ms_p50": ("≤", 50),
        "submit_ms_p50": ("≤", 50),
        "batch_page_ratio": ("≤", 3),
    },
    "form_tasks_large": {"import_rows_per_s": ("≥", 20000), "page_ms_p50": ("≤", 300), "submit_ms_max": ("≤", 1000)},
    "agent_eval": {
        "harness_share": ("≤", 0.25),
        "llm_harness_cpu_ms_per_call": ("≤", 10),
        "speedup_2_browsers": ("≥", 1.6),
    },
    "stats": {"stats_ms_p50": ("≤", 300), "queries": ("=", "queries_small")},
    "quality": {"seconds": ("≤", 2), "page_ms_p50": ("≤", 300)},
}
COMPARE = {"≥": operator.ge, "≤": operator.le, "=": operator.eq}
# Keys shown above the table (machine facts), below it (note), or not at all (a date: the docs carry none).
FACTS = ("machine", "database", "wall_seconds", "quick", "note", "measured_at")


def number(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1000 else repr(value)
    if value is None:
        return "—"
    if isinstance(value, dict):  # e.g. p95 by recorder count: numeric keys in numeric order
        keys = sorted(value, key=lambda key: (0, int(key), "") if str(key).isdigit() else (1, 0, str(key)))
        return ", ".join(f"{key}: {number(value[key])}" for key in keys)
    if isinstance(value, list):
        return "; ".join(number(item) for item in value) or "none"
    return str(value).replace("|", "\\|")


def target_cells(figures: dict, key: str, target) -> tuple[str, str]:
    if target is None:
        return "", ""
    comparison, bound = target
    shown = f"`{bound}`" if isinstance(bound, str) else number(bound)
    bound = figures.get(bound) if isinstance(bound, str) else bound
    value = figures[key]
    if not isinstance(value, int | float) or not isinstance(bound, int | float):
        return f"{comparison} {shown}", "—"
    return f"{comparison} {shown}", "met" if COMPARE[comparison](value, bound) else "**not met**"


def machine_line(figures: dict) -> str:
    machine = figures.get("machine") or {}
    facts = []
    if "cores" in machine:
        facts.append(f"{machine['cores']} cores")
    if "load_average_1m" in machine:
        facts.append(f"load average {number(machine['load_average_1m'])} (1 min)")
    if "python_sum_ms" in machine:
        facts.append(f"`sum(range(10**6))` {number(machine['python_sum_ms'])} ms")
    if "database" in figures:
        facts.append({"postgresql": "PostgreSQL", "sqlite": "SQLite"}.get(figures["database"], figures["database"]))
    if "wall_seconds" in figures:
        facts.append(f"the section took {number(figures['wall_seconds'])} s")
    if figures.get("quick"):
        facts.append("**a `--quick` run: checks the bench works, measures nothing**")
    return "Machine: " + ", ".join(facts) + "." if facts else ""


def section(name: str, figures: dict) -> str:
    targets = TARGETS.get(name, {})
    keys = [key for key in targets if key in figures]
    keys += sorted(key for key in figures if key not in targets and key not in FACTS)
    lines = [f"### `{name}`", ""]
    if machine := machine_line(figures):
        lines += [machine, ""]
    lines += ["| key | value | target | met |", "| --- | --- | --- | --- |"]
    for key in keys:
        shown_target, met = target_cells(figures, key, targets.get(key))
        lines.append(f"| `{key}` | {number(figures[key])} | {shown_target} | {met} |")
    if figures.get("note"):
        lines += ["", figures["note"]]
    return "\n".join(lines)


def render(results: dict, source: str = "bench/results.json") -> str:
    """The block, markers included, for these results."""
    names = [name for name in SECTIONS if name in results] + sorted(set(results) - set(SECTIONS))
    missing = [f"`{name}`" for name in SECTIONS if name not in results]
    parts = [
        BEGIN,
        f"<!-- Generated from {source} by `python -m bench.report {source} --write docs/benchmarks.md`: "
        "edit the JSON, not this block. -->",
    ]
    parts += [section(name, results[name]) for name in names]
    if missing:
        parts.append(f"No figures in {source} for {', '.join(missing)}.")
    parts.append(END)
    return "\n\n".join(parts)


def replace_block(doc: str, block: str) -> str:
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise ValueError(f"the doc needs one {BEGIN} … {END} block")
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    return doc[:start] + block + doc[end:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS, help="Bench JSON (bench/results.json).")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--write", type=Path, metavar="DOC", help="Rewrite the doc's bench block.")
    what.add_argument("--check", type=Path, metavar="DOC", help="Exit 1 if the doc's bench block differs.")
    args = parser.parse_args(argv)
    try:
        source = args.results.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        source = args.results.as_posix()
    block = render(json.loads(args.results.read_text()), source)
    if not (args.write or args.check):
        print(block)
        return 0
    path = args.write or args.check
    doc = path.read_text()
    updated = replace_block(doc, block)
    if args.check:
        if updated != doc:
            print(
                f"{path}: its bench block is not what {source} gives (python -m bench.report --write)", file=sys.stderr
            )
            return 1
        return 0
    if updated != doc:
        path.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
