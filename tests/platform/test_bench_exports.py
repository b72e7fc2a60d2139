"""The export benchmarks run end to end (quick): local, S3 and at full shape against pigz."""

import pytest

from bench import export_full
from tests.support.benches import quick_figures


@pytest.mark.processes
def test_quick_export_bench_reports_the_ratio_against_tar_piped_through_pigz(tmp_path):
    figures = quick_figures("export", tmp_path)
    assert {"demos", "turns", "seconds", "pigz_seconds", "ratio_vs_pigz"} <= set(figures)
    assert figures["demos"] == 3
    assert figures["turns"] == 24
    assert figures["ratio_vs_pigz"] > 0  # tar | pigz seconds / export seconds, from unrounded times


@pytest.mark.processes
@pytest.mark.s3
def test_quick_export_s3_bench_compares_the_export_with_local_storage_and_a_plain_upload(tmp_path):
    figures = quick_figures("export_s3", tmp_path)
    assert {"mb_per_s", "raw_put_mb_per_s", "ratio_vs_raw_put", "cpu_seconds", "ratio_vs_local"} <= set(figures)
    assert figures["demos"] == 2
    assert figures["archive_mb"] >= 0
    assert figures["ratio_vs_raw_put"] > 0  # upload seconds / export seconds, from unrounded times
    assert figures["ratio_vs_local"] > 0  # local export seconds / S3 export seconds


@pytest.mark.processes
def test_quick_export_full_bench_exports_both_formats_against_pigz_with_the_peak_memory(tmp_path):
    figures = quick_figures("export_full", tmp_path)
    assert figures["demos"] == export_full.QUICK["demos"]
    assert (
        figures["turns"] == export_full.QUICK["turns"]
    )  # the validated copies only: the ingested templates stay "recorded"
    assert figures["mind2web_steps"] > 0
    assert figures["ratio_vs_pigz"] == min(figures["weblinx_ratio_vs_pigz"], figures["mind2web_ratio_vs_pigz"])
    assert 0 < figures["peak_rss_mb"] < 4096
