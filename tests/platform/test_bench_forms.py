"""The form-task and agent benchmarks run end to end (quick): the real tasks imported and served, a large batch
imported while another process submits, the baselines on real tasks."""

import pytest

from bench import form_tasks_large
from tests.support.benches import quick_figures


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
def test_quick_form_tasks_large_bench_imports_one_batch_while_another_process_submits(tmp_path):
    figures = quick_figures("form_tasks_large", tmp_path)
    assert figures["rows"] == figures["tasks"] == form_tasks_large.QUICK["rows"]
    assert figures["import_rows_per_s"] > 0
    assert figures["submits_during_import"] >= 1
    assert (
        0
        < figures["page_ms_p50"]
        == max(figures["batch_page_ms_p50"], figures["work_page_ms_p50"], figures["batch_list_ms_p50"])
    )


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
