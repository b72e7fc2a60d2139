"""The page, chat and parallel-ingest benchmarks run end to end (quick): the review and stats pages' time and
query counts, chat latency through the ASGI server, four clients ingesting at once."""

import os

import pytest

from bench import stats
from tests.support.benches import quick_figures, quotient_of_rounded


@pytest.mark.processes
def test_quick_review_bench_reports_time_and_a_constant_query_count(tmp_path):
    figures = quick_figures("review", tmp_path)
    assert {"server_ms_p50_100", "server_ms_p50_500", "queries_100", "queries_500"} <= set(figures)
    assert figures["server_ms_p50_100"] > 0
    assert figures["server_ms_p50_500"] > 0
    assert figures["queries_100"] == figures["queries_500"]


@pytest.mark.processes
def test_quick_stats_bench_times_the_stats_page_with_a_constant_query_count(tmp_path):
    figures = quick_figures("stats", tmp_path)
    assert {"demos", "turns", "stats_ms_p50", "queries"} <= set(figures)
    assert (figures["demos"], figures["turns"]) == (stats.QUICK["demos"], stats.QUICK["turns"])
    assert figures["stats_ms_p50"] > 0
    assert figures["stats_ms_p50_small"] > 0
    assert figures["queries"] == figures["queries_small"]


@pytest.mark.processes
def test_quick_live_chat_bench_measures_latency_through_the_asgi_server(tmp_path):
    figures = quick_figures("live_chat", tmp_path)
    assert figures["sessions"] == 2
    assert figures["messages"] == 8  # every message reached the other side
    assert 0 < figures["latency_ms_p50"] <= figures["latency_ms_p95"] <= figures["latency_ms_max"]
    assert figures["channel_layer"] == ("redis" if os.environ.get("REDIS_URL") else "in-memory")
    assert (tmp_path / "bench" / "live-chat-server.log").exists()


@pytest.mark.processes
def test_quick_ingest_parallel_bench_stores_every_clients_sessions(tmp_path):
    figures = quick_figures("ingest_parallel", tmp_path)
    assert figures["clients"] == 4
    assert figures["demos"] >= 4  # the bench read every demo back with all its turns (check_stored)
    assert figures["turns"] > 0
    # the ratios are reported to 3 places, the MB/s to 2: a slow run's ratio is checked against what rounding allows
    low, high = quotient_of_rounded(figures["mb_per_s"], figures["raw_write_mb_per_s"], 2, 3)
    assert low <= figures["ratio_vs_raw"] <= high
    # the 4 in-process workers (bench.checks) stored and read back every demo, else the section fails
    assert figures["checks_mb_per_s"] > 0
    low, high = quotient_of_rounded(figures["mb_per_s"], figures["checks_mb_per_s"], 2, 3)
    assert low <= figures["ratio_vs_checks"] <= high
    assert figures["server_cpu_seconds"] > 0
