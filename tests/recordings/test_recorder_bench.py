"""The recorder benchmark section runs (quick) in a real headless Chromium and reports sane figures."""

import pytest

from bench import recorder

pytestmark = pytest.mark.browser


def test_quick_recorder_bench_times_the_content_scripts_capture_functions():
    figures = recorder.run(quick=True)
    assert figures["elements"] == recorder.QUICK["elements"]
    assert figures["actions"] == recorder.QUICK["iterations"]
    assert 0 < figures["capture_ms_p50"] <= figures["capture_ms_p95"]
    assert figures["boxes_per_action"] == figures["elements"]  # every element has a box
    assert figures["bytes_per_action"] == figures["html_bytes_per_action"] + figures["bboxes_bytes_per_action"]
    assert figures["html_bytes_per_action"] > 0
