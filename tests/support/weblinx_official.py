"""The official ``weblinx`` package (0.3.2) as the reference client: the turns its modelling code predicts, and its
evaluation pipeline (``auto_eval_and_save`` then ``compute_aggregated_scores``) on a predictions file.

Both write caches under the working directory: call them from a test that ``chdir``s into its ``tmp_path``."""

import json
from pathlib import Path

import pandas as pd

AGGREGATE_NAMES = {
    ("overall", "intent-match"): "intent_match",
    ("element-group", "iou"): "element_group",
    ("text-group", "chrf-urlf"): "text_group",
    ("overall", "overall"): "overall",
}


def official_turns(data: Path, split: str) -> list[tuple[str, int]]:
    """``(demo_name, turn_index)`` of the turns ``select_turns_and_candidates_for_prompts`` builds prompts for."""
    from weblinx import Demonstration
    from weblinx.processing.prompt import select_turns_and_candidates_for_prompts

    names = json.loads((data / "splits.json").read_text())[split]
    demos = [Demonstration(name, base_dir=str(data / "demonstrations")) for name in names]
    records = select_turns_and_candidates_for_prompts(demos, candidates=None)
    return [(record["turn"].demo_name, record["turn"].index) for record in records]


def official_evaluation(data: Path, split: str, predictions: list[dict], results: Path) -> dict:
    """The official pipeline on ``predictions``: ``{"aggregate", "conditional"}`` (the unconditional and the
    conditional figures, named as ours) and ``turns``, the ``(demo_name, turn_index)`` rows it scored."""
    from weblinx.eval import auto_eval_and_save, compute_aggregated_scores

    model_dir = results / "project" / split / "model"
    model_dir.mkdir(parents=True)
    (model_dir / "results.json").write_text(json.dumps(predictions))
    auto_eval_and_save(
        results,
        base_dir=str(data / "demonstrations"),
        project_names=["project"],
        splits=[split],
        split_file=str(data / "splits.json"),
        check_hashes=False,
        backward_compatible=False,  # else a demo name with "_" loses its prefix
    )
    records = compute_aggregated_scores(results, splits=[split], project_names=["project"], verbose=False)
    figures = {"aggregate": {}, "conditional": {}}
    for record in records:
        name = AGGREGATE_NAMES.get((record["intent"], record["metric"]))
        if name:
            figures["aggregate"][name] = none_if_nan(record["unconditional_score"])
            figures["conditional"][name] = none_if_nan(record["score"])
    rows = pd.read_csv(model_dir / "eval_scores.csv").to_dict("records")
    return {**figures, "turns": [(row["demo_name"], row["turn_index"]) for row in rows]}


def none_if_nan(value):
    return None if value is None or value != value else float(value)
