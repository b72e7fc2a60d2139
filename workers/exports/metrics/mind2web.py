"""Mind2Web scores: element accuracy, operation F1, step success and task success, macro-averaged per task.

Definitions (Mind2Web paper, Table 2; ``src/action_prediction/metric.py`` of OSU-NLP-Group/Mind2Web):

- element accuracy of a step: 1 if the predicted ``backend_node_id`` is one of the step's ``pos_candidates``;
- operation F1 of a step: token-set F1 between ``"<OP> <value>"`` of the prediction and of the reference,
  tokens split on whitespace, case-sensitive; 1 when both are empty, 0 when only one is;
- step success: element correct AND operation F1 == 1;
- task success: every step of the task succeeded.

A step without a prediction scores 0 on all three. Aggregates are macro averages, as the paper reports: each
step metric is averaged within its task, then those task means are averaged over tasks (so a 2-step task weighs
as much as a 20-step one); ``task_success_rate`` is the share of tasks whose steps all succeeded. ``micro``
holds the step-level means over all steps (the original code's ``element_acc``/``action_f1``/``step_acc``).
Tasks without steps are listed in ``per_task`` but left out of every average. An empty average is None.
"""

from collections.abc import Sequence

from . import DatasetError, PredictionError, describe_prediction, mean, require_field

STEP_METRICS = ("element_accuracy", "operation_f1", "step_success")


def operation_string(op: str, value: str) -> str:
    return f"{op} {value}"


def operation_f1(predicted: str, reference: str) -> float:
    """Token-set F1 of two whitespace-tokenised strings; 1.0 when both have no tokens."""
    pred, ref = set(predicted.split()), set(reference.split())
    if not pred and not ref:
        return 1.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_step(action: dict, prediction: dict | None) -> dict:
    """The three step metrics of one reference action (Mind2Web ``actions[i]``) and its prediction, if any."""
    if prediction is None:
        return {"predicted": False, "element_accuracy": 0, "operation_f1": 0.0, "step_success": 0}
    positives = {str(candidate.get("backend_node_id")) for candidate in action.get("pos_candidates") or ()}
    element = int(prediction["backend_node_id"] is not None and prediction["backend_node_id"] in positives)
    reference = action.get("operation") or {}
    f1 = operation_f1(
        operation_string(prediction["op"], prediction["value"]),
        operation_string(reference.get("op", ""), reference.get("value") or ""),
    )
    return {
        "predicted": True,
        "element_accuracy": element,
        "operation_f1": f1,
        "step_success": int(element and f1 == 1),
    }


def check_records(records) -> dict[str, list]:
    """``{annotation_id: actions}`` of Mind2Web task records; DatasetError when malformed or repeated."""
    if not isinstance(records, list):
        raise DatasetError(f"records must be a list, got {type(records).__name__}")
    tasks: dict[str, list] = {}
    for index, record in enumerate(records):
        annotation_id = record.get("annotation_id") if isinstance(record, dict) else None
        actions = record.get("actions") if isinstance(record, dict) else None
        if not isinstance(annotation_id, str) or not isinstance(actions, list):
            raise DatasetError(f"record {index}: needs a string 'annotation_id' and a list 'actions'")
        if annotation_id in tasks:
            raise DatasetError(f"record {index}: annotation_id {annotation_id!r} repeats an earlier record")
        tasks[annotation_id] = actions
    return tasks


def check_prediction(prediction, index: int, tasks: dict[str, list]) -> dict:
    """A normalised prediction ``{annotation_id, action_index, backend_node_id, op, value}``.

    ``backend_node_id`` may be a string, an integer (compared as its decimal string) or null (no element);
    ``operation.value`` may be missing or null for a CLICK (read as "").
    """
    annotation_id = require_field(prediction, index, "annotation_id", (str,), "a string")
    action_index = require_field(prediction, index, "action_index", (int,), "an integer")
    if annotation_id not in tasks:
        raise PredictionError(f"prediction {index}: field 'annotation_id' {annotation_id!r} is not a task of the split")
    if not 0 <= action_index < len(tasks[annotation_id]):
        raise PredictionError(
            f"prediction {index}: field 'action_index' {action_index} is out of range for {annotation_id!r} "
            f"({len(tasks[annotation_id])} actions)"
        )
    if "backend_node_id" not in prediction:
        raise describe_prediction(index, "backend_node_id", "is missing")
    node = prediction["backend_node_id"]
    if node is not None and (isinstance(node, bool) or not isinstance(node, str | int)):
        raise describe_prediction(index, "backend_node_id", f"must be a string or null, got {type(node).__name__}")
    operation = require_field(prediction, index, "operation", (dict,), "an object")
    op = require_field(operation, index, "op", (str,), "a string", label="operation.op")
    value = operation.get("value")
    if value is not None and not isinstance(value, str):
        raise describe_prediction(index, "operation.value", f"must be a string, got {type(value).__name__}")
    return {
        "annotation_id": annotation_id,
        "action_index": action_index,
        "backend_node_id": None if node is None else str(node),
        "op": op,
        "value": value or "",
    }


def index_predictions(tasks: dict[str, list], predictions) -> dict[tuple, dict]:
    if not isinstance(predictions, list):
        raise PredictionError(f"predictions must be a list, got {type(predictions).__name__}")
    indexed: dict[tuple, dict] = {}
    where: dict[tuple, int] = {}
    for index, prediction in enumerate(predictions):
        checked = check_prediction(prediction, index, tasks)
        key = (checked["annotation_id"], checked["action_index"])
        if key in indexed:
            raise PredictionError(
                f"prediction {index}: fields 'annotation_id', 'action_index' repeat prediction {where[key]}"
            )
        indexed[key], where[key] = checked, index
    return indexed


def task_summary(annotation_id: str, steps: Sequence[dict]) -> dict:
    summary = {"annotation_id": annotation_id, "steps": len(steps)}
    for name in STEP_METRICS:
        summary[name] = mean(step[name] for step in steps)
    summary["task_success"] = int(bool(steps) and all(step["step_success"] for step in steps))
    return summary


def aggregate(per_task: Sequence[dict], per_step: Sequence[dict]) -> dict:
    """Macro averages over tasks that have steps (see the module docstring)."""
    scored = [task for task in per_task if task["steps"]]
    return {
        "element_accuracy": mean(task["element_accuracy"] for task in scored),
        "operation_f1": mean(task["operation_f1"] for task in scored),
        "step_success_rate": mean(task["step_success"] for task in scored),
        "task_success_rate": mean(task["task_success"] for task in scored),
        "tasks": len(scored),
        "steps": len(per_step),
    }


def evaluate(records: list[dict], predictions: list[dict]) -> dict:
    """Score predictions ``{annotation_id, action_index, backend_node_id, operation: {op, value}}`` on records.

    Returns ``{"per_step", "per_task", "aggregate", "micro", "predictions"}``.
    """
    tasks = check_records(records)
    indexed = index_predictions(tasks, predictions)
    per_step, per_task = [], []
    for annotation_id, actions in tasks.items():
        steps = []
        for action_index, action in enumerate(actions):
            step = score_step(action if isinstance(action, dict) else {}, indexed.get((annotation_id, action_index)))
            steps.append({"annotation_id": annotation_id, "action_index": action_index, **step})
        per_step += steps
        per_task.append(task_summary(annotation_id, steps))
    micro = {
        "element_accuracy": mean(step["element_accuracy"] for step in per_step),
        "operation_f1": mean(step["operation_f1"] for step in per_step),
        "step_success_rate": mean(step["step_success"] for step in per_step),
    }
    return {
        "per_step": per_step,
        "per_task": per_task,
        "aggregate": aggregate(per_task, per_step),
        "micro": micro,
        "predictions": len(predictions),
    }
