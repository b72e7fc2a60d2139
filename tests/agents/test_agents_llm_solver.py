"""The ``llm`` solver without the platform: the strict parse of model answers, and runs in real headless
Chromium against the stand-in model server on loopback (gold, nonsense: no field's error, a spent budget, an
unusable endpoint), on several browsers at once."""

import re

import pytest

from agents.browser import make_driver
from agents.harness import StopRun, sample_instances
from agents.harness import run as run_solver
from agents.llm import Budget, ChatClient, Endpoint
from agents.llm_solver import DEFAULT_TEMPLATE, LLMSolver, check_template, parse_calls, render_prompt
from agents.parallel import Item, run_parallel
from agents.server import serve
from agents.solvers import DoNothing, Oracle
from devtools.standin_model import NONSENSE, gold_book, standin_model
from tests.support.agents_data import form_dataset, real_data

pytestmark = pytest.mark.browser
# test_easy tasks whose pages show their inputs, so that the stand-in tells the instance from the prompt (on
# "Word Formality Annotation" the words come from a CDN script: the page, and so a model, never sees them).
REAL_TASKS = ("Missing Adjective", "Scalar Adjectives Identification", "Goal feasibility")


def test_calls_parse_in_every_accepted_form_and_nothing_is_evaluated():
    parsed = parse_calls(
        "Here you go:\n```python\nmodify_text('q1', 'it\\'s fine')\nself.actions.modify_radio('q2', 3)\n"
        "actions.modify_checkbox(input_name='q3', input_value='a|b')\nclick(10, 20.5)\n```"
    )
    assert [(c.method, c.args, c.kwargs, c.field) for c in parsed.calls] == [
        ("modify_text", ["q1", "it's fine"], {}, "q1"),
        ("modify_radio", ["q2", 3], {}, "q2"),
        ("modify_checkbox", [], {"input_name": "q3", "input_value": "a|b"}, "q3"),
        ("click", [10, 20.5], {}, None),
    ]
    assert parsed.problems == []


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("execute_js_command('document.body.remove()')", "execute_js_command() is not a call of the action library"),
        ("get_html('http://169.254.169.254/')", "get_html() is not a call of the action library"),
        ("modify_text('q', open('/etc/passwd').read())", "must be plain values"),
        ("modify_text('q', *['a'])", "must be plain values"),
        ("modify_text('q')", "modify_text(): missing a required argument"),
        ("modify_text('q', 'a', 'b')", "modify_text(): too many positional arguments"),
        ("x = modify_text('q', 'a')", "not a call"),
        ("os.system('rm -rf /')", "os.system() is not a call of the action library"),
        ("modify_text('q', 'a'", "not a call (does not parse)"),
        (NONSENSE, "not a call (does not parse)"),
    ],
)
def test_anything_else_is_a_problem_with_its_line(answer, reason):
    parsed = parse_calls(answer)
    assert parsed.calls == []
    assert len(parsed.problems) == 1
    assert reason in parsed.problems[0][1]


def test_one_bad_line_leaves_the_others_standing():
    parsed = parse_calls("modify_text('a', 'x')\nthis is prose\nmodify_radio('b', '1')")
    assert [c.method for c in parsed.calls] == ["modify_text", "modify_radio"]
    assert parsed.problems == [("this is prose", "not a call")]  # valid Python (a comparison), not a call


def test_the_prompt_template_fills_its_placeholders_and_keeps_other_braces():
    values = {"task": "T", "instructions": "I", "page": "P", "fields": "- q: radio"}
    prompt = render_prompt("{task} {json: {}} {fields}", values)
    assert prompt == "T {json: {}} - q: radio"
    assert check_template(DEFAULT_TEMPLATE) is None
    assert "must contain {fields}" in check_template("no fields here")


@pytest.fixture(scope="module")
def pages_of_real_tasks():
    dataset = real_data()
    tasks = [dataset.task(name) for name in REAL_TASKS]
    with serve(dataset) as pages:
        yield tasks, pages


def test_answering_gold_on_two_browsers_scores_like_the_oracle_on_real_tasks(pages_of_real_tasks):
    tasks, pages = pages_of_real_tasks
    sampled = sample_instances(tasks, 2, seed=11)
    book = gold_book(tasks, {t.name: list(range(len(t))) for t in tasks})
    items = [Item(task, index, pages.url(task.name, index)) for task in tasks for index in sampled[task.name]]
    with standin_model(book=book) as model:
        client = ChatClient(Endpoint(model.url, "stand-in", "k", in_flight=2))
        llm = [f[1] for f in run_parallel(items, 2, make_driver, lambda: LLMSolver(client)) if f]
        oracle = [f[1] for f in run_parallel(items, 2, make_driver, lambda: Oracle(0)) if f]
    assert len(llm) == len(oracle) == 6
    llm_scores = {(r.task, r.instance): r.score for r in llm}
    assert all(score > 0.99 for score in llm_scores.values()), llm_scores
    assert llm_scores == pytest.approx({(r.task, r.instance): r.score for r in oracle})
    assert model.counts["gold"] == 6
    assert all(r.answer and "modify_" in r.answer for r in llm)
    assert all(not f.error for r in llm for f in r.fields)


def test_nonsense_is_no_field_s_error_but_a_note_per_instance_and_scores_as_doing_nothing(tmp_path):
    dataset = form_dataset(tmp_path)
    task = dataset.task("Form task")
    driver = make_driver()
    try:
        with serve(dataset) as pages, standin_model(default="nonsense") as model:
            client = ChatClient(Endpoint(model.url, "stand-in", "k"))
            llm = run_solver(driver, LLMSolver(client), [task], pages.url, per_task=2)
            nothing = run_solver(driver, DoNothing(), [task], pages.url, per_task=2)
    finally:
        driver.quit()
    assert llm.as_dict()["overall"] <= nothing.as_dict()["overall"]
    solved = [f for r in llm.instances for f in r.fields if f.skipped is None]
    assert solved
    assert not any(f.error for f in solved)
    assert all(r.answer == NONSENSE and "holds no call" in r.unapplied[0]["reason"] for r in llm.instances)
    assert [f.usage["tokens_in"] > 0 for r in llm.instances for f in r.fields if f.usage] == [True, True]


@pytest.mark.parametrize(
    ("budget", "behaviour", "reason"),
    [
        (Budget(max_requests=1), "gold", "the budget of 1 model requests is spent"),
        (None, "401", "refused the key (HTTP 401)"),
    ],
)
def test_a_spent_budget_or_an_unusable_endpoint_stops_the_run_not_a_field(tmp_path, budget, behaviour, reason):
    dataset = form_dataset(tmp_path)
    task = dataset.task("Form task")
    with serve(dataset) as pages, standin_model(default=behaviour) as model:
        client = ChatClient(Endpoint(model.url, "stand-in", "k"), budget=budget)
        items = [Item(task, index, pages.url(task.name, index)) for index in range(2)]
        done = []

        def consume():
            for finished in run_parallel(items, 1, make_driver, lambda: LLMSolver(client)):
                if finished:
                    done.append(finished[1])

        with pytest.raises(StopRun, match=re.escape(reason)) as stopped:
            consume()
    assert stopped.value.budget is (budget is not None)
    assert len(done) == (1 if budget else 0)


def test_a_vision_model_gets_a_screenshot_of_the_page_with_the_prompt(tmp_path):
    dataset = form_dataset(tmp_path)
    task = dataset.task("Form task")
    driver = make_driver()
    try:
        with serve(dataset) as pages, standin_model(default="text:modify_select('colour', 'red')") as model:
            client = ChatClient(Endpoint(model.url, "stand-in", "k"))
            result = run_solver(driver, LLMSolver(client, vision=True), [task], pages.url, instances={task.name: [0]})
    finally:
        driver.quit()
    text, image = model.requests[0]["body"]["messages"][1]["content"]
    assert text["type"] == "text"
    assert "- colour: select; values: 'NA' (pick), 'red', '2' (two)" in text["text"]
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    colour = next(f for f in result.instances[0].fields if f.field == "colour")
    assert (colour.prediction, colour.score) == ("red", 1.0)
