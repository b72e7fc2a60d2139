"""Offline TurkingBench predictions: bad entries are refused up front, naming the entry; good ones are scored on
the real page (`manage.py evaluate --format turkingbench`)."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents import scoring
from agents.offline import PredictionError, check_predictions, evaluate
from tests.support.agents_data import form_dataset, write_task

TASK = "Form task"
HIDDEN_ONLY = '<p>${text}</p><input type="hidden" name="label" value="">'


@pytest.fixture
def dataset(tmp_path):
    return form_dataset(tmp_path / "data")


def entry(fields, task=TASK, instance=0):
    return {"task": task, "instance": instance, "fields": fields}


def errors_of(predictions, dataset, split=None) -> list[dict]:
    with pytest.raises(PredictionError) as raised:
        check_predictions(predictions, dataset, split)
    return raised.value.errors


@pytest.mark.parametrize(
    ("predictions", "field", "message"),
    [
        ({"task": TASK}, "predictions", "non-empty list"),
        ([], "predictions", "non-empty list"),
        (["x"], "predictions[0]", "expected an object"),
        ([entry({}, task="Nope")], "predictions[0].task", "unknown task 'Nope'"),
        ([entry({}, instance=2)], "predictions[0].instance", "instance out of range: 'Form task' has instances 0 to 1"),
        ([entry({}, instance=True)], "predictions[0].instance", "instance out of range"),
        ([entry({"q1": "x"})], "predictions[0].fields.q1", "unknown field"),
        ([entry({"name": {"v": 1}})], "predictions[0].fields.name", "wrong value type"),
        ([entry({"name": ["a"]})], "predictions[0].fields.name", "a list is only for a checkbox group"),
        ([entry({"tags": ["a", None]})], "predictions[0].fields.tags", "wrong value type"),
        ([entry({"level": "high"})], "predictions[0].fields.level", "a range takes a number"),
        ([entry({"name": float("nan")})], "predictions[0].fields.name", "wrong value type"),
        ([{**entry({}), "extra": 1}], "predictions[0].extra", "unknown key"),
        ([{"task": TASK, "fields": {}}], "predictions[0].instance", "required"),
        ([entry({}), entry({"name": "x"})], "predictions[1]", "duplicate of predictions[0]"),
    ],
)
def test_a_bad_prediction_is_refused_naming_the_entry(dataset, predictions, field, message):
    errors = errors_of(predictions, dataset)
    assert errors[0]["field"] == field
    assert message in errors[0]["message"]


def test_every_bad_entry_is_listed_not_only_the_first(dataset):
    errors = errors_of(
        [entry({"q1": 1}), entry({"name": "ok"}, instance=1), entry({"q2": 1, "q3": 2}, instance=9)], dataset
    )
    assert [error["field"] for error in errors] == ["predictions[0].fields.q1", "predictions[2].instance"]


def test_a_split_restricts_the_tasks(dataset):
    (dataset.root / "splits").mkdir()
    (dataset.root / "splits" / "evaluation_tasks_easy.txt").write_text("Other\n")
    assert (
        errors_of([entry({})], dataset, "test_easy")[0]["message"]
        == "unknown task 'Form task' (not in split 'test_easy')"
    )
    assert errors_of([entry({})], dataset, "test_hard")[0]["field"] == "split"
    assert check_predictions([entry({"tags": ["a"], "name": 3})], dataset) == {(TASK, 0): {"tags": ["a"], "name": 3}}


@pytest.mark.browser
def test_predictions_are_applied_on_the_page_and_left_out_fields_score_their_default(dataset):
    predictions = [
        entry(
            {
                "name": "Ann",
                "story": "A story & more",
                "grade": "-1",
                "tags": ["b", "a"],
                "agree": "on",
                "colour": "red",
                "level": 5,
                "scripted": "yes",
            }
        ),
        entry({"colour": "purple"}, instance=1),  # not an option: the field stays as it was, and the error is listed
    ]
    result = evaluate(dataset, predictions)
    scores = {(row["instance"], row["field"]): row["score"] for row in result["fields"]}
    assert scores[(0, "name")] == 1.0
    assert scores[(0, "story")] == 1.0  # innerHTML gives "&amp;", which the scorer turns back into "&"
    assert scores[(0, "grade")] == scores[(0, "tags")] == scores[(0, "agree")] == scores[(0, "colour")] == 1.0
    assert scores[(0, "scripted")] == 1.0  # a field made by the page's script is found and filled
    assert scores[(0, "level")] == pytest.approx(1 - 1 / 6)  # mean distance 1 to [4, 6], scale 6
    assert (0, "secret") not in scores
    assert (0, "hidden_text") not in scores
    assert (1, "name") not in scores  # blank text gold: not counted
    assert scores[(1, "grade")] == 1.0  # blank radio gold and nothing chosen
    assert scores[(1, "colour")] == 0.0  # left at its first option "NA", gold "2"
    assert result["errors"] == [
        {
            "task": TASK,
            "instance": 1,
            "field": "colour",
            "error": "ActionError: 'purple' is not among the option values ['NA', 'red', '2'] of 'colour'",
        }
    ]
    assert result["instances"] == [
        {"task": TASK, "instance": 0, "score": 1.0, "ceiling": 1.0},
        {"task": TASK, "instance": 1, "score": pytest.approx(5 / 6), "ceiling": 1.0},
    ]
    below = {(row["instance"], row["field"]): row["reason"] for row in result["shortfalls"]}
    assert below[(1, "colour")] == "action failed: " + result["errors"][0]["error"]
    assert len(result["fields"]) == 8 + 6
    assert result["tasks"][TASK]["all"] == pytest.approx((7 + 5 / 6 + 4) / 14)  # real range scores: 5/6 and 0
    assert result["overall"] == result["tasks"][TASK]["all"]
    assert result["metric"] == "official"
    reasons = {(row["instance"], row["field"]): row["reason"] for row in result["skipped"]}
    assert reasons[(0, "not_in_page")] == "not on the page"
    assert reasons[(0, "secret")] == "not displayed"


@pytest.mark.browser
def test_the_evaluate_command_scores_turkingbench_predictions(dataset, tmp_path):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps([entry({"grade": 1, "tags": "a|b|c"})]))
    out, printed = tmp_path / "s.json", StringIO()
    call_command(
        "evaluate",
        format="turkingbench",
        data=dataset.root,
        predictions=predictions,
        out=out,
        metric="paper",
        stdout=printed,
        stderr=StringIO(),
    )
    scores = json.loads(out.read_text())
    by_field = {row["field"]: row["score"] for row in scores["fields"]}
    assert scores["metric"] == "paper"
    assert scores["format"] == "turkingbench"
    assert by_field["grade"] == 0.0  # "1" is not "-1" once punctuation counts
    assert by_field["tags"] == pytest.approx(2 / 3)  # IoU with {a, b}
    assert "overall (mean over 1 of 1 tasks)" in printed.getvalue()
    assert "mean over 1 instances" in printed.getvalue()


@pytest.mark.browser
def test_evaluate_with_string_paths_reports_every_task_the_unscorable_ones_named(dataset, tmp_path):
    """``call_command`` with plain strings (no argparse ``type=Path``), and a task with nothing scorable (its only
    answer field is a hidden input): counted, named with the reason, its instance 0.0 in the instance mean."""
    write_task(dataset.root, "Hidden only", HIDDEN_ONLY, ["text", "Answer.label"], [["hello", "x"], ["bye", "y"]])
    predictions = tmp_path / "p.json"
    predictions.write_text(
        json.dumps([entry({"grade": -1}), entry({}, task="Hidden only"), entry({}, task="Hidden only", instance=1)])
    )
    out, printed = tmp_path / "out" / "s.json", StringIO()
    call_command(
        "evaluate",
        format="turkingbench",
        data=str(dataset.root),
        predictions=str(predictions),
        out=str(out),
        stdout=printed,
        stderr=StringIO(),
    )
    scores = json.loads(out.read_text())
    form_score = scores["instances"][0]["score"]
    assert scores["tasks"]["Hidden only"] == {"all": None}
    assert scores["overall"] == scores["tasks"][TASK]["all"]  # the task mean leaves it out, as the official CSV
    assert scores["summary"] == {
        "tasks": 2,
        "tasks_scored": 1,
        "tasks_unscorable": [{"task": "Hidden only", "reason": scoring.NOTHING_SCORABLE}],
        "task_mean": scores["overall"],
        "instances": 3,
        "instance_mean": pytest.approx(form_score / 3),
    }
    assert scores["overall_instances"] == pytest.approx(form_score / 3)
    text = printed.getvalue()
    assert "overall (mean over 1 of 2 tasks)" in text
    assert "mean over 3 instances" in text
    assert f"left out: Hidden only: {scoring.NOTHING_SCORABLE}" in text


def test_the_evaluate_command_refuses_bad_predictions_before_any_browser(dataset, tmp_path):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps([entry({"q1": "x"})]))
    with pytest.raises(CommandError, match=r"predictions\[0\]\.fields\.q1: unknown field"):
        call_command(
            "evaluate", format="turkingbench", data=dataset.root, predictions=predictions, out=tmp_path / "s.json"
        )
    with pytest.raises(CommandError, match="--split is required for weblinx"):
        call_command("evaluate", format="weblinx", data=dataset.root, predictions=predictions, out=tmp_path / "s.json")
