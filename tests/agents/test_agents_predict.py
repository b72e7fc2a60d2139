"""`manage.py predict`: a model's predictions for WebLINX and Mind2Web exports made here (the platform's own
exporters on the synthetic corpus), asked of the stand-in model server on loopback (``devtools.standin_model``,
the real chat-completions API), evaluated in one step. Gold answers score as the gold does; malformed answers are
recorded with the raw answer and the run goes on; the key is sent to the endpoint and never shown, not even
when an answer echoes it."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from devtools.standin_model import MALFORMED, NONSENSE, standin_model
from tests.support.corpus import ingest_corpus
from tests.support.metrics_data import gold_output
from workers.agents.predict import LETTERS, Settings, items_for
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.metrics import weblinx

pytestmark = pytest.mark.django_db

KEY = "sk-stand-in-secret-4242"


@pytest.fixture
def exports(tmp_path):
    """A WebLINX and a Mind2Web export of the same synthetic demonstrations, made by the platform's exporters."""
    root = tmp_path / "exports"
    demos = ingest_corpus(project="predict", demos=3, turns=24, elements=20, seed=5)
    for fmt in ("weblinx", "mind2web"):
        get_exporter(fmt).export(export_demos(demos[0].project, fmt), root / fmt, storage_blobs())
    return root


def weblinx_split(data):
    splits = json.loads((data / "splits.json").read_text())
    return max((name for name, demos in splits.items() if demos), key=lambda name: len(splits[name]))


def mind2web_split(data):
    splits = ("train", "test_task", "test_website", "test_domain")
    return max(
        splits,
        key=lambda s: len(json.loads((data / f"{s}.json").read_text())) if (data / f"{s}.json").is_file() else -1,
    )


def predict(tmp_path, monkeypatch, fmt, data, split, **options):
    monkeypatch.setenv("STANDIN_KEY", KEY)
    out, printed, errors = tmp_path / "preds.json", StringIO(), StringIO()
    call_command(
        "predict",
        format=fmt,
        data=str(data),
        split=split,
        out=str(out),
        model="stand-in",
        key_env="STANDIN_KEY",
        stdout=printed,
        stderr=errors,
        **options,
    )
    return out, printed.getvalue() + errors.getvalue()


def assert_key_never_shown(server, out, text):
    assert {request["authorization"] for request in server.requests} == {f"Bearer {KEY}"}  # it was used
    for path in out.parent.glob("preds*.json"):
        assert KEY not in path.read_text()
    assert KEY not in text


def test_weblinx_gold_answers_score_as_the_gold_and_are_evaluated_in_one_step(exports, tmp_path, monkeypatch):
    data, split = exports / "weblinx", weblinx_split(exports / "weblinx")
    items = items_for("weblinx", data, split)
    replays = {}
    for item in items:
        name = item.key["demo_name"]
        replays.setdefault(name, json.loads((data / "demonstrations" / name / "replay.json").read_text())["data"])
    answers = [gold_output(replays[i.key["demo_name"]][i.key["turn_index"]]) for i in items]
    with standin_model(default="nonsense") as server:
        server.script = [f"text:{answer}" for answer in answers]  # one request at a time: in order
        out, text = predict(tmp_path, monkeypatch, "weblinx", data, split, url=server.url, in_flight=1, evaluate=True)
        assert_key_never_shown(server, out, text)
    predictions = json.loads(out.read_text())
    assert [(p["demo_name"], p["turn_index"]) for p in predictions] == [tuple(i.key.values()) for i in items]
    assert [p["output_predicted"] for p in predictions] == answers
    # At least one demonstration of 24 turns (which split it is in varies), its turns the official code predicts.
    assert len(predictions) >= 8
    # The prompt is the official one, built with the weblinx package's processing.
    system = server.requests[0]["body"]["messages"][0]["content"]
    assert "The user's first and last 5 utterances are:" in system
    assert "Above are the pruned HTML contents of the page." in server.requests[-1]["body"]["messages"][1]["content"]
    scores = json.loads(out.with_suffix(".scores.json").read_text())
    expected = json.loads(json.dumps(weblinx.evaluate(data, split, predictions)))
    assert scores["aggregate"] == expected["aggregate"]
    assert scores["aggregate"]["intent_match"] == 1
    assert "Scores written to" in text
    report = json.loads(out.with_suffix(".report.json").read_text())
    assert report["failures"] == []
    assert report["usage"]["answers"] == len(items)


def test_mind2web_multiple_choice_answers_are_read_and_scored(exports, tmp_path, monkeypatch):
    data, split = exports / "mind2web", mind2web_split(exports / "mind2web")
    items = items_for("mind2web", data, split, Settings(candidates=25))
    records = {r["annotation_id"]: r for r in json.loads((data / f"{split}.json").read_text())}
    answers, reachable = [], 0
    for item in items:
        action = records[item.key["annotation_id"]]["actions"][item.key["action_index"]]
        positives = {c["backend_node_id"] for c in action["pos_candidates"]}
        ids = [c["backend_node_id"] for c in item.options]
        position = next((n + 1 for n, node in enumerate(ids) if node in positives), 0)
        reachable += position > 0
        op, value = action["operation"]["op"], action["operation"]["value"]
        answers.append(f"text:Answer: {LETTERS[position]}.\nAction: {op}\nValue: {value}")
    with standin_model(default="nonsense") as server:
        server.script = answers
        out, text = predict(
            tmp_path, monkeypatch, "mind2web", data, split, url=server.url, in_flight=1, candidates=25, evaluate=True
        )
        assert_key_never_shown(server, out, text)
    predictions = json.loads(out.read_text())
    assert len(predictions) == len(items) > 5
    assert "A. None of the above" in server.requests[0]["body"]["messages"][1]["content"]
    aggregate = json.loads(out.with_suffix(".scores.json").read_text())["micro"]
    assert aggregate["element_accuracy"] == pytest.approx(reachable / len(items))
    assert reachable > len(items) / 2


def test_malformed_answers_are_recorded_with_the_raw_answer_and_the_run_goes_on(exports, tmp_path, monkeypatch):
    data, split = exports / "mind2web", mind2web_split(exports / "mind2web")
    items = items_for("mind2web", data, split)
    with standin_model(default="malformed") as server:
        server.script = ["nonsense", "text:Answer: B.\nAction: CLICK", "text:Answer: Z.\nAction: CLICK"]
        out, text = predict(tmp_path, monkeypatch, "mind2web", data, split, url=server.url, in_flight=3, evaluate=True)
        assert_key_never_shown(server, out, text)
    report = json.loads(out.with_suffix(".report.json").read_text())
    predictions = json.loads(out.read_text())
    assert len(predictions) == 1  # the one readable answer
    assert len(report["failures"]) == len(items) - 1
    raw = {failure["answer"] for failure in report["failures"]}
    assert raw >= {MALFORMED, NONSENSE}
    errors = {failure["error"] for failure in report["failures"]}
    assert "no 'Answer: <letter>'" in errors
    assert any(error.startswith("answer Z is not one of the") for error in errors)
    assert f"{len(items) - 1} answers could not be read" in text
    scores = json.loads(out.with_suffix(".scores.json").read_text())
    assert scores["micro"]["step_success_rate"] <= 1 / len(items)

    wl, wl_split = exports / "weblinx", weblinx_split(exports / "weblinx")
    with standin_model(default="malformed") as server:
        out, text = predict(tmp_path, monkeypatch, "weblinx", wl, wl_split, url=server.url, in_flight=4, evaluate=True)
    report = json.loads(out.with_suffix(".report.json").read_text())
    predictions = json.loads(out.read_text())
    assert len(predictions) == len(items_for("weblinx", wl, wl_split))  # kept: the evaluator scores them (0)
    assert len(report["failures"]) == len(predictions)
    assert json.loads(out.with_suffix(".scores.json").read_text())["aggregate"]["intent_match"] == 0


def test_bad_arguments_and_an_unusable_endpoint_are_named(exports, tmp_path, monkeypatch):
    data = exports / "weblinx"
    with pytest.raises(CommandError, match="unknown split 'nope'"):
        predict(tmp_path, monkeypatch, "weblinx", data, "nope", url="http://127.0.0.1:9/v1")
    with pytest.raises(CommandError, match="--url: expected an http:// or https:// URL"):
        predict(tmp_path, monkeypatch, "weblinx", data, weblinx_split(data), url="ftp://x")
    with pytest.raises(CommandError, match="give --url and --model, or --project and --endpoint"):
        call_command("predict", format="weblinx", data=str(data), split="valid", out=str(tmp_path / "p.json"))
    with standin_model(default="401") as server, pytest.raises(CommandError, match="the endpoint failed") as failed:
        predict(tmp_path, monkeypatch, "weblinx", data, weblinx_split(data), url=server.url, in_flight=1)
    assert KEY not in str(failed.value)
    assert not (tmp_path / "preds.json").exists()


def test_an_answer_echoing_the_key_is_masked_in_the_predictions_and_the_report(exports, tmp_path, monkeypatch):
    wl, wl_split = exports / "weblinx", weblinx_split(exports / "weblinx")
    with standin_model(default="key:Authorization: Bearer {key}\nmy key is {key}") as server:
        out, text = predict(tmp_path, monkeypatch, "weblinx", wl, wl_split, url=server.url, in_flight=4)
        assert_key_never_shown(server, out, text)
    report = json.loads(out.with_suffix(".report.json").read_text())
    assert report["failures"]
    assert {failure["answer"] for failure in report["failures"]} == {"Authorization: Bearer [key]\nmy key is [key]"}
