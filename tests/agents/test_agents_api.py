"""The agent-run API without a worker: bad requests answer 400 naming the field and store nothing; per-project
roles decide who may start, see and cancel runs. (Runs on a real worker: ``test_agent_runs_worker.py``.)"""

import pytest

from annotation.models import AgentRun, Evaluation, JobStatus, Role, SplitConfig
from tests.support.actors import make_user, signed_in
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch

pytestmark = pytest.mark.django_db
RUNS = "/api/agent-runs/"


@pytest.fixture
def form_batch(alpha):
    config = SplitConfig.for_project(alpha)
    config.form_task_splits = {"evaluation_tasks_easy": ["Form task", "Missing task"]}
    config.save()
    return make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"split": "test_hard"}, "split", "unknown split 'test_hard'; this project has: all, test_easy, train"),
        ({"split": "train"}, "split", "split 'train' has no form batches in project 'alpha'"),
        ({"solver": "gpt"}, "solver", "unknown solver 'gpt'; expected oracle, do-nothing or python:module:Class"),
        ({"solver": "python:os:System"}, "solver", "module 'os' is not among the solver modules"),
        ({"instances": 0}, "instances", "greater than or equal to 1"),
        ({"metric": "bleu"}, "metric", "not a valid choice"),
        ({"seed": "x"}, "seed", "valid integer"),
        # The seed column holds 32 bits: 2^31 was stored as -2^31, 2^63 and up were a 500.
        ({"seed": 2**63}, "seed", "less than or equal to 2147483647"),
        ({"seed": 2**64 + 1}, "seed", "less than or equal to 2147483647"),
        ({"seed": 2**31}, "seed", "less than or equal to 2147483647"),
        ({"seed": -1}, "seed", "greater than or equal to 0"),
        ({"instances": 2**63}, "instances", "less than or equal to 100000"),
        ({"instances": -(2**63)}, "instances", "greater than or equal to 1"),
        # A spec that names no Solver class: refused here, not on the worker.
        ({"solver": "python:agents.harness:FieldRequest"}, "solver", "is not a subclass of agents.harness.Solver"),
        ({"solver": "python:agents.solvers:load_solver"}, "solver", "is not a subclass of agents.harness.Solver"),
        ({"solver": "python:agents.solvers:Nope"}, "solver", "cannot load solver"),
        ({"solver": "python:agents.nowhere:Solver"}, "solver", "cannot load solver"),
        # A typo is never quietly dropped: every unknown field is named.
        ({"sead": 3, "instance": 2}, "sead", "unknown field; allowed: browsers, budget_requests"),
        ({"instance": 2, "seed": -1}, "instance", "greater than or equal to 0"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_field_and_stores_nothing(
    researcher, api_for, form_batch, body, field, message
):
    response = api_for(researcher).post(RUNS, {"project": "alpha", "solver": "oracle", **body}, format="json")

    assert response.status_code == 400, response.json()
    text = str(response.json())
    assert field in text
    assert message in text
    assert not AgentRun.objects.exists()


def test_a_run_is_created_queued_with_its_settings(researcher, api_for, form_batch, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = api_for(researcher).post(
            RUNS, {"project": "alpha", "solver": "do-nothing", "instances": 1, "seed": 4}, format="json"
        )

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued"
    assert body["split"] == "test_easy"
    assert body["instances"] == 1
    assert body["seed"] == 4
    assert body["metric"] == "official"
    assert body["results"] == {}
    assert body["results_page"].endswith(f"/agents/runs/{body['id']}/")


def test_the_largest_seed_is_stored_as_given(researcher, api_for, form_batch, django_capture_on_commit_callbacks):
    client = api_for(researcher)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(RUNS, {"project": "alpha", "solver": "oracle", "seed": 2**31 - 1}, format="json")

    assert response.status_code == 202, response.json()
    assert client.get(f"{RUNS}{response.json()['id']}/").json()["seed"] == 2**31 - 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seed": 2**31}, "seed: expected a whole number from 0 to 2147483647"),
        ({"seed": -3}, "seed: expected a whole number from 0 to 2147483647"),
        ({"solver": "python:agents.harness:FieldRequest"}, "is not a subclass of agents.harness.Solver"),
    ],
)
def test_the_run_agent_command_refuses_the_same_before_creating_a_run(
    researcher, form_batch, tmp_path, options, message
):
    from django.core.management import CommandError, call_command

    arguments = {"project": "alpha", "solver": "oracle", "out": tmp_path, "user": "researcher", **options}
    with pytest.raises(CommandError, match=message):
        call_command("run_agent", **arguments)
    assert not AgentRun.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("outsider", 404), ("owner", 403), ("reviewer", 403)])
def test_only_researchers_and_admins_of_the_project_start_see_or_cancel_runs(
    request, researcher, api_for, form_batch, who, status, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        run_id = api_for(researcher).post(RUNS, {"project": "alpha", "solver": "oracle"}, format="json").json()["id"]
    other = api_for(request.getfixturevalue(who))

    started = other.post(RUNS, {"project": "alpha", "solver": "oracle"}, format="json")
    assert started.status_code == status
    # Another role of the run's project: 403 saying who may (docs/api.md); outside the project: 404.
    assert other.get(f"{RUNS}{run_id}/").status_code == status
    assert other.get(f"{RUNS}{run_id}/fields/").status_code == status
    assert other.post(f"{RUNS}{run_id}/cancel/").status_code == status
    if status == 403:
        assert (
            started.json()["detail"]
            == "your role in 'alpha' cannot use agents and models (researchers and admins only)"
        )
        assert other.get(f"{RUNS}{run_id}/").json()["detail"] == started.json()["detail"]
        assert signed_in(request.getfixturevalue(who)).get(f"/agents/runs/{run_id}/").status_code == 403
    assert other.get(f"{RUNS}{run_id + 1}/").status_code == 404
    assert other.get(RUNS).json()["results"] == []
    assert AgentRun.objects.get().status == JobStatus.QUEUED


def test_a_split_filter_no_run_of_yours_can_have_is_a_400_naming_it(researcher, api_for, form_batch):
    client = api_for(researcher)
    assert client.get(RUNS, {"split": "test_easy"}).status_code == 200
    refused = client.get(RUNS, {"split": "zzz"})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "split"
    assert "expected one of: all, test_easy, train" in refused.json()["detail"]


def test_a_solver_filter_no_run_can_have_is_a_400_naming_it(researcher, api_for, form_batch):
    client = api_for(researcher)
    for solver in ("oracle", "do-nothing", "llm", "python:tests.support.agent_solvers:Gate"):
        assert client.get(RUNS, {"solver": solver}).status_code == 200
    refused = client.get(RUNS, {"solver": "oracel"})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "solver"
    assert "'oracel'" in refused.json()["detail"]
    assert "or llm" in refused.json()["detail"]


EVALUATIONS = "/api/evaluations/"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"task": "Nope", "instance": 0, "fields": {}}, "predictions[1].task", "unknown task 'Nope'"),
        ({"task": "Form task", "instance": 2, "fields": {}}, "predictions[1].instance", "instance out of range"),
        ({"task": "Form task", "instance": 1, "fields": {"zzz": "a"}}, "predictions[1].fields.zzz", "unknown field"),
        ({"task": "Form task", "instance": 1, "fields": {"grade": ["a"]}}, "predictions[1].fields.grade", "a list"),
        ({"task": "Form task", "instance": 1, "fields": {"level": "high"}}, "predictions[1].fields.level", "a range"),
        ({"task": "Form task", "instance": 1, "fields": {"name": None}}, "predictions[1].fields.name", "wrong value"),
    ],
)
def test_bad_turkingbench_predictions_are_a_400_naming_the_entry_and_store_nothing(
    researcher, api_for, form_batch, entry, field, message
):
    good = {"task": "Form task", "instance": 0, "fields": {"grade": "-1", "tags": ["a", "b"]}}
    body = {"project": "alpha", "format": "turkingbench", "predictions": [good, entry]}

    response = api_for(researcher).post(EVALUATIONS, body, format="json")

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [error["field"] for error in errors] == [field]
    assert message in errors[0]["message"]
    assert message in response.json()["detail"]
    assert not Evaluation.objects.exists()


def test_turkingbench_predictions_outside_the_named_split_are_refused(researcher, api_for, form_batch):
    entry = {"task": "Form task", "instance": 0, "fields": {}}
    body = {"project": "alpha", "format": "turkingbench", "split": "train", "predictions": [entry]}

    response = api_for(researcher).post(EVALUATIONS, body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "predictions[0].task"


# --- Who may cancel: the one who started the run, or an admin of its project ----------------------------------


def queued_run(user, api_for, capture) -> int:
    with capture(execute=False):
        response = api_for(user).post(RUNS, {"project": "alpha", "solver": "oracle"}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def test_a_researcher_cannot_cancel_a_colleagues_run_in_the_api_or_on_its_page(
    researcher, alpha, api_for, form_batch, django_capture_on_commit_callbacks
):
    colleague = make_user("colleague", alpha, Role.RESEARCHER)
    run_id = queued_run(researcher, api_for, django_capture_on_commit_callbacks)

    refused = api_for(colleague).post(f"{RUNS}{run_id}/cancel/")
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden"
    page = signed_in(colleague).get(f"/agents/runs/{run_id}/")
    assert page.status_code == 200  # the colleague reads the run ...
    assert 'id="cancel-run"' not in page.content.decode()  # ... and is offered no cancel
    assert signed_in(colleague).post(f"/agents/runs/{run_id}/cancel").status_code == 403
    assert api_for(researcher).get(f"{RUNS}{run_id}/").json()["status"] == "queued"


@pytest.mark.parametrize("surface", ["api", "page"])
def test_the_runs_owner_and_a_project_admin_cancel_it(
    researcher, alpha, api_for, form_batch, django_capture_on_commit_callbacks, surface
):
    admin = make_user("boss", alpha, Role.ADMIN)
    for who in (researcher, admin):
        run_id = queued_run(researcher, api_for, django_capture_on_commit_callbacks)
        if surface == "api":
            response = api_for(who).post(f"{RUNS}{run_id}/cancel/")
            assert response.status_code == 200
        else:
            page = signed_in(who).get(f"/agents/runs/{run_id}/").content.decode()
            assert 'id="cancel-run"' in page
            response = signed_in(who).post(f"/agents/runs/{run_id}/cancel", follow=True)
            assert response.status_code == 200
            assert "Cancelled" in response.content.decode()
            assert 'id="cancel-run"' not in response.content.decode()  # an ended run offers no cancel
        assert api_for(researcher).get(f"{RUNS}{run_id}/").json()["status"] == "cancelled"
