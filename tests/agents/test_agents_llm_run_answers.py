"""What an llm agent run keeps of a model's answers, on a real Celery worker with headless Chromium and the
stand-in model on loopback: a model echoing its key (bare, disguised, as ``Bearer <key>``, typed into a field,
quoted in a failing call and in a line no field takes) and answering 5 MB leaves the key in no table, page, API
answer or log, and stores at most ``MAX_ANSWER_CHARS`` of the answer; the instance's page shows the first characters and
offers the whole, as stored, to the run's readers only; every call no field took is on the page and in the API
with its line and why."""

import pytest
from django.test import Client

from agents.answers import MAX_ANSWER_CHARS
from annotation.models import AgentFieldResult, AgentModelAnswer, AgentRunInstance, ModelLimits
from annotation.views.agents import ANSWER_SHOWN
from devtools.standin_model import standin_model
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch
from tests.support.jobs import poll_job

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.django_db(transaction=True)]
RUNS = "/api/agent-runs/"
KEY = "sk-echoed-TOP-SECRET-77bb99"
# The key disguised (agents.answers.redact_answer): upper-cased, a zero-width space inside, spaced out, \\u escapes.
DISGUISED = [KEY.upper(), f"{KEY[:6]}\u200b{KEY[6:]}", " ".join(KEY), "".join(f"\\u{ord(c):04x}" for c in KEY)]
ANSWER = "\n".join(
    [
        "I will fill the form now.",
        "modify_text('NAME', 'Ann')",
        "modify_text('name', 'Bearer {key}')",
        "modify_radio('grade', '{key}')",
        "launch_rocket('{key}')",
        *(f"# {disguised}" for disguised in DISGUISED),
        "# " + "y" * (5 * 1024 * 1024),
    ]
)


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True


@pytest.fixture
def worker_env(worker_env):
    return {**worker_env, "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1"}


def session(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_an_echoed_key_is_stored_and_shown_nowhere_and_a_5_mb_answer_is_kept_bounded(
    alpha, researcher, outsider, api_for, worker, tmp_path
):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    ModelLimits.objects.create(project=alpha, max_reply_bytes=16 * 1024 * 1024)
    client = api_for(researcher)
    with standin_model(default=f"key:{ANSWER}") as model:
        body = {"project": "alpha", "name": "echo", "url": model.url, "model": "echo", "key": KEY}
        assert client.post("/api/model-endpoints/", body, format="json").status_code == 201
        body = {"project": "alpha", "split": "all", "solver": "llm", "endpoint": "echo", "instances": 1, "browsers": 1}
        started = client.post(RUNS, body, format="json")
        assert started.status_code == 202, started.json()
        run_id = started.json()["id"]
        run = poll_job(client, f"{RUNS}{run_id}/", timeout=300)[-1]
    assert run["status"] == "done", run["error"]

    # Stored once masked and cut: the run's answer cache and the instance.
    (cached,) = AgentModelAnswer.objects.filter(run_id=run_id)
    row = AgentRunInstance.objects.get(run_id=run_id)
    assert cached.text == row.answer
    assert row.answer.startswith(
        "I will fill the form now.\nmodify_text('NAME', 'Ann')\nmodify_text('name', 'Bearer [key]')"
    )
    assert MAX_ANSWER_CHARS < len(row.answer) < MAX_ANSWER_CHARS + 100
    assert "more characters cut" in row.answer
    fields = {f.name: f for f in AgentFieldResult.objects.filter(row=row)}
    assert fields["name"].value == "Bearer [key]"
    assert fields["name"].calls == ["self.actions.modify_text('name', 'Bearer [key]')"]
    assert "modify_radio('grade', '[key]') failed" in fields["grade"].error
    assert not any(f.error for name, f in fields.items() if name != "grade")  # prose, the cut: no field's error
    by_line = {entry["line"]: entry for entry in row.unapplied}
    assert set(by_line) == {"modify_text('NAME', 'Ann')", "launch_rocket('[key]')"}
    assert "the page has 'name'" in by_line["modify_text('NAME', 'Ann')"]["reason"]
    for field in fields.values():
        assert KEY not in f"{field.value} {field.calls} {field.error}"

    # The pages: a truncated view with the whole as a download (the run's readers only); the key nowhere.
    reader = session(researcher)
    instance_page = reader.get(f"/agents/runs/{run_id}/instances/{row.pk}/").content.decode()
    assert f"The first {ANSWER_SHOWN} of {len(row.answer)} characters." in instance_page
    assert len(instance_page) < 50_000
    assert "unknown field &#x27;NAME&#x27;: the page has &#x27;name&#x27;" in instance_page
    download = reader.get(f"/agents/runs/{run_id}/instances/{row.pk}/answer.txt")
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment;")
    assert download.content.decode() == row.answer
    assert session(outsider).get(f"/agents/runs/{run_id}/instances/{row.pk}/answer.txt").status_code == 404
    run_page = reader.get(f"/agents/runs/{run_id}/").content.decode()
    assert '<td class="unapplied">2</td>' in run_page

    # The API: the instance with its answer (as stored) and what no field took; the fields; the run.
    (listed,) = client.get(f"{RUNS}{run_id}/instances/").json()["results"]
    assert listed["answer"] == row.answer
    assert listed["unapplied"] == row.unapplied
    assert listed["page"].endswith(f"/agents/runs/{run_id}/instances/{row.pk}/")
    assert listed["ceiling"] == row.ceiling is not None
    assert listed["ended"] == ""
    fields = client.get(f"{RUNS}{run_id}/fields/").json()["results"]
    below = [f for f in fields if f["score"] is not None and f["score"] < f["ceiling"]]
    assert below
    assert all(f["shortfall"] for f in below)
    shown = [
        instance_page,
        download.content.decode(),
        run_page,
        str(listed),
        client.get(f"{RUNS}{run_id}/fields/").content.decode(),
        client.get(f"{RUNS}{run_id}/").content.decode(),
        (tmp_path / "worker.log").read_text(errors="replace"),
    ]
    assert not [text[:80] for text in shown if KEY in text]
    assert not [(text[:80], d) for text in shown for d in DISGUISED if d in text]
    assert "\n# [key]\n# [key]\n# [key]\n# [key]\n" in row.answer
