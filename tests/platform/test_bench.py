"""The benchmark runner: results merged into latest.json, the CPU of a process tree, the ingest and recorders
sections' corpora, and the ingest and recorders sections run end to end (quick). The other sections' quick runs are
in ``test_bench_*.py``, one file per group so the suite's processes share them out."""

import hashlib
import io
import json
import os
import subprocess
import sys

import pytest

from bench import ingest, recorders, run
from tests.support.benches import quick_figures, run_quick

INGEST_KEYS = {"turns", "turns_per_s", "mb_per_s", "raw_write_mb_per_s", "ratio_vs_raw"}


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
    assert figures["recorders_per_core"] == pytest.approx(figures["recorders_at_1s"] / os.cpu_count(), abs=0.05)
    # the bare baseline (bench.bare) stored every action of its run once, else the section fails
    assert figures["bare_uploaded"] == size["recorders"] * size["bare_seconds"]
    assert figures["bare_cpu_ms_per_action"] > 0
    ratio = figures["server_cpu_ms_per_action"] / figures["bare_cpu_ms_per_action"]
    assert figures["server_cpu_ratio_vs_bare"] == pytest.approx(ratio, rel=0.05)
    assert (tmp_path / "bench" / "recorders-bare-server.log").stat().st_size > 0


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


def test_the_bare_baseline_is_served_as_the_platform_is():
    from config.server import APPLICATION, server_command, uvicorn_options

    platform, bare = server_command("127.0.0.1", 1, 2), server_command("127.0.0.1", 1, 2, recorders.BARE_APP)
    assert bare == [*platform, "--app", recorders.BARE_APP]  # config.serve: the same processes, uvicorn settings
    one = server_command("127.0.0.1", 1, 1, recorders.BARE_APP)
    assert one == [part if part != APPLICATION else recorders.BARE_APP for part in server_command("127.0.0.1", 1, 1)]
    assert one[-len(uvicorn_options()) :] == uvicorn_options()


def test_the_bare_baseline_answers_only_token_authenticated_batches():
    import asyncio

    from bench import bare

    async def call(method, path, headers=()):
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
        await bare.application(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"])

    assert asyncio.run(call("GET", "/api/recordings/x/bundle/"))[0] == 404
    assert asyncio.run(call("POST", "/api/recordings/"))[0] == 404
    status, body = asyncio.run(call("POST", "/api/recordings/x/bundle/", [(b"authorization", b"Bearer x")]))
    assert (status, body["code"]) == (401, "not_authenticated")
