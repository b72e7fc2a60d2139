"""``manage.py run_agent`` (in-process, real headless Chromium) and the results pages it feeds: a run's table,
an instance's fields with the screenshot and gold answers, two runs side by side, and who may see them."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AgentRun, AgentRunInstance, JobStatus, Role
from tests.support.actors import make_user
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


@pytest.fixture
def runs(alpha, researcher, tmp_path):
    """An oracle run and a do-nothing run over both instances of the hand-built form."""
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    made = {}
    for solver in ("oracle", "do-nothing"):
        out = tmp_path / solver
        call_command(
            "run_agent", project="alpha", split="all", solver=solver, seed=1, out=out, user="researcher", stdout=None
        )
        made[solver] = (AgentRun.objects.get(solver=solver), out)
    return made


def test_run_agent_stores_the_run_and_writes_scores_and_actions(runs):
    run, out = runs["oracle"]
    scores = json.loads((out / "scores.json").read_text())
    actions = json.loads((out / "actions.json").read_text())

    assert run.status == JobStatus.DONE
    assert run.sampled == {"Form task": [0, 1]}
    assert set(scores) >= {"fields", "instances", "tasks", "overall", "metric", "solver", "seed", "sampled"}
    assert scores["metric"] == "official"
    assert scores["solver"] == "oracle"
    assert scores == run.results
    assert [(i["task"], i["instance"]) for i in scores["instances"]] == [("Form task", 0), ("Form task", 1)]
    assert {"task", "instance", "field", "type", "score", "ceiling"} == set(scores["fields"][0])
    # Each instance's best annotator is a ceiling the oracle reaches (the range's median ties the best annotator).
    assert [(i["score"], i["ceiling"]) for i in scores["instances"]] == [(1.0, 1.0), (1.0, 1.0)]
    assert scores["ceiling"]["tasks"] == {"Form task": scores["ceiling"]["overall"]}
    assert scores["ceiling"]["overall"] <= scores["overall"]
    assert scores["shortfalls"] == []
    assert set(scores["tasks"]["Form task"]) >= {"all", "radio", "checkbox", "text", "textarea", "select", "range"}
    calls = {field["name"]: field["calls"] for field in actions[0]["fields"]}
    assert calls["grade"] == ["self.actions.modify_radio('grade', '-1')"]
    nothing = runs["do-nothing"][0].results
    assert nothing["overall"] < scores["overall"]


def test_run_agent_refuses_bad_arguments_naming_them(alpha, researcher, tmp_path):
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("run_agent", project="nope", solver="oracle", out=tmp_path, user="researcher")
    with pytest.raises(CommandError, match="unknown solver 'gpt'"):
        call_command("run_agent", project="alpha", split="all", solver="gpt", out=tmp_path, user="researcher")
    with pytest.raises(CommandError, match="has no form batches"):
        call_command("run_agent", project="alpha", split="all", solver="oracle", out=tmp_path, user="researcher")
    assert not AgentRun.objects.exists()


def test_the_run_page_shows_the_table_and_the_instance_page_the_fields_gold_and_screenshot(client, researcher, runs):
    run = runs["oracle"][0]
    client.force_login(researcher)

    page = client.get(f"/agents/runs/{run.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-task="Form task"' in text
    assert f'<td id="overall">{run.results["overall"]:.4f}</td>' in text
    assert f'<td id="ceiling-overall" class="ceiling">{run.results["ceiling"]["overall"]:.4f}</td>' in text
    for kind in ("checkbox", "radio", "range", "select", "text", "textarea"):
        assert f"<th>{kind}</th>" in text
    row = AgentRunInstance.objects.get(run=run, instance=0)
    assert f"/agents/runs/{run.pk}/instances/{row.pk}/" in text

    detail = client.get(f"/agents/runs/{run.pk}/instances/{row.pk}/").content.decode()
    assert 'data-field="grade"' in detail
    assert '<strong id="instance-ceiling">1.0000</strong>' in detail
    assert "self.actions.modify_radio(&#x27;grade&#x27;, &#x27;-1&#x27;)" in detail
    assert "<code>A story &amp;amp; more</code>" in detail  # the gold answers, escaped
    assert f"/agents/runs/{run.pk}/instances/{row.pk}/screenshot.png" in detail
    shot = client.get(f"/agents/runs/{run.pk}/instances/{row.pk}/screenshot.png")
    assert shot.status_code == 200
    assert shot["Content-Type"] == "image/png"
    assert b"".join(shot.streaming_content)[:4] == b"\x89PNG"

    # Two runs side by side, and the list of runs.
    oracle, nothing = run, runs["do-nothing"][0]
    text = client.get("/agents/compare/", {"a": oracle.pk, "b": nothing.pk}).content.decode()

    a, b = oracle.results["overall"], nothing.results["overall"]
    assert f"<td>{a:.4f}</td><td>{b:.4f}</td><td>{b - a:.4f}</td>" in text
    assert 'id="sample-warning"' not in text  # the same instances
    assert 'data-task="Form task"' in text
    ceilings = oracle.results["ceiling"]["overall"], nothing.results["ceiling"]["overall"]
    assert (
        'id="compare-overall"><th>overall</th><td class="ceiling">{:.4f}</td><td class="ceiling">{:.4f}</td>'.format(
            *ceilings
        )
        in text
    )
    listing = client.get("/agents/runs/").content.decode()
    assert f'<td class="ceiling">{ceilings[0]:.4f}</td>' in listing
    assert f'data-run="{oracle.pk}"' in listing
    assert f'data-run="{nothing.pk}"' in listing


def test_only_researchers_and_admins_of_the_project_see_runs(client, alpha, beta, runs):
    run = runs["oracle"][0]
    row = run.instances.first()
    urls = (
        f"/agents/runs/{run.pk}/",
        f"/agents/runs/{run.pk}/instances/{row.pk}/",
        f"/agents/runs/{run.pk}/instances/{row.pk}/screenshot.png",
        f"/agents/compare/?a={run.pk}&b={runs['do-nothing'][0].pk}",
    )
    for username, project, role, status in [
        ("stranger", beta, Role.RESEARCHER, 404),
        ("annotator", alpha, Role.ANNOTATOR, 403),  # another role of the run's project
        ("reviewer2", alpha, Role.REVIEWER, 403),
    ]:
        client.force_login(make_user(username, project, role))
        for url in urls:
            assert client.get(url).status_code == status, (username, url)
        assert f'data-run="{run.pk}"' not in client.get("/agents/runs/").content.decode()
    client.force_login(make_user("admin2", alpha, Role.ADMIN))
    assert all(client.get(url).status_code == 200 for url in urls)
    client.logout()
    assert client.get(f"/agents/runs/{run.pk}/").status_code == 302  # to sign in


def test_compare_warns_when_the_runs_scored_different_instances_naming_what_differs(client, researcher, runs):
    oracle = runs["oracle"][0]
    other = AgentRun.objects.get(pk=runs["do-nothing"][0].pk)
    other.pk, other.seed, other.instances_per_task, other.sampled = None, 7, 1, {"Form task": [1]}
    other.save()
    client.force_login(researcher)
    text = client.get("/agents/compare/", {"a": oracle.pk, "b": other.pk}).content.decode()
    warning = text.split('id="sample-warning">', 1)[1].split("</p>", 1)[0]
    assert warning.startswith("The runs scored different instances (seed (1, 7); instances per task (all, 1)):")
    assert "in the tasks marked ≠" in warning
    assert 'data-task="Form task"><th>Form task <span class="other-instances"' in text
    # Another seed drawing the same instances (here: all of them) is no difference.
    other.sampled = oracle.sampled
    other.instances_per_task = None
    other.save()
    same = client.get("/agents/compare/", {"a": oracle.pk, "b": other.pk}).content.decode()
    assert 'id="sample-warning"' not in same
    assert 'class="other-instances"' not in same


def test_compare_without_two_runs_is_a_400_naming_what_to_choose(client, researcher):
    """The runs page's compare form needs both radios (``required``); asked without them, the page says which."""
    client.force_login(researcher)
    for query, missing in (("", "run a and b"), ("?a=1", "run b"), ("?a=1&b=x", "run b")):
        response = client.get(f"/agents/compare/{query}")
        assert response.status_code == 400, query
        assert missing in response.content.decode()


def test_a_task_with_nothing_scorable_is_counted_and_named_on_the_run_and_compare_pages(
    client, alpha, researcher, tmp_path
):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    hidden = '<p>${text}</p><input type="hidden" name="label" value="">'
    make_batch(
        alpha, template=hidden, csv_text=csv_text(["text", "Answer.label"], [["a", "x"], ["b", "y"]]), name="Hidden"
    )
    for solver in ("oracle", "do-nothing"):
        call_command(
            "run_agent",
            project="alpha",
            split="all",
            solver=solver,
            seed=1,
            out=tmp_path / solver,
            user="researcher",
            stdout=None,
        )
    oracle, nothing = AgentRun.objects.get(solver="oracle"), AgentRun.objects.get(solver="do-nothing")
    summary = oracle.results["summary"]
    assert summary["tasks"] == 2
    assert summary["tasks_scored"] == 1
    assert [row["task"] for row in summary["tasks_unscorable"]] == ["Hidden"]
    assert oracle.results["overall"] == oracle.results["tasks"]["Form task"]["all"]  # the only task with a score
    form = [i["score"] for i in oracle.results["instances"] if i["task"] == "Form task"]
    hidden_scores = [i["score"] for i in oracle.results["instances"] if i["task"] == "Hidden"]
    assert form == [1.0, 1.0]  # the oracle passes (a range field adds 1.0 to the instance score)
    assert hidden_scores == [0.0, 0.0]  # nothing counted: 0.0, as the official score_outputs
    assert summary["instance_mean"] == 0.5
    assert oracle.results["tasks"]["Hidden"] == {"all": None}

    client.force_login(researcher)
    text = client.get(f"/agents/runs/{oracle.pk}/").content.decode()
    assert f'<td id="overall">{oracle.results["overall"]:.4f}</td>' in text
    assert '<td id="instance-mean">0.5000</td>' in text
    assert "1 of 2 tasks left out of the task mean" in text
    assert '<li data-task="Hidden"><strong>Hidden</strong>: no field was scored' in text
    assert '<tr data-task="Hidden"><th>Hidden</th>' in text  # every task has its row
    compare = client.get("/agents/compare/", {"a": oracle.pk, "b": nothing.pk}).content.decode()
    ceilings = [run.results["ceiling"]["overall_instances"] for run in (oracle, nothing)]
    assert ceilings == [0.5, 0.5]  # the form's instances 1.0 each; "Hidden" counts nothing, so 0.0, as its score
    means = '<th>mean over instances</th><td class="ceiling">0.5000</td><td class="ceiling">0.5000</td><td>0.5000</td>'
    assert means in compare
    assert "Left out of the task means (nothing scorable): A Hidden · B Hidden" in compare
