"""The benchmark runner: the ingest section runs end to end (quick) and merges its figures into latest.json."""

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import ingest, recorders, run

ROOT = Path(__file__).resolve().parents[2]
INGEST_KEYS = {"turns", "turns_per_s", "mb_per_s", "raw_write_mb_per_s", "ratio_vs_raw"}


def run_quick(section: str, var_dir: Path, timeout=300) -> subprocess.CompletedProcess:
    """``python -m bench.run --only SECTION --quick`` with its results under ``var_dir``; fails on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--only", section, "--quick"],
        cwd=ROOT,
        env={**os.environ, "VAR_DIR": str(var_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def quick_figures(section: str, var_dir: Path) -> dict:
    run_quick(section, var_dir)
    return json.loads((var_dir / "bench" / "latest.json").read_text())[section]


@pytest.mark.processes
def test_quick_ingest_bench_writes_its_figures_and_keeps_other_sections(tmp_path):
    results = tmp_path / "bench" / "latest.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"export": {"demos_per_s": 1.0}, "ingest": {"stale": True}}))
    done = run_quick("ingest", tmp_path, timeout=120)
    figures = json.loads(results.read_text())
    assert figures["export"] == {"demos_per_s": 1.0}
    ingest_figures = figures["ingest"]
    assert set(ingest_figures) >= INGEST_KEYS
    assert "stale" not in ingest_figures
    assert ingest_figures["turns"] >= ingest.QUICK["turns_per_demo"]
    assert ingest_figures["browser_turns"] >= ingest.QUICK["browser_turns"]
    assert all(ingest_figures[key] > 0 for key in INGEST_KEYS)
    ratio = ingest_figures["mb_per_s"] / ingest_figures["raw_write_mb_per_s"]
    assert ingest_figures["ratio_vs_raw"] == pytest.approx(ratio, rel=0.05, abs=0.0005)  # reported to 3 decimals
    assert ingest_figures["quick"] is True
    assert "ingest.mb_per_s" in done.stdout
    assert (tmp_path / "bench" / "ingest-server.log").stat().st_size > 0


def test_results_are_merged_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("VAR_DIR", str(tmp_path))
    path = run.results_path()
    run.save(path, {"export": {"seconds": 2}})
    run.save(path, {"ingest": {"turns": 5}})
    assert json.loads(path.read_text()) == {"export": {"seconds": 2}, "ingest": {"turns": 5}}


def test_each_batch_uploads_the_blobs_it_uses_first():
    spec = ingest.build_corpus(browser_turns=10, turns_per_demo=60, elements=30)[0]
    upload = ingest.encode(spec, "p", "i")
    sent, total_turns = set(), 0
    for blobs, turns in upload.batches:
        total_turns += len(turns)
        sent.update(sha for sha, _, _ in blobs)
        assert all(turn[key] in sent for turn in turns for key in ("screenshot", "page", "bboxes") if key in turn)
    assert total_turns == len(spec.turns)
    assert len(sent) == len(spec.blobs)
    assert len(upload.batches) == 2


@pytest.mark.processes
def test_quick_recorders_bench_uploads_every_action_once_through_the_real_server(tmp_path):
    figures = quick_figures("recorders", tmp_path)
    size = recorders.QUICK
    assert figures["recorders"] == size["recorders"]
    assert figures["actions"] == figures["uploaded"] == size["recorders"] * size["seconds"]
    assert (figures["lost"], figures["duplicated"], figures["errors"]) == (0, 0, [])
    assert 0 < figures["upload_ms_p50"] <= figures["upload_ms_p95"] <= figures["upload_ms_max"]
    assert (tmp_path / "bench" / "recorders-server.log").stat().st_size > 0
    # the server's CPU over the timed uploads, and the capacity search's steps (each held: nothing lost, p95 ≤ 1 s)
    assert figures["server_cpu_seconds"] > 0
    assert figures["server_cpu_ms_per_action"] == pytest.approx(
        1000 * figures["server_cpu_seconds"] / figures["uploaded"], abs=0.1
    )
    steps = figures["capacity_p95_ms"]
    assert list(steps) == [str(count) for count in recorders.CAPACITY_QUICK[: len(steps)]]
    held = [int(count) for count, p95 in steps.items() if p95 is not None and p95 <= 1000]
    assert figures["recorders_at_1s"] == max(held, default=0)


def test_quick_ingest_parallel_bench_stores_every_clients_sessions(tmp_path):
    figures = quick_figures("ingest_parallel", tmp_path)
    assert figures["clients"] == 4
    assert figures["demos"] >= 4  # the bench read every demo back with all its turns (check_stored)
    assert figures["turns"] > 0
    assert figures["ratio_vs_raw"] == pytest.approx(figures["mb_per_s"] / figures["raw_write_mb_per_s"], rel=0.02)
    assert figures["server_cpu_seconds"] > 0


def test_tree_cpu_counts_the_processes_under_a_process():
    from bench import cpu

    burn = (
        "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
        "print('burnt', flush=True)\ntime.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", burn], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "burnt\n"
        alone = cpu.tree_cpu_seconds(child.pid)
        assert alone >= 0.29  # clock ticks: 10 ms
        assert cpu.tree_cpu_seconds(os.getpid()) >= alone  # this process's tree holds the child's time
    finally:
        child.kill()
        child.wait()


def test_each_recorder_sends_valid_blobs_of_its_own(db):
    from annotation.actions.recordings import check_blob_content

    spec = ingest.build_corpus(browser_turns=6, turns_per_demo=6, elements=30)[0]
    originals = {sha: (media_type, data) for data, media_type in spec.blobs for sha in [ingest_sha(data)]}
    first, second = recorders.Actions(spec, originals, "r000"), recorders.Actions(spec, originals, "r001")
    sent = {}
    for index in range(len(spec.turns)):
        for actions in (first, second):
            turn, blobs = actions[index]
            assert turn["client_id"].startswith(actions.mark)
            for sha, media_type, data in blobs:
                assert ingest_sha(data) == sha
                assert sha not in originals
                assert sha not in sent
                check_blob_content(io.BytesIO(data), media_type)  # still a decodable PNG, bboxes, UTF-8 page
                sent[sha] = media_type
            assert all(sha in sent for sha in recorders.refs(turn))
    assert len(sent) == 2 * len(originals)


def ingest_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.processes
def test_quick_export_bench_reports_the_ratio_against_tar_piped_through_pigz(tmp_path):
    figures = quick_figures("export", tmp_path)
    assert {"demos", "turns", "seconds", "pigz_seconds", "ratio_vs_pigz"} <= set(figures)
    assert figures["demos"] == 3
    assert figures["turns"] == 24
    assert figures["ratio_vs_pigz"] > 0  # tar | pigz seconds / export seconds, from unrounded times


@pytest.mark.processes
def test_quick_review_bench_reports_time_and_a_constant_query_count(tmp_path):
    figures = quick_figures("review", tmp_path)
    assert {"server_ms_p50_100", "server_ms_p50_500", "queries_100", "queries_500"} <= set(figures)
    assert figures["server_ms_p50_100"] > 0
    assert figures["server_ms_p50_500"] > 0
    assert figures["queries_100"] == figures["queries_500"]


@pytest.mark.processes
def test_quick_live_chat_bench_measures_latency_through_the_asgi_server(tmp_path):
    figures = quick_figures("live_chat", tmp_path)
    assert figures["sessions"] == 2
    assert figures["messages"] == 8  # every message reached the other side
    assert 0 < figures["latency_ms_p50"] <= figures["latency_ms_p95"] <= figures["latency_ms_max"]
    assert figures["channel_layer"] == ("redis" if os.environ.get("REDIS_URL") else "in-memory")
    assert (tmp_path / "bench" / "live-chat-server.log").exists()


@pytest.mark.processes
def test_quick_form_tasks_bench_imports_the_real_tasks_and_times_pages_and_submits(tmp_path):
    from tests.support.forms_data import turkingbench_root

    turkingbench_root()  # skips, naming TURKINGBENCH_DATA, when it is not set
    figures = quick_figures("form_tasks", tmp_path)
    assert figures["rows"] >= 2000  # one pass over the 28 tasks
    assert {"import_rows_per_s", "page_ms_p50", "submit_ms_p50"} <= set(figures)
    assert all(figures[key] > 0 for key in ("import_rows_per_s", "page_ms_p50", "submit_ms_p50"))
    assert figures["requests"] == 5
    assert figures["batch_page_tasks"] == 300
    assert all(figures[key] > 0 for key in ("batch_page_ms_p50", "batch_page_last_ms_p50", "batch_page_small_ms_p50"))
    assert figures["batch_page_ratio"] > 0


@pytest.mark.processes
@pytest.mark.browser
def test_quick_agent_eval_bench_runs_both_baselines_on_real_tasks(tmp_path):
    from tests.support.agents_data import real_data

    real_data()  # skips, naming TURKINGBENCH_DATA, when the real tasks are not there
    figures = quick_figures("agent_eval", tmp_path)
    assert {"instances", "instances_per_min", "oracle_score", "do_nothing_score", "harness_share"} <= set(figures)
    assert figures["instances"] == 4  # two tasks, one instance, two solvers
    assert figures["oracle_score"] > figures["do_nothing_score"]
    assert 0 <= figures["harness_share"] < 1
    # The llm solver against the stand-in model server (another process) answering gold. Not always the oracle's
    # score: on some real tasks the page never shows the inputs (CDN scripts), so the stand-in cannot tell the
    # instance (docs/agents.md, "Benchmark").
    assert figures["llm_instances"] == 2
    assert figures["do_nothing_score"] < figures["llm_score"] <= figures["oracle_score"]
    assert figures["llm_harness_cpu_ms_per_call"] > 0
    assert figures["speedup_2_browsers"] > 0
    assert figures["speedup_2_browsers_oracle"] > 0


@pytest.mark.processes
def test_quick_stats_bench_times_the_stats_page_with_a_constant_query_count(tmp_path):
    figures = quick_figures("stats", tmp_path)
    assert {"demos", "turns", "stats_ms_p50", "queries"} <= set(figures)
    assert (figures["demos"], figures["turns"]) == (40, 1000)
    assert figures["stats_ms_p50"] > 0
    assert figures["stats_ms_p50_small"] > 0
    assert figures["queries"] == figures["queries_small"]


def test_quick_export_s3_bench_compares_the_export_with_local_storage_and_a_plain_upload(tmp_path):
    figures = quick_figures("export_s3", tmp_path)
    assert {"mb_per_s", "raw_put_mb_per_s", "ratio_vs_raw_put", "cpu_seconds", "ratio_vs_local"} <= set(figures)
    assert figures["demos"] == 2
    assert figures["archive_mb"] >= 0
    assert figures["ratio_vs_raw_put"] > 0  # upload seconds / export seconds, from unrounded times
    assert figures["ratio_vs_local"] > 0  # local export seconds / S3 export seconds


@pytest.mark.processes
def test_quick_form_tasks_large_bench_imports_one_batch_while_another_process_submits(tmp_path):
    figures = quick_figures("form_tasks_large", tmp_path)
    assert figures["rows"] == figures["tasks"] == 20_000
    assert figures["import_rows_per_s"] > 0
    assert figures["submits_during_import"] >= 1
    assert (
        0
        < figures["page_ms_p50"]
        == max(figures["batch_page_ms_p50"], figures["work_page_ms_p50"], figures["batch_list_ms_p50"])
    )


@pytest.mark.processes
def test_quick_export_full_bench_exports_both_formats_against_pigz_with_the_peak_memory(tmp_path):
    figures = quick_figures("export_full", tmp_path)
    assert figures["demos"] == 40
    assert figures["turns"] == 1000  # the validated copies only: the ingested templates stay "recorded"
    assert figures["mind2web_steps"] > 0
    assert figures["ratio_vs_pigz"] == min(figures["weblinx_ratio_vs_pigz"], figures["mind2web_ratio_vs_pigz"])
    assert 0 < figures["peak_rss_mb"] < 4096
