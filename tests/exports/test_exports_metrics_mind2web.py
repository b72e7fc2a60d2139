"""Mind2Web metrics: element accuracy, operation F1, step and task success, macro-averaged per task."""

import pytest

from tests.support.metrics_data import PREDICTIONS, RECORDS, action, pred, record
from workers.exports.metrics import DatasetError, PredictionError
from workers.exports.metrics.mind2web import evaluate, operation_f1


def test_step_metrics():
    steps = {(s["annotation_id"], s["action_index"]): s for s in evaluate(RECORDS, PREDICTIONS)["per_step"]}
    assert [steps["task-a", 0][k] for k in ("element_accuracy", "operation_f1", "step_success")] == [1, 1, 1]
    assert [steps["task-a", 1][k] for k in ("element_accuracy", "step_success")] == [1, 0]
    assert steps["task-a", 1]["operation_f1"] == pytest.approx(1 / 3)
    assert [steps["task-a", 2][k] for k in ("element_accuracy", "operation_f1", "step_success")] == [0, 1, 0]
    assert steps["task-b", 0]["step_success"] == 1


def test_a_step_without_prediction_scores_zero():
    steps = [s for s in evaluate(RECORDS, PREDICTIONS)["per_step"] if s["annotation_id"] == "task-c"]
    assert [(s["predicted"], s["element_accuracy"], s["operation_f1"], s["step_success"]) for s in steps] == [
        (False, 0, 0, 0),
        (False, 0, 0, 0),
    ]


def test_task_success_needs_every_step():
    tasks = {t["annotation_id"]: t for t in evaluate(RECORDS, PREDICTIONS)["per_task"]}
    assert {name: task["task_success"] for name, task in tasks.items()} == {"task-a": 0, "task-b": 1, "task-c": 0}
    assert tasks["task-a"]["element_accuracy"] == pytest.approx(2 / 3)
    assert tasks["task-a"]["operation_f1"] == pytest.approx(7 / 9)
    assert tasks["task-a"]["step_success"] == pytest.approx(1 / 3)
    assert tasks["task-a"]["steps"] == 3


def test_aggregates_are_macro_averages_over_tasks_of_different_lengths():
    result = evaluate(RECORDS, PREDICTIONS)
    assert result["aggregate"] == pytest.approx(
        {
            "element_accuracy": (2 / 3 + 1 + 0) / 3,
            "operation_f1": (7 / 9 + 1 + 0) / 3,
            "step_success_rate": (1 / 3 + 1 + 0) / 3,
            "task_success_rate": 1 / 3,
            "tasks": 3,
            "steps": 6,
        }
    )
    # micro (over steps) differs: the 3-step task weighs 3 times more
    assert result["micro"] == pytest.approx(
        {"element_accuracy": 3 / 6, "operation_f1": (1 + 1 / 3 + 1 + 1) / 6, "step_success_rate": 2 / 6}
    )


@pytest.mark.parametrize(
    ("predicted", "reference", "f1"),
    [
        ("", "", 1),
        ("   ", "\t", 1),
        ("CLICK", "", 0),
        ("CLICK ", "CLICK", 1),
        ("click", "CLICK", 0),
        ("TYPE New York City", "TYPE New York", 6 / 7),
        ("TYPE a a", "TYPE a", 1),
        ("TYPE  New\tYork", "TYPE New York", 1),
        ("SELECT Pickup", "TYPE Delivery", 0),
        ("TYPE Boston,", "TYPE Boston", 0.5),
    ],
)
def test_operation_f1(predicted, reference, f1):
    assert operation_f1(predicted, reference) == pytest.approx(f1)


def test_operation_is_case_sensitive_and_value_optional_for_click():
    records = [record("t", action("CLICK", "", "1"), action("TYPE", "Boston", "2"))]
    result = evaluate(records, [pred("t", 0, "1", "CLICK", None), pred("t", 1, "2", "TYPE", "boston")])
    assert [s["operation_f1"] for s in result["per_step"]] == [1, 0.5]


def test_null_element_is_wrong():
    result = evaluate([record("t", action("CLICK", "", "1"))], [pred("t", 0, None, "CLICK")])
    assert result["per_step"][0]["element_accuracy"] == 0


def test_tasks_without_steps_are_left_out_of_averages():
    result = evaluate([*RECORDS, record("empty")], PREDICTIONS)
    assert result["aggregate"]["tasks"] == 3
    assert result["aggregate"]["task_success_rate"] == pytest.approx(1 / 3)
    assert result["per_task"][-1] == {
        "annotation_id": "empty",
        "steps": 0,
        "element_accuracy": None,
        "operation_f1": None,
        "step_success": None,
        "task_success": 0,
    }


def test_no_records_give_empty_scores():
    assert evaluate([], [])["aggregate"] == {
        "element_accuracy": None,
        "operation_f1": None,
        "step_success_rate": None,
        "task_success_rate": None,
        "tasks": 0,
        "steps": 0,
    }


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        (pred("task-z", 0, "1", "CLICK"), "prediction 1: field 'annotation_id' 'task-z' is not a task of the split"),
        (pred("task-b", 1, "1", "CLICK"), r"prediction 1: field 'action_index' 1 is out of range for 'task-b' \(1"),
        (pred("task-b", -1, "1", "CLICK"), "prediction 1: field 'action_index' -1 is out of range"),
        (pred("task-b", "0", "1", "CLICK"), "prediction 1: field 'action_index' must be an integer, got str"),
        (pred("task-b", 0, ["1"], "CLICK"), "prediction 1: field 'backend_node_id' must be a string or null, got list"),
        (pred("task-b", 0, True, "CLICK"), "prediction 1: field 'backend_node_id' must be a string or null, got bool"),
        (pred("task-b", 0, "1", 3), "prediction 1: field 'operation.op' must be a string, got int"),
        (pred("task-b", 0, "1", "TYPE", 3), "prediction 1: field 'operation.value' must be a string, got int"),
        ({"annotation_id": "task-b", "action_index": 0, "operation": {}}, "field 'backend_node_id' is missing"),
        ({"annotation_id": "task-b", "action_index": 0, "backend_node_id": "1"}, "field 'operation' is missing"),
        (pred("task-b", 0, "1", "CLICK") | {"operation": {"value": ""}}, "field 'operation.op' is missing"),
        (pred("task-b", 0, "1", "CLICK") | {"operation": "CLICK"}, "field 'operation' must be an object, got str"),
        ({"action_index": 0}, "prediction 1: field 'annotation_id' is missing"),
        ("CLICK", "prediction 1: expected an object, got str"),
        (pred("task-a", 0, "1", "CLICK"), "prediction 1: fields 'annotation_id', 'action_index' repeat prediction 0"),
    ],
)
def test_bad_predictions_name_their_index_and_field(prediction, message):
    with pytest.raises(PredictionError, match=message):
        evaluate(RECORDS, [pred("task-a", 0, "11", "CLICK"), prediction])


def test_predictions_must_be_a_list():
    with pytest.raises(ValueError, match="predictions must be a list"):
        evaluate(RECORDS, {"annotation_id": "task-a"})


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"annotation_id": "a"}, "records must be a list"),
        ([{"annotation_id": "a"}], "record 0: needs a string 'annotation_id' and a list 'actions'"),
        ([record("a"), record("a")], "record 1: annotation_id 'a' repeats an earlier record"),
    ],
)
def test_bad_records_are_dataset_errors(records, message):
    with pytest.raises(DatasetError, match=message):
        evaluate(records, [])
