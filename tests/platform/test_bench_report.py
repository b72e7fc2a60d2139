"""docs/benchmarks.md's figures are generated from the committed bench JSON (bench/report.py), and nothing else."""

import json

import pytest

from bench import report, run

FIGURES = {
    "review": {
        "server_ms_p50_500": 250.5,
        "queries_100": 12,
        "queries_500": 12,
        "server_ms_p50_100": 40.0,
        "measured_at": "2026-11-29T10:00:00+00:00",
        "machine": {"cores": 2, "load_average_1m": 3.2, "python_sum_ms": 21.4},
        "database": "postgresql",
        "quick": True,
        "wall_seconds": 12.5,
    },
    "recorders": {
        "recorders_at_1s": 250,
        "server_cpu_ratio_vs_bare": 1.4,
        "capacity_p95_ms": {"100": 154, "50": 16, "150": None},
        "lost": 0,
    },
}


def test_the_committed_doc_is_what_the_committed_json_gives():
    doc = report.DOC.read_text()
    block = report.render(json.loads(report.RESULTS.read_text()))
    assert report.replace_block(doc, block) == doc, "run: python -m bench.report --write docs/benchmarks.md"
    assert report.main(["--check", str(report.DOC)]) == 0


def test_every_target_names_a_section_of_the_runner():
    assert set(report.TARGETS) <= set(run.SECTIONS)
    for targets in report.TARGETS.values():
        assert all(comparison in report.COMPARE for comparison, _ in targets.values())


def test_a_section_shows_its_targets_first_with_whether_they_are_met_and_the_machine_but_no_date():
    block = report.render(FIGURES)
    review = block.split("### `review`")[1].split("###")[0]
    rows = [line for line in review.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `server_ms_p50_500` | 250.5 | ≤ 200 | **not met** |",
        "| `queries_500` | 12 | = `queries_100` | met |",
        "| `queries_100` | 12 |  |  |",
        "| `server_ms_p50_100` | 40.0 |  |  |",
    ]
    assert "Machine: 2 cores, load average 3.2 (1 min), `sum(range(10**6))` 21.4 ms, PostgreSQL" in review
    assert "the section took 12.5 s" in review
    assert "`--quick` run" in review
    assert "2026" not in block
    recorders = block.split("### `recorders`")[1]
    assert "| `server_cpu_ratio_vs_bare` | 1.4 | ≤ 1.5 | met |" in recorders
    assert "| `recorders_at_1s` | 250 |  |  |" in recorders  # reported, no target
    assert "| `lost` | 0 | = 0 | met |" in recorders
    assert "| `capacity_p95_ms` | 50: 16, 100: 154, 150: — |  |  |" in recorders
    assert "No figures in bench/results.json for `ingest`," in block
    assert block.index("### `recorders`") < block.index("### `review`"), "in the runner's order"


def test_only_the_marked_block_is_rewritten(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nprose\n\n{report.BEGIN}\nold figures\n{report.END}\n\nmore prose\n")
    results = tmp_path / "latest.json"
    results.write_text(json.dumps(FIGURES))
    assert report.main([str(results), "--check", str(doc)]) == 1
    assert report.main([str(results), "--write", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nprose\n\n<!-- bench:begin -->\n")
    assert text.endswith("<!-- bench:end -->\n\nmore prose\n")
    assert "old figures" not in text
    assert "### `review`" in text
    assert report.main([str(results), "--check", str(doc)]) == 0


NOT_ONE_BLOCK = ["no markers", f"{report.END}\n{report.BEGIN}", f"{report.BEGIN}{report.BEGIN}{report.END}"]


@pytest.mark.parametrize("doc", NOT_ONE_BLOCK)
def test_a_doc_without_one_block_is_refused(doc):
    with pytest.raises(ValueError, match="bench:begin"):
        report.replace_block(doc, "block")
