"""Offline replay (issue 39 item 4, docs/mind2web.md#replay): the real extension in headless Chromium records three
tasks in step mode on a site of the test's own with dynamic content (items fetched after load, an XHR on a click, a
redirect, a form posted to the site with a text field and a select, a page fetching its data after load); the site
is then stopped and a listener counting connections takes its port. ``manage.py replay`` replays every step of each
task from its HAR; a task whose HAR lacks the redirect fails that step saying the request is not in the HAR; a task
without traffic is refused (409); the Mind2Web export's quality.json carries each replay. Nothing reaches the port."""

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

from annotation.lib.formats import mind2web_task_id
from tests.support.recorder_browser import Browser
from tests.support.recorder_harness import blob_bytes, create_member, exported_files, extension_browser, live_platform
from tests.support.replay_site import JSON_ANSWERS, PAGES, REDIRECTS, record_flow
from tests.support.step_site import serve, stored_steps
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "replay"
RESEARCHER = "replay-researcher"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("replay-var"), "replaytest", "replay-ann", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def recorded(live, tmp_path_factory):
    """Three tasks recorded; then the site is stopped and its port taken by a listener counting connections."""
    with serve(PAGES, JSON_ANSWERS, REDIRECTS, "/thanks") as site:
        with extension_browser(live, PROJECT) as (driver, cdp, recorder):
            browser = Browser(driver, cdp, recorder)
            names = [record_flow(browser, live, site.base) for _ in range(3)]
        assert [body["size"] for body in site.posted] == [["l"]] * 3
    tripwire = socket.create_server(("127.0.0.1", site.port), reuse_port=False)
    connections = []
    threading.Thread(target=count_connections, args=(tripwire, connections), daemon=True).start()
    create_member(live.platform, RESEARCHER, PROJECT, "researcher")
    yield names, connections, tmp_path_factory.mktemp("replays")
    tripwire.close()


def count_connections(listener: socket.socket, connections: list) -> None:
    while True:
        try:
            connections.append(listener.accept()[1])
        except OSError:  # closed at the end of the module
            return


def replay(live, name: str, folder):
    out = folder / f"{name}.json"
    task = mind2web_task_id(name)
    result = live.platform.manage("replay", "--project", PROJECT, "--task", task, "--user", RESEARCHER, "--json", out)
    return result, (json.loads(out.read_text()) if result.returncode == 0 else None)


@pytest.fixture(scope="module")
def replayed(recorded, live):
    names, connections, folder = recorded
    results = {name: replay(live, name, folder) for name in names}
    assert connections == []
    return results


def test_every_step_of_each_task_replays_with_the_site_stopped(replayed, recorded):
    for process, result in replayed.values():
        assert process.returncode == 0, process.stderr
        assert (result["steps"], result["replayed"]) == (6, 6), result
        assert result["first_failure"] is None
        assert all(step["ok"] for step in result["per_step"]), result["per_step"]
    assert recorded[1] == []


def test_a_step_needing_a_request_not_in_the_har_fails_saying_which(replayed, recorded, live):
    names, connections, folder = recorded
    name = names[1]
    steps = stored_steps(live.platform, live.token, name)
    holding = [
        turn["har"]
        for turn in steps
        if turn["har"] and b"/go-order" in blob_bytes(live.platform, live.token, turn["har"])
    ]
    assert len(holding) == 1
    code = (
        "from annotation.models import Turn\n"
        f"print(Turn.objects.filter(demonstration__name={name!r}, har={holding[0]!r}).update(har=None))\n"
    )
    assert live.platform.manage("shell", "-c", code).stdout.strip().endswith("1")
    process, result = replay(live, name, folder)
    assert process.returncode == 0, process.stderr
    assert (result["first_failure"], result["replayed"]) == (2, 5), result
    why = result["per_step"][1]["why"]
    assert "/go-order is not in the HAR" in why, why
    assert "nothing sent" in why, why
    assert connections == []


@pytest.fixture(scope="module")
def without_traffic(replayed, recorded, live) -> str:
    """The third task with its traffic removed (after its replay)."""
    name = recorded[0][2]
    code = f"from annotation.models import Turn\nTurn.objects.filter(demonstration__name={name!r}).update(har=None)\n"
    assert live.platform.manage("shell", "-c", code).returncode == 0
    return name


def test_a_task_without_traffic_is_refused_409(without_traffic, recorded, live):
    _, connections, folder = recorded
    process, result = replay(live, without_traffic, folder)
    assert (process.returncode != 0, result) == (True, None)
    assert "409 conflict" in process.stderr, process.stderr
    assert "no recorded traffic" in process.stderr, process.stderr
    assert connections == []


def test_an_outsider_cannot_replay(recorded, live):
    names, _, folder = recorded
    create_member(live.platform, "replay-other", "other-project", "admin")
    task = mind2web_task_id(names[0])
    process = live.platform.manage("replay", "--project", PROJECT, "--task", task, "--user", "replay-other")
    assert process.returncode != 0
    assert "404 not_found" in process.stderr, process.stderr


def test_the_mind2web_export_carries_each_replay(replayed, live):
    token = create_member(live.platform, RESEARCHER, PROJECT, "researcher")
    files = exported_files(live.platform, token, PROJECT, "mind2web")
    items = {item["id"]: item for item in json.loads(files["quality.json"])["items"]}
    for name in replayed:
        replay_result = items[mind2web_task_id(name)]["replay"]
        assert replay_result["steps"] == 6
        assert {"replayed", "first_failure", "per_step", "at"} <= set(replay_result)


def call(live, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(live.platform.url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_api_queues_a_replay_the_worker_runs(without_traffic, recorded, live):
    names, connections, _ = recorded
    token = create_member(live.platform, RESEARCHER, PROJECT, "researcher")
    path, task = f"/api/projects/{PROJECT}/replays/", mind2web_task_id(names[0])
    status, queued = call(live, path, token, {"task": task})
    assert (status, queued["status"]) == (202, "queued"), queued

    def finished():
        _, found = call(live, f"{path}{task}/", token)
        return found if found["status"] in ("done", "failed") else None

    done = wait_until(finished, 240, interval=0.5, message="the replay job ends")
    assert (done["status"], done["steps"], done["replayed"], done["first_failure"]) == ("done", 6, 6, None), done
    status, refused = call(live, path, token, {"task": mind2web_task_id(without_traffic)})
    assert status == 409, refused
    assert "no recorded traffic" in refused["detail"]
    assert call(live, path, token, {})[0] == 400
    assert call(live, path, token, {"task": "no-such-task"})[0] == 404
    assert call(live, path, live.token, {"task": task})[0] == 403  # an annotator of the project
    outsider = create_member(live.platform, "replay-outsider", "other-replay-project", "admin")
    assert call(live, path, outsider, {"task": task})[0] == 404
    assert call(live, f"{path}{task}/", outsider)[0] == 404
    assert connections == []
