"""Replayed tasks as an agent environment (issue 39 item 5, docs/mind2web.md#replayed-tasks-as-an-agent-environment):
two tasks recorded with the real extension on the replay test's site (six steps each: CLICK, CLICK, TYPE, SELECT,
CLICK, CLICK), the site then stopped and its port taken by a listener counting connections. ``manage.py
replay_agent`` scores the oracle 1 on every metric, doing nothing 0, and a solver typing one word more on the TYPE
step exactly as Mind2Web's definitions say; a task without traffic is skipped (alone: 409); outsiders are refused."""

import json
import socket
import threading

import pytest

from annotation.lib.formats import mind2web_task_id
from tests.support.recorder_browser import Browser
from tests.support.recorder_harness import create_member, extension_browser, live_platform
from tests.support.replay_site import JSON_ANSWERS, PAGES, REDIRECTS, record_flow
from tests.support.step_site import serve

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "replay-agent"
RESEARCHER = "replay-agent-researcher"
METRICS = ("element_accuracy", "operation_f1", "step_success", "task_success")
AGGREGATE = ("element_accuracy", "operation_f1", "step_success_rate", "task_success_rate")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("agent-var"), "replayagent", "replay-agent-ann", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def recorded(live, tmp_path_factory):
    """Two tasks recorded; the site stopped, its port taken by a listener counting connections."""
    with (
        serve(PAGES, JSON_ANSWERS, REDIRECTS, "/thanks") as site,
        extension_browser(live, PROJECT) as (driver, cdp, recorder),
    ):
        browser = Browser(driver, cdp, recorder)
        names = [record_flow(browser, live, site.base) for _ in range(2)]
    tripwire = socket.create_server(("127.0.0.1", site.port), reuse_port=False)
    connections = []
    threading.Thread(target=count_connections, args=(tripwire, connections), daemon=True).start()
    create_member(live.platform, RESEARCHER, PROJECT, "researcher")
    yield [mind2web_task_id(name) for name in names], names, connections, tmp_path_factory.mktemp("agent-scores")
    tripwire.close()


def count_connections(listener: socket.socket, connections: list) -> None:
    while True:
        try:
            connections.append(listener.accept()[1])
        except OSError:
            return


def run(live, folder, solver: str, *tasks: str, user: str = RESEARCHER):
    out = folder / f"{solver.replace(':', '-')}-{len(tasks)}.json"
    arguments = ["replay_agent", "--project", PROJECT, "--solver", solver, "--user", user, "--out", out]
    process = live.platform.manage(*arguments, *(["--task", *tasks] if tasks else []), timeout=900)
    return process, (json.loads(out.read_text()) if process.returncode == 0 else None)


@pytest.fixture(scope="module")
def scores(recorded, live):
    tasks, _, connections, folder = recorded
    found = {}
    for solver in ("oracle", "do-nothing", "python:tests.support.replay_solvers:TypesOneWordMore"):
        process, result = run(live, folder, solver, *tasks)
        assert process.returncode == 0, process.stderr
        found[solver.split(":")[-1]] = result
    assert connections == []
    return found


def test_the_oracle_scores_one_on_every_metric_of_every_task(scores, recorded):
    result = scores["oracle"]
    assert [task["annotation_id"] for task in result["per_task"]] == recorded[0]
    for task in result["per_task"]:
        assert task["steps"] == 6
        assert [task[name] for name in METRICS] == [1, 1, 1, 1], task
    assert [result["aggregate"][name] for name in AGGREGATE] == [1, 1, 1, 1]
    assert (result["aggregate"]["tasks"], result["aggregate"]["steps"], result["predictions"]) == (2, 12, 12)
    for log in result["steps_log"].values():
        assert [(step["performed"], step["restored"]) for step in log] == [(True, False)] * 6, log
    assert result["skipped"] == []


def test_doing_nothing_scores_zero(scores):
    result = scores["do-nothing"]
    for task in result["per_task"]:
        assert [task[name] for name in METRICS] == [0, 0, 0, 0], task
    assert [result["aggregate"][name] for name in AGGREGATE] == [0, 0, 0, 0]
    assert result["predictions"] == 0
    for log in result["steps_log"].values():
        assert [step["why"] for step in log] == ["no action"] * 6  # the recorded step then moves the page on


def test_one_word_too_many_on_the_type_step_scores_as_the_definitions_say(scores):
    """Step 3 (TYPE "Ann") predicted as TYPE "Ann Lee" on the right element: element right; operation F1 of
    {TYPE, Ann, Lee} against {TYPE, Ann}: precision 2/3, recall 1, F1 2·(2/3)/(5/3) = 0.8; the step fails. Per
    task: element accuracy 6/6, operation F1 (5 + 0.8)/6, step success 5/6, task success 0; both tasks alike."""
    result = scores["TypesOneWordMore"]
    typed = [step for step in result["per_step"] if step["action_index"] == 2]
    assert [(s["element_accuracy"], s["operation_f1"], s["step_success"]) for s in typed] == [(1, 0.8, 0)] * 2
    expected = {"element_accuracy": 1, "operation_f1": 5.8 / 6, "step_success": 5 / 6, "task_success": 0}
    for task in result["per_task"]:
        assert {name: task[name] for name in METRICS} == pytest.approx(expected), task
    aggregate = [result["aggregate"][name] for name in AGGREGATE]
    assert aggregate == pytest.approx([1, 5.8 / 6, 5 / 6, 0])
    for log in result["steps_log"].values():  # the wrong text was typed, then the recorded page restored
        assert [(step["performed"], step["restored"]) for step in log] == [(True, False)] * 2 + [(True, True)] + [
            (True, False)
        ] * 3, log


def test_a_task_without_traffic_is_skipped_and_alone_refused_409(scores, recorded, live):
    tasks, names, connections, folder = recorded
    code = (
        f"from annotation.models import Turn\nTurn.objects.filter(demonstration__name={names[1]!r}).update(har=None)\n"
    )
    assert live.platform.manage("shell", "-c", code).returncode == 0
    process, result = run(live, folder, "oracle")
    assert process.returncode == 0, process.stderr
    assert [item["task"] for item in result["skipped"]] == [tasks[1]]
    assert "no recorded traffic" in result["skipped"][0]["why"]
    assert [task["annotation_id"] for task in result["per_task"]] == [tasks[0]]
    assert result["aggregate"]["task_success_rate"] == 1
    process, _ = run(live, folder, "oracle", tasks[1])
    assert process.returncode != 0
    assert "409 conflict" in process.stderr, process.stderr
    assert "no recorded traffic" in process.stderr, process.stderr
    assert connections == []


def test_outsiders_and_bad_solvers_are_refused(recorded, live):
    tasks, _, _, folder = recorded
    create_member(live.platform, "replay-agent-other", "other-agent-project", "admin")
    process, _ = run(live, folder, "oracle", tasks[0], user="replay-agent-other")
    assert process.returncode != 0
    assert "404 not_found" in process.stderr, process.stderr
    process, _ = run(live, folder, "clever", tasks[0])
    assert process.returncode != 0
    assert "--solver must be oracle, do-nothing or python:module:Class" in process.stderr, process.stderr
