"""An agent's browser stays on the task server's origin: templates whose scripts navigate the page to another
loopback service (another port, ``localhost``, ``[::1]``, ``127.0.0.2``), refresh to it, open a window on it or
submit a form to it. In real headless Chromium against loopback servers the test runs itself: the other service
receives nothing (the origin guard), the harness ends an instance whose page left its origin, and the ``llm``
solver sends nothing of the other page to the stand-in model; the run's other instances still score."""

from urllib.parse import urlsplit

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from agents.browser import chrome_options, make_driver, start_chrome
from agents.harness import LEFT_ORIGIN, run
from agents.llm import ChatClient, Endpoint
from agents.llm_solver import LLMSolver
from agents.originguard import REFUSED
from agents.server import serve_pages
from agents.solvers import Oracle
from agents.turkle import Dataset
from annotation.actions.forms.frames import frame_headers
from devtools.standin_model import standin_model
from tests.support.agents_data import write_task
from tests.support.loopback import loopback_server

pytestmark = pytest.mark.browser
SECRET = "SECRET-of-the-other-service"
REFUSAL = REFUSED.decode().strip()
FIELD = '<p>${question}</p><input type="text" name="q" value="">'
NAVIGATES = "<script>location.href = 'TARGET/secret';</script>"
REFRESHES = '<meta http-equiv="refresh" content="0; url=TARGET/refresh">'
OPENS = "<script>window.open('TARGET/window');</script>"
SUBMITS = """<script>
const form = document.createElement('form');
form.method = 'post'; form.action = 'TARGET/form';
form.innerHTML = '<input name="leak" value="the page">';
document.body.appendChild(form); form.submit();
</script>"""
# task name → (what its template does, the service it aims at); "Plain" does nothing of the kind
TEMPLATES = {
    "Other port": (NAVIGATES, "127.0.0.1"),
    "Localhost": (NAVIGATES, "localhost"),
    "IPv6 loopback": (NAVIGATES, "::1"),
    "Other loopback address": (NAVIGATES, "127.0.0.2"),
    "Refresh": (REFRESHES, "127.0.0.1"),
    "Window": (OPENS, "127.0.0.1"),
    "Form": (SUBMITS, "127.0.0.1"),
}
LEAVING = ("Other port", "Localhost", "IPv6 loopback", "Other loopback address", "Refresh")


def secret_page(request):
    return 200, {"Content-Type": "text/html; charset=utf-8"}, f"<body><p>{SECRET}</p></body>".encode()


@pytest.fixture(scope="module")
def services():
    """The services a template must not reach, by the host its template names (``localhost`` is 127.0.0.1)."""
    with (
        loopback_server(secret_page) as v4,
        loopback_server(secret_page, host="127.0.0.2") as other,
        loopback_server(secret_page, host="::1") as v6,
    ):
        yield {"127.0.0.1": v4, "localhost": v4, "127.0.0.2": other, "::1": v6}


def target(services, host: str) -> str:
    port = services[host].url.rsplit(":", 1)[1]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


@pytest.fixture(scope="module")
def dataset(services, tmp_path_factory):
    root = tmp_path_factory.mktemp("origin")
    rows = [["first", "typed"], ["second", "typed"], ["third", "typed"]]
    write_task(root, "Plain", FIELD, ["question", "Answer.q"], rows)
    for name, (script, host) in TEMPLATES.items():
        write_task(root, name, FIELD + script.replace("TARGET", target(services, host)), ["question", "Answer.q"], rows)
    return Dataset(root)


def received(services) -> list:
    return [r.path for service in {id(s): s for s in services.values()}.values() for r in service.requests]


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_origin_guard_alone_keeps_every_request_from_the_other_service(dataset, services, driver, name):
    """Served without the frame CSP: the guard is all that stands between the page and the other service."""
    with serve_pages(lambda task, index: dataset.task(task).render_page(index)) as pages:
        url = pages.url(name, 0)
        driver.origin_guard.allow_only(url)
        driver.get(url)
        wait = WebDriverWait(driver, 30)
        task_window = driver.current_window_handle
        if name == "Window":
            wait.until(lambda d: len(d.window_handles) == 2)
            driver.switch_to.window(next(h for h in driver.window_handles if h != task_window))
        wait.until(lambda d: urlsplit(d.current_url).netloc not in ("", urlsplit(url).netloc))
        wait.until(lambda d: REFUSAL in d.execute_script("return document.body ? document.body.innerText : ''"))
        shown = driver.execute_script("return document.documentElement.outerHTML")
        if name == "Window":
            driver.close()
            driver.switch_to.window(task_window)
    assert SECRET not in shown
    assert any(line.endswith(("/secret", "/refresh", "/window", "/form")) for line in driver.origin_guard.refused)
    assert received(services) == []


def test_a_browser_allowed_the_network_still_reaches_no_loopback_service_but_its_task_server(dataset, services):
    """``allow_network=True`` (the templates' CDN libraries as written): public hosts only, never loopback."""
    tasks = [dataset.task(name) for name in ("Plain", "Other port", "IPv6 loopback", "Other loopback address")]
    driver = make_driver(allow_network=True)
    try:
        with serve_pages(lambda task, index: dataset.task(task).render_page(index)) as pages:
            result = run(driver, Oracle(0), tasks, pages.url, instances={t.name: [0] for t in tasks})
    finally:
        driver.quit()
    assert [(i.task, i.ended, i.score) for i in result.instances] == [
        ("Plain", None, 1.0),
        ("Other port", LEFT_ORIGIN, 0.0),
        ("IPv6 loopback", LEFT_ORIGIN, 0.0),
        ("Other loopback address", LEFT_ORIGIN, 0.0),
    ]
    assert received(services) == []


def test_an_llm_run_sends_nothing_of_another_origin_and_ends_the_instances_that_left(dataset, services, driver):
    tasks = [dataset.task(name) for name in ("Plain", *TEMPLATES)]
    with (
        serve_pages(lambda task, index: dataset.task(task).render_page(index), headers=frame_headers()) as pages,
        standin_model(default="text:modify_text('q', 'typed')") as model,
    ):
        client = ChatClient(Endpoint(model.url, "stand-in", "k"))
        first = run(driver, LLMSolver(client), tasks, pages.url, instances={t.name: [0, 1] for t in tasks})
        again = run(driver, LLMSolver(client), tasks, pages.url, instances={t.name: [2] for t in tasks})

    assert received(services) == []
    prompts = [str(request["body"]) for request in model.requests]
    assert prompts
    assert not any(SECRET in p or REFUSAL in p for p in prompts)
    for result in (first, again):
        by_task = {}
        for instance in result.instances:
            by_task.setdefault(instance.task, []).append(instance)
        for name in LEAVING:
            for instance in by_task[name]:
                assert instance.ended == LEFT_ORIGIN
                assert instance.score == 0.0
                assert [(f.field, f.skipped, f.prediction) for f in instance.fields] == [("q", LEFT_ORIGIN, None)]
        for name in ("Plain", "Window", "Form"):  # these stay on their page: filled in and scored as usual
            assert [(i.ended, i.score) for i in by_task[name]] == [(None, 1.0)] * len(by_task[name])
        skipped = result.as_dict()["skipped"]
        assert {s["task"] for s in skipped if s["reason"] == LEFT_ORIGIN} == set(LEAVING)
    # the model was asked about the pages that stayed only, each instance once
    assert len(model.requests) == 3 * 3


def test_without_the_guard_the_harness_still_reads_and_sends_nothing_of_another_origin(dataset, services, tmp_path):
    """A browser with no origin guard (a researcher's own): the page gets to the other service, but the harness
    ends the instance before the solver reads it, so the model is never asked."""
    options = chrome_options(str(tmp_path / "profile"), 1280, 943)
    task = dataset.task("Other port")
    with (
        serve_pages(lambda name, index: dataset.task(name).render_page(index), headers=frame_headers()) as pages,
        standin_model(default="echo") as model,
    ):
        driver = start_chrome(options, delete_profile=None)
        try:
            client = ChatClient(Endpoint(model.url, "stand-in", "k"))
            result = run(driver, LLMSolver(client), [task], pages.url, instances={task.name: [0, 1]})
        finally:
            driver.quit()
    assert [(i.ended, i.score) for i in result.instances] == [(LEFT_ORIGIN, 0.0)] * 2
    assert model.requests == []
    got = received(services)
    services["127.0.0.1"].requests.clear()
    assert got.count("/secret") == 2  # what make_driver()'s guard stops
    assert set(got) <= {"/secret", "/favicon.ico"}
