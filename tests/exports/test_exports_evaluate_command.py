"""`manage.py evaluate`: scores a WebLINX or Mind2Web export split from files, with clear errors for bad input."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.support.metrics_data import PREDICTIONS as M2W_PREDICTIONS
from tests.support.metrics_data import PREDICTIONS_MAIN, SPLIT, build_export
from tests.support.metrics_data import RECORDS as M2W_RECORDS
from workers.exports.metrics import mind2web, weblinx


@pytest.fixture
def weblinx_export(tmp_path):
    return build_export(tmp_path / "wl")


@pytest.fixture
def mind2web_export(tmp_path):
    data = tmp_path / "m2w"
    data.mkdir()
    (data / "test_task.json").write_text(json.dumps(M2W_RECORDS))
    (data / "train.json").write_text("[]")
    return data


def write_json(path, value):
    path.write_text(json.dumps(value))
    return path


def run(**options) -> str:
    out = StringIO()
    call_command("evaluate", stdout=out, **options)
    return out.getvalue()


def printed_table(printed: str) -> dict:
    """``{metric: shown value}`` from the indented ``  name  value`` lines."""
    return dict(line.split() for line in printed.splitlines() if line.startswith("  "))


def test_scores_a_weblinx_split_and_prints_the_aggregate(weblinx_export, tmp_path):
    predictions = write_json(tmp_path / "results.json", PREDICTIONS_MAIN)
    out = tmp_path / "scores" / "valid.json"
    printed = run(format="weblinx", data=weblinx_export, split=SPLIT, predictions=predictions, out=out)
    scores = json.loads(out.read_text())
    expected = weblinx.evaluate(weblinx_export, SPLIT, PREDICTIONS_MAIN)
    assert scores == {"format": "weblinx", "split": SPLIT, **json.loads(json.dumps(expected))}
    assert (scores["turns"], scores["rounding"]) == ("official", "official")
    assert out.read_text().startswith('{\n  "format": "weblinx",')
    dropped, outside = len(expected["dropped"]), len(expected["outside"])
    assert outside > 0  # hover, copy, paste, tab and instructor turns: the official code never predicts them
    title = f"WebLINX valid (official turns, official rounding): {expected['aggregate']['turns']} turns scored, "
    assert title + f"{dropped} predictions dropped, {outside} outside the turns" in printed
    table = printed_table(printed)
    assert table == {key: f"{expected['aggregate'][key]:.4f}" for key in weblinx.AGGREGATE_KEYS}


def test_every_turn_and_exact_scores_are_options(weblinx_export, tmp_path):
    predictions = write_json(tmp_path / "results.json", PREDICTIONS_MAIN)
    out = tmp_path / "scores.json"
    printed = run(
        format="weblinx",
        data=weblinx_export,
        split=SPLIT,
        predictions=predictions,
        out=out,
        turns="all",
        rounding="exact",
    )
    expected = weblinx.evaluate(weblinx_export, SPLIT, PREDICTIONS_MAIN, turns="all", rounding="exact")
    assert json.loads(out.read_text())["aggregate"] == pytest.approx(expected["aggregate"])
    assert "WebLINX valid (all turns, exact rounding): 20 turns scored, 8 predictions dropped, 0 outside" in printed
    official = weblinx.evaluate(weblinx_export, SPLIT, PREDICTIONS_MAIN)
    assert official["aggregate"]["turns"] < expected["aggregate"]["turns"]
    with pytest.raises(CommandError, match="turns: expected one of official, all, got 'some'"):
        run(format="weblinx", data=weblinx_export, split=SPLIT, predictions=predictions, out=out, turns="some")


def test_scores_a_mind2web_split_and_prints_the_aggregate(mind2web_export, tmp_path):
    predictions = write_json(tmp_path / "preds.json", M2W_PREDICTIONS)
    out = tmp_path / "scores.json"
    printed = run(format="mind2web", data=mind2web_export, split="test_task", predictions=predictions, out=out)
    scores = json.loads(out.read_text())
    assert scores["aggregate"] == mind2web.evaluate(M2W_RECORDS, M2W_PREDICTIONS)["aggregate"]
    assert scores["format"] == "mind2web"
    assert "Mind2Web test_task: 3 tasks, 6 steps (macro averages)" in printed
    assert printed_table(printed)["task_success_rate"] == "0.3333"


def test_empty_means_print_as_not_available(mind2web_export, tmp_path):
    predictions = write_json(tmp_path / "preds.json", [])
    printed = run(format="mind2web", data=mind2web_export, split="train", predictions=predictions, out=tmp_path / "s")
    assert printed_table(printed)["element_accuracy"] == "n/a"


@pytest.mark.parametrize(
    ("fmt", "split", "message"),
    [
        ("weblinx", "test_geo", "unknown split 'test_geo'; .*splits.json has: test_iid, train, valid"),
        ("mind2web", "test_website", "unknown split 'test_website'; .* has: test_task, train"),
    ],
)
def test_unknown_split(weblinx_export, mind2web_export, tmp_path, fmt, split, message):
    data = weblinx_export if fmt == "weblinx" else mind2web_export
    predictions = write_json(tmp_path / "p.json", [])
    with pytest.raises(CommandError, match=message):
        run(format=fmt, data=data, split=split, predictions=predictions, out=tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_bad_predictions_name_the_prediction(weblinx_export, mind2web_export, tmp_path):
    bad = write_json(tmp_path / "p.json", [PREDICTIONS_MAIN[0], {"demo_name": "alphaaa", "turn_index": 99}])
    with pytest.raises(CommandError, match="prediction 1: field 'output_predicted' is missing"):
        run(format="weblinx", data=weblinx_export, split=SPLIT, predictions=bad, out=tmp_path / "s.json")
    bad = write_json(tmp_path / "p.json", [{"annotation_id": "task-a", "action_index": 7}])
    with pytest.raises(CommandError, match="prediction 0: field 'action_index' 7 is out of range"):
        run(format="mind2web", data=mind2web_export, split="test_task", predictions=bad, out=tmp_path / "s.json")


def test_missing_and_unreadable_files(weblinx_export, tmp_path):
    options = {"format": "weblinx", "split": SPLIT, "out": tmp_path / "s.json"}
    with pytest.raises(CommandError, match="predictions file .*nope.json does not exist"):
        run(data=weblinx_export, predictions=tmp_path / "nope.json", **options)
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(CommandError, match="predictions file .*broken.json is not readable JSON"):
        run(data=weblinx_export, predictions=tmp_path / "broken.json", **options)
    with pytest.raises(CommandError, match="data directory .*missing does not exist"):
        run(data=tmp_path / "missing", predictions=tmp_path / "broken.json", **options)
    (weblinx_export / "splits.json").unlink()
    with pytest.raises(CommandError, match="splits.json does not exist"):
        run(data=weblinx_export, predictions=write_json(tmp_path / "p.json", []), **options)


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'webarena'"):
        run(format="webarena", data=tmp_path, split=SPLIT, predictions=tmp_path / "p.json", out=tmp_path / "s.json")


@pytest.mark.django_db
def test_gold_predictions_score_one_on_a_platform_mind2web_export(tmp_path):
    from tests.support.corpus import ingest_corpus
    from workers.exports.dataset import export_demos, storage_blobs
    from workers.exports.exporters import get_exporter

    demos = ingest_corpus(demos=3, turns=24, elements=30, seed=4)
    data = tmp_path / "m2w"
    get_exporter("mind2web").export(export_demos(demos[0].project, "mind2web"), data, storage_blobs())
    split = max(
        ("train", "test_task", "test_website", "test_domain"), key=lambda s: len((data / f"{s}.json").read_text())
    )
    records = json.loads((data / f"{split}.json").read_text())
    gold = [
        {
            "annotation_id": record["annotation_id"],
            "action_index": index,
            "backend_node_id": action["pos_candidates"][0]["backend_node_id"],
            "operation": {"op": action["operation"]["op"], "value": action["operation"]["value"]},
        }
        for record in records
        for index, action in enumerate(record["actions"])
    ]
    out = tmp_path / "scores.json"
    run(format="mind2web", data=data, split=split, predictions=write_json(tmp_path / "p.json", gold), out=out)
    aggregate = json.loads(out.read_text())["aggregate"]
    assert aggregate["steps"] == len(gold) > 0
    assert [aggregate[key] for key in ("element_accuracy", "operation_f1", "step_success_rate")] == [1, 1, 1]
    assert aggregate["task_success_rate"] == 1
