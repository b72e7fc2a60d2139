"""The agents pages' forms, as people use them in the browser's place (a session): a project's model endpoints
(add, change, remove; the key is write-only and never on any page, not even after a refused form; only the one who
added an endpoint or a project admin changes or removes it, others read it; a new URL removes the stored key and the
page says so before and after) and a new agent run from a form (the split chosen among the project's splits that
have batches; the API's checks: a refusal is a 400 naming the field with what was typed kept). Researchers and
admins of the project only: annotators and reviewers get a 403, people outside the project a 404. The endpoints
here are on loopback, allowed by ``MODEL_ENDPOINTS_ALLOW_PRIVATE`` (on in this module)."""

import pytest
from django.test import Client

from annotation.models import AgentRun, ModelEndpoint, Role, SplitConfig
from tests.support.actors import make_user
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch

pytestmark = pytest.mark.django_db
KEY = "sk-web-SECRET-55501234"
ENDPOINTS = "/projects/alpha/agents/endpoints/"
NEW_RUN = "/projects/alpha/agents/new/"
URL_NOTE = "Changing the URL removes the stored key unless a new key is given with it."


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True


@pytest.fixture
def people(alpha, beta):
    """Two of each role in alpha, and someone outside it."""
    made = {}
    for role in (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER, Role.ANNOTATOR):
        for n in (1, 2):
            made[f"{role}{n}"] = make_user(f"{role}{n}", alpha, role)
    made["outsider"] = make_user("outsider", beta, Role.RESEARCHER)
    return made


@pytest.fixture
def form_batch(alpha):
    config = SplitConfig.for_project(alpha)
    config.form_task_splits = {"evaluation_tasks_easy": ["Form task"]}
    config.save()
    return make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def endpoint_body(**changes):
    return {"name": "local", "url": "http://127.0.0.1:8191/v1", "model": "qwen", "key": KEY, **changes}


def add_endpoint(client, **changes):
    return client.post(ENDPOINTS, endpoint_body(**changes))


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_researchers_and_admins_manage_endpoints_and_the_key_is_never_shown(people, role):
    first, second = browser(people[f"{role}1"]), browser(people[f"{role}2"])
    added = add_endpoint(first)
    assert added.status_code == 302
    listed = second.get(ENDPOINTS)
    page = listed.content.decode()
    assert listed.status_code == 200
    assert "key stored" in page
    assert "qwen" in page
    assert KEY not in page
    endpoint = ModelEndpoint.objects.get(name="local")
    assert endpoint.owner == people[f"{role}1"]
    edit = f"{ENDPOINTS}{endpoint.pk}/"
    shown = first.get(edit).content.decode()
    assert KEY not in shown
    assert 'type="password"' in shown
    assert "key stored" in shown
    assert URL_NOTE in shown  # said before a change

    # empty key and the same URL: the stored key is kept; the others change
    changed = first.post(edit, {"url": endpoint.url, "model": "llama", "vision": "on", "key": ""})
    assert changed.status_code == 302
    page = first.get(ENDPOINTS).content.decode()
    assert "Model endpoint local saved." in page
    assert "llama" in page
    assert "key stored" in page
    endpoint.refresh_from_db()
    assert (endpoint.key, endpoint.vision) == (KEY, True)

    # a new key replaces it (never shown), remove_key removes it
    assert first.post(edit, {"url": endpoint.url, "model": "llama", "key": "sk-other-77"}).status_code == 302
    assert "sk-other-77" not in first.get(edit).content.decode()
    assert ModelEndpoint.objects.get(pk=endpoint.pk).key == "sk-other-77"

    # a new URL without a key removes the stored one, and the next page says so
    moved = first.post(edit, {"url": "http://127.0.0.1:8192/v1", "model": "llama", "key": ""}, follow=True)
    page = moved.content.decode()
    assert "Its URL changed, so its stored key was removed: give the key again" in page
    assert "8192" in page
    assert "no key" in page
    assert ModelEndpoint.objects.get(pk=endpoint.pk).key == ""
    with_key = {"url": "http://127.0.0.1:8193/v1", "model": "llama", "key": "sk-for-8193"}
    assert "Model endpoint local saved." in first.post(edit, with_key, follow=True).content.decode()
    assert ModelEndpoint.objects.get(pk=endpoint.pk).key == "sk-for-8193"
    assert first.post(edit, {"url": endpoint.url, "model": "llama", "remove_key": "on"}).status_code == 302
    assert ModelEndpoint.objects.get(pk=endpoint.pk).key == ""

    # a second endpoint by the other person, then removals by their owners
    assert add_endpoint(second, name="hosted", key="").status_code == 302
    assert add_endpoint(first, name="hosted").status_code == 400  # the name is taken
    for endpoint in ModelEndpoint.objects.all():
        owner = first if endpoint.owner == people[f"{role}1"] else second
        assert owner.post(f"{ENDPOINTS}{endpoint.pk}/delete").status_code == 302
    assert "No model endpoints yet" in second.get(ENDPOINTS).content.decode()


def test_another_researcher_reads_an_endpoint_but_its_page_refuses_a_change_or_removal(people):
    """The review's finding, on the pages: a researcher who did not add an endpoint changed its URL (to their own
    listener) or removed it. Now they read it; a change or a removal is a 403 and leaves it as it was; an admin may
    do both."""
    owner, other, admin = (browser(people[name]) for name in ("researcher1", "researcher2", "admin1"))
    assert add_endpoint(owner).status_code == 302
    endpoint = ModelEndpoint.objects.get()
    edit = f"{ENDPOINTS}{endpoint.pk}/"
    listed = other.get(ENDPOINTS).content.decode()
    assert f'action="{edit}delete"' not in listed  # no Remove button for them
    assert f'action="{edit}delete"' in owner.get(ENDPOINTS).content.decode()
    shown = other.get(edit)
    page = shown.content.decode()
    assert shown.status_code == 200
    assert 'id="endpoint-read-only"' in page
    assert "Only researcher1, who added it, or an admin of alpha may change or remove it." in page
    assert 'id="endpoint-form"' not in page
    assert KEY not in page
    listener = {"url": "http://127.0.0.1:9999/v1", "model": "qwen", "key": ""}
    refused = other.post(edit, listener)
    assert refused.status_code == 403
    assert "only the one who added model endpoint" in refused.content.decode()
    assert other.post(f"{edit}delete").status_code == 403
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.key) == ("http://127.0.0.1:8191/v1", KEY)
    assert 'id="endpoint-form"' in admin.get(edit).content.decode()
    assert admin.post(edit, {**listener, "url": "http://127.0.0.1:8195/v1"}).status_code == 302
    assert ModelEndpoint.objects.get().key == ""  # the admin moved it: the key stays behind
    assert admin.post(f"{edit}delete").status_code == 302
    assert not ModelEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"url": "ftp://127.0.0.1/v1"}, "url", "expected an http:// or https:// URL with a host"),
        ({"url": "http://user:pw@127.0.0.1/v1"}, "url", "put the key in the key setting"),
        ({"model": ""}, "model", "This field is required"),
        ({"name": "no spaces"}, "name", "letters, numbers, underscores or hyphens"),
    ],
)
def test_a_refused_endpoint_is_a_400_naming_the_field_keeping_what_was_typed_but_not_the_key(
    people, changes, field, message
):
    client = browser(people["researcher1"])
    response = add_endpoint(client, **changes)
    page = response.content.decode()
    assert response.status_code == 400
    assert message in page
    assert f'id="id_{field}"' in page
    assert KEY not in page
    typed = {**endpoint_body(), **changes}
    kept = [name for name in ("name", "url", "model") if name != field and typed[name]]
    for name in kept:
        assert f'value="{typed[name]}"' in page
    assert not ModelEndpoint.objects.exists()
    if "@" in typed["url"]:  # a key typed into the URL is not shown back either: the URL comes back without it
        assert "user:pw" not in page
        assert 'value="http://127.0.0.1/v1"' in page


def test_a_taken_name_and_a_refused_change_keep_the_stored_endpoint_and_hide_the_key(people):
    client = browser(people["admin1"])
    assert add_endpoint(client).status_code == 302
    again = add_endpoint(client, model="other")
    assert again.status_code == 400
    assert "already has a model endpoint" in again.content.decode()
    assert KEY not in again.content.decode()
    endpoint = ModelEndpoint.objects.get()
    refused = client.post(f"{ENDPOINTS}{endpoint.pk}/", {"url": "gopher://x", "model": "m2", "key": "sk-typed-1"})
    page = refused.content.decode()
    assert refused.status_code == 400
    assert "expected an http:// or https:// URL with a host" in page
    assert 'value="gopher://x"' in page
    assert 'value="m2"' in page
    assert KEY not in page
    assert "sk-typed-1" not in page
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.model, endpoint.key) == ("http://127.0.0.1:8191/v1", "qwen", KEY)


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_annotators_and_reviewers_get_403_and_outsiders_404(alpha, people, role):
    endpoint = ModelEndpoint.objects.create(
        project=alpha,
        owner=people["admin1"],
        name="local",
        url="http://127.0.0.1:8191/v1",
        model="m",
        key=KEY,
    )
    pages = [ENDPOINTS, f"{ENDPOINTS}{endpoint.pk}/", NEW_RUN]
    for who, status in ((f"{role}1", 403), (f"{role}2", 403), ("outsider", 404)):
        client = browser(people[who])
        for url in pages:
            response = client.get(url)
            assert response.status_code == status, (who, url)
            assert KEY not in response.content.decode()
        assert client.post(ENDPOINTS, endpoint_body(name="mine")).status_code == status
        assert client.post(f"{ENDPOINTS}{endpoint.pk}/", {"url": "http://x/v1", "model": "x"}).status_code == status
        assert client.post(f"{ENDPOINTS}{endpoint.pk}/delete").status_code == status
        assert (
            client.post(NEW_RUN, {"split": "all", "solver": "oracle", "seed": 0, "metric": "official"}).status_code
            == status
        )
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.model) == ("http://127.0.0.1:8191/v1", "m")
    assert list(ModelEndpoint.objects.values_list("name", flat=True)) == ["local"]
    assert not AgentRun.objects.exists()


def run_body(**changes):
    return {"split": "test_easy", "solver": "oracle", "instances": "", "seed": "3", "metric": "official", **changes}


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_runs_start_from_the_form_queued_and_shown_on_their_page(
    people, form_batch, role, django_capture_on_commit_callbacks
):
    first, second = browser(people[f"{role}1"]), browser(people[f"{role}2"])
    assert add_endpoint(first).status_code == 302
    form = second.get(NEW_RUN)
    assert form.status_code == 200
    assert '<option value="local">' in form.content.decode()
    assert KEY not in form.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        oracle = second.post(NEW_RUN, run_body(instances="1", browsers="2"))
        llm = first.post(
            NEW_RUN,
            run_body(
                solver="llm",
                endpoint="local",
                temperature="0.5",
                max_tokens="200",
                in_flight="2",
                budget_requests="10",
                prompt_template="Answer these: {fields}",
            ),
        )
    runs = {run.solver: run for run in AgentRun.objects.all()}
    assert oracle.status_code == 302
    assert oracle["Location"] == f"/agents/runs/{runs['oracle'].pk}/"
    assert llm.status_code == 302
    assert llm["Location"] == f"/agents/runs/{runs['llm'].pk}/"
    for run, viewer in ((runs["oracle"], first), (runs["llm"], second)):
        page = viewer.get(f"/agents/runs/{run.pk}/").content.decode()
        assert '<span id="run-status">queued</span>' in page
        assert KEY not in page
    assert runs["oracle"].owner == people[f"{role}2"]
    assert (runs["oracle"].instances_per_task, runs["oracle"].seed, runs["oracle"].browsers) == (1, 3, 2)
    llm_page = second.get(f"/agents/runs/{runs['llm'].pk}/").content.decode()
    assert "<code>qwen</code> at endpoint <code>local</code>" in llm_page
    assert "temperature 0.5" in llm_page
    assert "budget 10 requests" in llm_page
    listed = first.get("/agents/runs/").content.decode()
    assert f'data-run="{runs["llm"].pk}"' in listed
    assert f'data-run="{runs["oracle"].pk}"' in listed


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"split": "test_hard"}, "split", "Select a valid choice. test_hard is not one of the available choices."),
        ({"split": "train"}, "split", "Select a valid choice. train is not one of the available choices."),
        ({"solver": "gpt"}, "solver", "unknown solver"),
        ({"solver": "python:os:System"}, "solver", "is not among the solver modules"),
        ({"solver": "python:agents.solvers:Nope"}, "solver", "cannot load solver"),
        ({"instances": "0"}, "instances", "expected a whole number from 1 to"),
        ({"seed": "x"}, "seed", "Enter a whole number"),
        ({"seed": "-1"}, "seed", "expected a whole number from 0 to"),
        ({"browsers": "99"}, "browsers", "expected a whole number from 1 to 16"),
        ({"solver": "llm"}, "endpoint", "the llm solver needs a model endpoint"),
        ({"solver": "llm", "endpoint": "nope"}, "endpoint", "Select a valid choice"),
        ({"solver": "llm", "endpoint": "local", "temperature": "9"}, "temperature", "expected a number from 0 to 2"),
        ({"solver": "llm", "endpoint": "local", "temperature": "nan"}, "temperature", "Enter a number"),
        ({"solver": "llm", "endpoint": "local", "max_tokens": "0"}, "max_tokens", "whole number from 1 to 1000000"),
        ({"solver": "llm", "endpoint": "local", "in_flight": "0"}, "in_flight", "whole number from 1 to 64"),
        ({"solver": "llm", "endpoint": "local", "timeout": "0"}, "timeout", "more than 0 and at most 3600"),
        ({"solver": "llm", "endpoint": "local", "prompt_template": "no placeholder"}, "prompt_template", "{fields}"),
        ({"solver": "llm", "endpoint": "local", "budget_requests": "0"}, "budget_requests", "whole number from 1"),
        ({"endpoint": "local"}, "endpoint", "only the llm solver takes model settings"),
    ],
)
def test_a_refused_run_is_a_400_naming_the_field_keeping_what_was_typed(people, form_batch, changes, field, message):
    client = browser(people["researcher1"])
    assert add_endpoint(client).status_code == 302
    response = client.post(NEW_RUN, run_body(**changes))
    page = response.content.decode()
    assert response.status_code == 400
    assert message in page
    errors = page.split(f'id="id_{field}"', 1)[1].split("</label>", 1)[0]
    assert 'class="errorlist' in errors, f"no error on {field}"
    for name, value in changes.items():
        if name not in ("endpoint", "prompt_template", "split"):
            assert f'value="{value}"' in page
    if "prompt_template" in changes:
        assert changes["prompt_template"] in page
    assert KEY not in page
    assert not AgentRun.objects.exists()


def test_the_split_is_chosen_among_the_project_s_splits_that_have_batches(people, form_batch):
    page = browser(people["researcher1"]).get(NEW_RUN).content.decode()
    choices = page.split('id="id_split"', 1)[1].split("</select>", 1)[0]
    assert '<option value="test_easy" selected>test_easy (1)</option>' in choices
    assert '<option value="all">all (1)</option>' in choices
    assert "train" not in choices  # every batch is in test_easy: train has none
    assert 'id="no-splits"' not in page


def test_a_batch_uploaded_from_the_web_runs_on_all_by_default_on_the_page_and_the_api(
    people, alpha, api_for, django_capture_on_commit_callbacks
):
    """A batch uploaded from the web is in no split list: the form offers ``all`` and ``train`` and chooses
    ``all`` (it offered ``test_easy`` as free text, a 400); the API's default is the same."""
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Uploaded")
    client = browser(people["researcher1"])
    page = client.get(NEW_RUN).content.decode()
    choices = page.split('id="id_split"', 1)[1].split("</select>", 1)[0]
    assert '<option value="all" selected>all (1)</option>' in choices
    assert '<option value="train">train (1)</option>' in choices
    assert "test_easy" not in choices
    with django_capture_on_commit_callbacks(execute=False):
        started = client.post(NEW_RUN, run_body(split="all"))
        from_api = api_for(people["researcher2"]).post(
            "/api/agent-runs/", {"project": "alpha", "solver": "oracle", "instances": 1}, format="json"
        )
    assert started.status_code == 302
    assert from_api.status_code == 202, from_api.json()
    assert from_api.json()["split"] == "all"
    assert sorted(AgentRun.objects.values_list("split", flat=True)) == ["all", "all"]


def test_a_project_without_form_batches_says_so_and_refuses_a_run_naming_the_split(people, api_for):
    client = browser(people["admin1"])
    page = client.get(NEW_RUN).content.decode()
    assert 'id="no-splits"' in page
    assert 'href="/work/batches/new/"' in page
    refused = client.post(NEW_RUN, run_body(split=""))
    assert refused.status_code == 400
    errors = refused.content.decode().split('id="id_split"', 1)[1].split("</label>", 1)[0]
    assert "This project has no form batches to run on yet: upload or import one first." in errors
    from_api = api_for(people["admin1"]).post(
        "/api/agent-runs/", {"project": "alpha", "solver": "oracle"}, format="json"
    )
    assert from_api.status_code == 400
    assert from_api.json()["errors"] == [
        {"field": "split", "message": "project 'alpha' has no form batches yet: upload or import one first"}
    ]
    assert not AgentRun.objects.exists()
