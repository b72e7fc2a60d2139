"""A project's model limits (``/api/model-limits/<project>/``, ``/projects/<name>/agents/limits/``): its researchers
read them, its admins change them (out of range: 400 naming the limit); an llm agent run or a prediction run asking
for more is a 400 naming the setting, on the page and through the API, and the defaults stay within them; the reply
limit reaches the run, which fails its call clearly. Prediction runs with nothing to predict are refused (400 naming
the split) or, when only the worker can tell, fail saying so. Every role: researcher, admin, reviewer, annotator,
non-member."""

import pytest
from django.test import Client

from annotation.actions.exports.splits import split_of
from annotation.models import AgentRun, DemoStatus, JobStatus, ModelEndpoint, ModelLimits, PredictionRun, Role
from devtools.standin_model import standin_model
from tests.support.actors import make_user, start_demo
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.corpus import ingest_corpus
from tests.support.forms_data import make_batch
from workers.agents.predict_runs import run_prediction

pytestmark = pytest.mark.django_db
LIMITS = "/api/model-limits/alpha/"
PAGE = "/projects/alpha/agents/limits/"
RUNS = "/api/agent-runs/"
NEW_RUN = "/projects/alpha/agents/new/"
DEFAULTS = {
    "project": "alpha",
    "max_tokens": 4096,
    "max_in_flight": 8,
    "max_browsers": 4,
    "max_timeout": 300.0,
    "max_instances": 1000,
    "max_reply_bytes": 1048576,
}


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True  # the endpoints here are on loopback


@pytest.fixture
def team(alpha, beta):
    return {
        "rex": make_user("rex", alpha, Role.RESEARCHER),
        "ada": make_user("ada", alpha, Role.ADMIN),
        "rev": make_user("rev", alpha, Role.REVIEWER),
        "ann": make_user("ann", alpha, Role.ANNOTATOR),
        "olga": make_user("olga", beta, Role.ADMIN),
    }


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_researchers_read_the_limits_and_only_admins_change_them(team, api_for):
    rex, ada = api_for(team["rex"]), api_for(team["ada"])
    assert rex.get(LIMITS).json() == DEFAULTS
    assert browser(team["rex"]).get(PAGE).status_code == 200
    assert not ModelLimits.objects.exists()  # reading never writes
    refused = rex.patch(LIMITS, {"max_tokens": 9000}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "only an admin of project 'alpha' may change its model limits"
    changed = ada.patch(LIMITS, {"max_tokens": 512, "max_timeout": 30.5}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json() == {**DEFAULTS, "max_tokens": 512, "max_timeout": 30.5}
    again = ada.patch(LIMITS, {"max_browsers": 2}, format="json")
    assert again.json() == {**DEFAULTS, "max_tokens": 512, "max_timeout": 30.5, "max_browsers": 2}
    assert rex.get(LIMITS).json() == again.json()  # the researcher reads what the admin set
    assert ModelLimits.objects.count() == 1


def test_the_list_holds_the_limits_of_the_projects_you_run_models_in(team, api_for, beta):
    api_for(team["ada"]).patch(LIMITS, {"max_tokens": 700}, format="json")
    listed = api_for(team["rex"]).get("/api/model-limits/").json()
    assert listed["results"] == [{**DEFAULTS, "max_tokens": 700}]
    assert [row["project"] for row in api_for(team["olga"]).get("/api/model-limits/").json()["results"]] == ["beta"]
    assert api_for(team["ann"]).get("/api/model-limits/").json()["results"] == []


@pytest.mark.parametrize(("who", "status"), [("rev", 403), ("ann", 403), ("olga", 404)])
def test_reviewers_annotators_and_other_projects_neither_read_nor_change_the_limits(team, api_for, who, status):
    client = api_for(team[who])
    assert client.get(LIMITS).status_code == status
    if status == 403:  # the reason names who may, not another permission
        assert (
            client.get(LIMITS).json()["detail"].endswith("cannot use agents and models (researchers and admins only)")
        )
    assert client.patch(LIMITS, {"max_tokens": 9}, format="json").status_code == status
    page = browser(team[who])
    assert page.get(PAGE).status_code == status
    assert page.post(PAGE, {**DEFAULTS, "max_tokens": 9}).status_code == status
    assert not ModelLimits.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
        ({"max_tokens": 2_000_000}, "max_tokens", "less than or equal to 1000000"),
        ({"max_in_flight": 65}, "max_in_flight", "less than or equal to 64"),
        ({"max_browsers": 17}, "max_browsers", "less than or equal to 16"),
        ({"max_timeout": 0.5}, "max_timeout", "greater than or equal to 1"),
        ({"max_instances": "many"}, "max_instances", "valid integer"),
        ({"max_reply_bytes": 100}, "max_reply_bytes", "greater than or equal to 1024"),
    ],
)
def test_a_limit_out_of_range_is_a_400_naming_it_on_the_api_and_the_page(team, api_for, changes, field, message):
    response = api_for(team["ada"]).patch(LIMITS, changes, format="json")
    assert response.status_code == 400, response.json()
    assert field in [error["field"] for error in response.json()["errors"]]
    assert message in response.json()["detail"]
    form = {**DEFAULTS, **changes}
    page = browser(team["ada"]).post(PAGE, form)
    assert page.status_code == 400
    errors = page.content.decode().split(f'id="id_{field}"', 1)[1].split("</label>", 1)[0]
    assert 'class="errorlist' in errors
    assert not ModelLimits.objects.exists()


def test_an_unknown_limit_is_a_400_naming_it_and_nothing_changes(team, api_for):
    response = api_for(team["ada"]).patch(LIMITS, {"max_token": 512, "max_browsers": 2}, format="json")
    assert response.status_code == 400, response.json()
    (error,) = response.json()["errors"]
    assert error["field"] == "max_token"
    assert error["message"].startswith("unknown field; allowed: max_browsers, max_in_flight, max_instances")
    assert not ModelLimits.objects.exists()


def test_the_page_shows_the_limits_and_an_admin_changes_them_there(team):
    ada, rex = browser(team["ada"]), browser(team["rex"])
    shown = ada.get(PAGE).content.decode()
    assert '<tr data-limit="max_tokens"><td>Tokens per answer (<code>max_tokens</code>)</td><td>4096</td></tr>' in shown
    assert 'id="limits-form"' in shown
    assert 'id="limits-form"' not in rex.get(PAGE).content.decode()
    assert "An admin of alpha may change them." in rex.get(PAGE).content.decode()
    assert rex.post(PAGE, {**DEFAULTS, "max_tokens": 9}).status_code == 403
    saved = ada.post(PAGE, {**DEFAULTS, "max_tokens": 300, "max_instances": 2}, follow=True).content.decode()
    assert "Model limits saved" in saved
    assert "<td>300</td>" in saved
    limits = ModelLimits.objects.get()
    assert (limits.max_tokens, limits.max_instances, limits.max_browsers) == (300, 2, 4)
    assert 'href="/projects/alpha/agents/limits/"' in rex.get(NEW_RUN).content.decode()


@pytest.fixture
def lowered(team, alpha, api_for):
    """A form batch of 2 instances, an endpoint, and limits an admin lowered."""
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    ModelEndpoint.objects.create(project=alpha, owner=team["rex"], name="local", url="http://127.0.0.1:9/v1", model="m")
    changes = {"max_tokens": 100, "max_in_flight": 2, "max_browsers": 2, "max_timeout": 30, "max_instances": 1}
    assert api_for(team["ada"]).patch(LIMITS, changes, format="json").status_code == 200
    return team


OVER = [
    ({"max_tokens": 101}, "max_tokens", "at most 100 tokens per answer in project 'alpha'"),
    ({"in_flight": 3}, "in_flight", "at most 2 requests in flight in project 'alpha'"),
    ({"browsers": 3}, "browsers", "at most 2 browsers in project 'alpha'"),
    ({"timeout": 30.5}, "timeout", "at most 30 seconds per request in project 'alpha'"),
    ({}, "instances", "this run would open 2 instances; at most 1 per run in project 'alpha'"),
]


@pytest.mark.parametrize(("changes", "field", "message"), OVER)
def test_an_llm_run_over_a_limit_is_a_400_naming_the_setting_on_the_api_and_the_page(
    lowered, api_for, changes, field, message
):
    run = {"split": "all", "solver": "llm", "endpoint": "local", "instances": None if field == "instances" else 1}
    response = api_for(lowered["rex"]).post(RUNS, {"project": "alpha", **run, **changes}, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"][0]["field"] == field
    assert message in response.json()["detail"]
    form = {
        "seed": "0",
        "metric": "official",
        **{k: "" if v is None else str(v) for k, v in {**run, **changes}.items()},
    }
    page = browser(lowered["rex"]).post(NEW_RUN, form)
    assert page.status_code == 400
    errors = page.content.decode().split(f'id="id_{field}"', 1)[1].split("</label>", 1)[0]
    assert message.replace("'", "&#x27;") in errors
    assert not AgentRun.objects.exists()


def test_an_llm_run_at_the_limits_starts_and_its_defaults_stay_within_them(
    lowered, api_for, django_capture_on_commit_callbacks
):
    at = {"max_tokens": 100, "in_flight": 2, "browsers": 2, "timeout": 30, "instances": 1}
    body = {"project": "alpha", "split": "all", "solver": "llm", "endpoint": "local"}
    with django_capture_on_commit_callbacks(execute=False):
        started = api_for(lowered["rex"]).post(RUNS, {**body, **at}, format="json")
        defaults = api_for(lowered["ada"]).post(RUNS, {**body, "instances": 1}, format="json")
        oracle = api_for(lowered["ada"]).post(RUNS, {**body, "solver": "oracle", "endpoint": None}, format="json")
    assert started.status_code == 202, started.json()
    assert defaults.status_code == 202, defaults.json()
    assert (defaults.json()["max_tokens"], defaults.json()["timeout"]) == (100, 30.0)  # not 1024 and 60
    assert oracle.status_code == 202, oracle.json()  # the limits are on the runs that ask a model


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"max_tokens": 101}, "max_tokens"), ({"in_flight": 3}, "in_flight"), ({"timeout": 31}, "timeout")],
)
def test_a_prediction_run_over_a_limit_is_a_400_naming_the_setting(lowered, api_for, changes, field):
    body = {"project": "alpha", "format": "weblinx", "split": "valid", "endpoint": "local", **changes}
    response = api_for(lowered["rex"]).post("/api/prediction-runs/", body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"][0]["field"] == field
    page = browser(lowered["rex"]).post("/agents/predictions/", {k: str(v) for k, v in body.items()}, follow=True)
    assert f"{field}: at most" in page.content.decode()
    assert not PredictionRun.objects.exists()


def test_a_prediction_run_with_nothing_to_predict_is_a_400_naming_the_split(lowered, api_for):
    body = {"project": "alpha", "format": "mind2web", "split": "train", "endpoint": "local"}
    response = api_for(lowered["rex"]).post("/api/prediction-runs/", body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"] == [
        {
            "field": "split",
            "message": "nothing to predict: split 'train' has no validated demonstrations in project 'alpha' (a "
            "prediction run asks the model about the mind2web export of the validated ones)",
        }
    ]
    page = browser(lowered["ada"]).post("/agents/predictions/", body, follow=True).content.decode()
    assert "nothing to predict: split &#x27;train&#x27; has no validated demonstrations" in page
    assert not PredictionRun.objects.exists()


def split_of_demo(project, fmt, demo) -> str:
    return split_of(project, fmt)(demo)


def test_a_prediction_run_whose_split_emptied_or_has_nothing_to_ask_fails_saying_so(
    team, alpha, api_for, django_capture_on_commit_callbacks
):
    """Only the worker can tell: the split's demonstrations were unvalidated after the run was made, or the one
    there has no turn to predict (a demonstration with no turns). Neither ends done with 0 predictions."""
    ModelEndpoint.objects.create(project=alpha, owner=team["rex"], name="local", url="http://127.0.0.1:9/v1", model="m")
    demo = start_demo(team["rex"], alpha, status=DemoStatus.VALIDATED)
    split = split_of_demo(alpha, "weblinx", demo)
    body = {"project": "alpha", "format": "weblinx", "split": split, "endpoint": "local"}
    runs = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=False):
            response = api_for(team["rex"]).post("/api/prediction-runs/", body, format="json")
        assert response.status_code == 202, response.json()
        runs.append(response.json()["id"])
    run_prediction(runs[0])  # the demonstration has no turns
    type(demo).objects.filter(pk=demo.pk).update(status=DemoStatus.RECORDED)
    run_prediction(runs[1])  # no validated demonstration is left in the split
    first, second = (api_for(team["rex"]).get(f"/api/prediction-runs/{pk}/").json() for pk in runs)
    assert first["status"] == second["status"] == JobStatus.FAILED
    assert first["error"] == (
        f"nothing to predict: the weblinx export of split '{split}' has no official turns to predict (no "
        "validated demonstration of the split has any)"
    )
    assert second["error"] == f"nothing to predict: split '{split}' has no validated demonstrations (any more)"
    page = browser(team["rex"]).get(f"/agents/predictions/{runs[1]}/").content.decode()
    assert "nothing to predict" in page


def test_the_reply_limit_reaches_the_run_whose_call_fails_saying_so(team, api_for, django_capture_on_commit_callbacks):
    """A prediction run on the project's demonstrations against a stand-in whose answers are longer than the
    project's reply limit (lowered by its admin to 1024 bytes): the run fails saying the reply was too large."""
    project = ingest_corpus(project="alpha", demos=2, turns=12, elements=20, seed=3)[0].project
    ModelLimits.objects.create(project=project, max_reply_bytes=1024)
    split = split_of_demo(project, "mind2web", project.demonstrations.order_by("name").first())
    with standin_model(default="text:Answer: B.\nAction: CLICK\nValue:" + " " * 4000) as server:
        ModelEndpoint.objects.create(project=project, owner=team["rex"], name="local", url=server.url, model="m")
        body = {"project": "alpha", "format": "mind2web", "split": split, "endpoint": "local", "in_flight": 1}
        with django_capture_on_commit_callbacks(execute=False):
            response = api_for(team["rex"]).post("/api/prediction-runs/", body, format="json")
        assert response.status_code == 202, response.json()
        run_prediction(response.json()["id"])
    run = api_for(team["rex"]).get(f"/api/prediction-runs/{response.json()['id']}/").json()
    assert run["status"] == JobStatus.FAILED
    assert run["error"].endswith("sent a reply larger than 1024 bytes, the most read; reading stopped")
    assert server.answered() >= 1
