"""WebLINX metrics: equal to the official ``weblinx`` 0.3.2 evaluator, turn by turn and in aggregate.

A small WebLINX export is built by hand in ``tmp_path``; the official evaluator (the oracle) and ours score the
same predictions on it. The oracle writes its xpath cache under the working directory, so every test runs in
its own ``tmp_path``.
"""

import copy
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from tests.support.metrics_data import (
    LAYOUT,
    PREDICTIONS_MAIN,
    SPLIT,
    build_export,
    gold_output,
    p,
)
from tests.support.payloads import bbox as box
from workers.exports.metrics import DatasetError, PredictionError
from workers.exports.metrics import weblinx as metrics
from workers.exports.metrics.weblinx_pages import DirectoryPages, PageState
from workers.exports.metrics.weblinx_parse import parse_output

ORACLE_METRICS = ["exact-match", "intent-match", "chrf", "iou", "urlf"]
OFFICIAL_INTENTS = ["change", "click", "load", "say", "scroll", "submit", "textinput"]
# The metrics turn by turn, on every prediction and to every digit (tests/agents/test_agents_weblinx_protocol.py
# checks the official turn set and rounding).
EVERY_TURN_EXACT = {"turns": "all", "rounding": "exact"}


# The other intents and parser corner cases: compared turn by turn with the oracle.
PREDICTIONS_MORE = [
    p("alphaaa", 0, 'say(utterance="Please, find cheap flights to Montreal", speaker="navigator")'),
    p("alphaaa", 2, 'load(url="https://www.example.com/flights")'),
    p("alphaaa", 3, "click(y=130)"),
    p("alphaaa", 4, 'textInput(text="Montreal", uid="q")'),
    p("alphaaa", 5, 'change(value="Economy", uid="cabin")'),
    p("alphaaa", 7, 'submit(uid="go")'),
    p("alphaaa", 9, 'copy(text="Flight AC123", uid="link")'),
    p("alphaaa", 10, 'paste(text="AC123", uid="q")'),
    p("alphaaa", 11, 'scroll(x="0", y="300")'),
    p("alphaaa", 12, "hover(x=510, y=310)"),
    p("alphaaa", 15, 'action(intent="click", uid="go")'),
    p("alphaaa", 16, 'submit(data-webtasks-id="form")'),
    p("alphaaa", 18, 'say(speaker="navigator", utterance="I found three flights, the cheapest is 120 dollars")'),
    p("alphaaa", 19, 'load(url="https://en.wikipedia.org/wiki/Montreal")'),
    p("alphaaa", 20, "hover(x=15, y=15)"),
    p("alphaaa", 21, "tab_create()"),
    p("alphaaa", 23, 'text_input(uid="q", text="2.5 ")'),
    p("alphaaa", 24, "click(uid=123)"),
    p("alphaaa", 26, 'say(speaker="navigator", utterance="You\'re welcome")'),
    p("betaaaa", 1, 'LOAD(url="http://news.example.org")'),
    p("betaaaa", 2, 'click(uid="root")'),
    p("betaaaa", 3, 'text_input(text="weather, today", uid="q")'),
    p("betaaaa", 5, 'copy(text="x")'),
    p("betaaaa", 6, 'hover(uid="form")'),
]


@pytest.fixture
def export(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the official evaluator caches xpaths under ./.cache
    return build_export(tmp_path / "wl")


def official_scores(data_dir: Path, predictions: list[dict], split: str = SPLIT) -> list[dict]:
    """The oracle: weblinx.eval's process_model_results + run_evaluation, as auto_eval_and_save calls them."""
    from weblinx import Demonstration, Replay
    from weblinx.eval import process_model_results, run_evaluation

    names = json.loads((data_dir / "splits.json").read_text())[split]
    base = str(data_dir / "demonstrations")
    replays = {name: Replay.from_demonstration(Demonstration(name, base_dir=base)) for name in names}
    processed = process_model_results(replays, copy.deepcopy(predictions), verbose=False)
    return run_evaluation(processed, metrics=ORACLE_METRICS, num_turns=1)


def official_aggregate(results_dir: Path, scores: list[dict], *, rounded=False, split: str = SPLIT) -> dict:
    """The oracle's compute_aggregated_scores on an eval_scores.csv of ``scores`` (unrounded unless asked)."""
    from weblinx.eval import compute_aggregated_scores

    df = pd.DataFrame(scores)
    # Only the per-intent breakdown reads ref_intent, and it raises KeyError for intents outside its table
    # (hover, copy, paste, tab*): relabel those so the overall and group scores can be computed.
    df["ref_intent"] = df["ref_intent"].where(df["ref_intent"].isin(OFFICIAL_INTENTS), "click")
    path = results_dir / "project" / split / "model" / "eval_scores.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    (df.round(2) if rounded else df).to_csv(path, index=False)
    records = compute_aggregated_scores(results_dir, splits=[split], project_names=["project"], verbose=False)
    return records_by_name(records)


def records_by_name(records: list[dict]) -> dict:
    names = {
        ("overall", "intent-match"): "intent_match",
        ("element-group", "iou"): "element_group",
        ("text-group", "chrf-urlf"): "text_group",
        ("overall", "overall"): "overall",
    }
    result = {"aggregate": {}, "conditional": {}, "by_intent": {}}
    for record in records:
        key = names.get((record["intent"], record["metric"]))
        if key:
            result["aggregate"][key] = none_if_nan(record["unconditional_score"])
            result["conditional"][key] = none_if_nan(record["score"])
        elif record["intent"] in OFFICIAL_INTENTS:
            entry = result["by_intent"].setdefault(record["intent"], {})
            entry[record["metric"].replace("-", "_")] = none_if_nan(record["unconditional_score"])
    return result


def none_if_nan(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def assert_close(ours, theirs, label, tol=1e-6):
    theirs = none_if_nan(theirs)
    if theirs is None or ours is None:
        assert ours is None, f"{label}: ours {ours!r}, official {theirs!r}"
        assert theirs is None, f"{label}: ours {ours!r}, official {theirs!r}"
    else:
        assert abs(ours - theirs) <= tol, f"{label}: ours {ours!r}, official {theirs!r}"


def assert_same_turns(ours: dict, theirs: list[dict]):
    assert [(row["demo_name"], row["turn_index"]) for row in ours["per_turn"]] == [
        (row["demo_name"], row["turn_index"]) for row in theirs
    ]
    for mine, official in zip(ours["per_turn"], theirs, strict=True):
        label = f"{mine['demo_name']}[{mine['turn_index']}]"
        assert (mine["intent"], mine["predicted_intent"]) == (official["ref_intent"], official["pred_intent"]), label
        assert mine["intent_match"] == official["intent-match"], label
        assert mine["exact_match"] == official["exact-match"], label
        for name in ("iou", "chrf", "urlf"):
            assert_close(mine[name], official[name], f"{label} {name}")


def assert_same_aggregate(ours: dict, theirs: dict, tol=1e-9):
    for part in ("aggregate", "conditional"):
        for key in ("intent_match", "element_group", "text_group", "overall"):
            assert_close(ours[part][key], theirs[part][key], f"{part}.{key}", tol)


def test_scores_every_turn_as_the_official_evaluator(export):
    ours = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    theirs = official_scores(export, PREDICTIONS_MAIN)
    assert len(theirs) == 20
    assert_same_turns(ours, theirs)


def test_aggregates_as_the_official_evaluator(export, tmp_path):
    ours = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    theirs = official_aggregate(tmp_path / "results", official_scores(export, PREDICTIONS_MAIN))
    assert_same_aggregate(ours, theirs)
    assert ours["aggregate"]["turns"] == 20
    assert set(ours["by_intent"]) == set(theirs["by_intent"]) == set(OFFICIAL_INTENTS)
    for intent, official in theirs["by_intent"].items():
        mine = ours["by_intent"][intent]
        assert set(mine) - {"turns"} == set(official), intent
        for name, value in official.items():
            assert_close(mine[name], value, f"{intent}.{name}", 1e-9)


def test_scores_other_intents_and_parser_corners_as_the_official_evaluator(export, tmp_path):
    ours = metrics.evaluate(export, SPLIT, PREDICTIONS_MORE, **EVERY_TURN_EXACT)
    theirs = official_scores(export, PREDICTIONS_MORE)
    assert {row["intent"] for row in ours["per_turn"]} >= {"hover", "copy", "paste", "tabcreate", "scroll"}
    assert_same_turns(ours, theirs)
    assert_same_aggregate(ours, official_aggregate(tmp_path / "results", theirs))


def test_official_aggregation_raises_on_hover_turns_but_ours_scores_them(export, tmp_path):
    from weblinx.eval import compute_aggregated_scores

    theirs = official_scores(export, PREDICTIONS_MORE)
    path = tmp_path / "results" / "project" / SPLIT / "model" / "eval_scores.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame(theirs).to_csv(path, index=False)
    with pytest.raises(KeyError):
        compute_aggregated_scores(tmp_path / "results", splits=[SPLIT], project_names=["project"], verbose=False)
    assert metrics.evaluate(export, SPLIT, PREDICTIONS_MORE, **EVERY_TURN_EXACT)["by_intent"]["hover"]["turns"] == 2


def test_official_rounding_reproduces_the_official_pipeline(export, tmp_path):
    from weblinx.eval import auto_eval_and_save, compute_aggregated_scores

    results = tmp_path / "results"
    model_dir = results / "project" / SPLIT / "model"
    model_dir.mkdir(parents=True)
    (model_dir / "results.json").write_text(json.dumps(PREDICTIONS_MAIN))
    auto_eval_and_save(
        results,
        base_dir=str(export / "demonstrations"),
        project_names=["project"],
        splits=[SPLIT],
        split_file=str(export / "splits.json"),
        check_hashes=False,
    )
    records = compute_aggregated_scores(results, splits=[SPLIT], project_names=["project"], verbose=False)
    ours = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, turns="all")
    assert_same_aggregate(ours, records_by_name(records))
    csv = pd.read_csv(model_dir / "eval_scores.csv").to_dict("records")
    assert_same_turns(ours, csv)
    exact = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    assert exact["aggregate"] != ours["aggregate"]  # the rounding is visible on this data


def test_drops_the_reference_turns_the_official_evaluator_drops(export):
    result = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    reasons = {(row["demo_name"], row["turn_index"]): row["reason"] for row in result["dropped"]}
    assert reasons == {
        ("alphaaa", 6): "a click followed by a submit on the same element",
        ("alphaaa", 8): "a click followed by a copy",
        ("alphaaa", 13): "the reference element has no data-webtasks-id",
        ("alphaaa", 14): "the reference element is not in the page HTML and bboxes",
        ("alphaaa", 17): "the reference element is not in the page HTML and bboxes",
        ("alphaaa", 22): "the reference element is not in the page HTML and bboxes",
        ("alphaaa", 25): "the reference element is not in the page HTML and bboxes",
        ("betaaaa", 4): "a click followed by a copy",
    }
    assert len(result["per_turn"]) + len(result["dropped"]) == result["predictions"] == len(PREDICTIONS_MAIN)


def turn(result, demo, index):
    return next(row for row in result["per_turn"] if (row["demo_name"], row["turn_index"]) == (demo, index))


def test_turn_scores_follow_the_intent(export):
    result = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    assert turn(result, "alphaaa", 3)["score"] == 1  # click: IoU
    assert turn(result, "alphaaa", 2)["score"] == pytest.approx(1)  # load: URL F1, www and slashes ignored
    assert turn(result, "alphaaa", 19)["urlf"] == pytest.approx(2 / 3)  # "www.wikipedia.org" -> "ikipedia.org"
    typo = turn(result, "alphaaa", 4)
    assert typo["iou"] == 1
    assert 0 < typo["chrf"] < 1
    assert typo["score"] == pytest.approx(typo["chrf"])
    assert turn(result, "alphaaa", 5)["score"] == 0  # change on the wrong element: IoU 0
    assert turn(result, "alphaaa", 11)["score"] == 0  # scroll: IoU against a reference without element
    assert turn(result, "alphaaa", 15)["iou"] == 1  # x/y inside "go", the smallest box there
    assert turn(result, "alphaaa", 16)["iou"] < 1  # x=450 y=130 without comma still parsed; "go" is not "form"
    assert turn(result, "alphaaa", 23)["chrf"] == 0  # text="2.5" parses as a float
    assert turn(result, "alphaaa", 24)["iou"] == 0  # uid="123" parses as an int, which is no uid
    wrong = turn(result, "alphaaa", 26)
    assert (wrong["intent"], wrong["intent_match"], wrong["score"]) == ("say", 0, 0)
    assert turn(result, "betaaaa", 0)["predicted_intent"] == "<unk>"


def test_wrong_intents_count_as_zero_in_every_group(export):
    result = metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    rows = result["per_turn"]
    wrong = [row for row in rows if not row["intent_match"]]
    assert wrong
    iou_values = [row["iou"] for row in rows if row["intent_match"] and row["iou"] is not None]
    expected = sum(iou_values) / (len(iou_values) + len(wrong))
    assert result["aggregate"]["element_group"] == pytest.approx(expected)
    assert result["conditional"]["element_group"] == pytest.approx(sum(iou_values) / len(iou_values))
    assert result["aggregate"]["overall"] == pytest.approx(sum(row["score"] for row in rows) / len(rows))


def test_score_works_on_loaded_replays_with_any_page_loader(export):
    names = ["alphaaa", "betaaaa"]
    replays = {name: json.loads((export / "demonstrations" / name / "replay.json").read_text()) for name in names}
    calls = []
    directory = DirectoryPages(export / "demonstrations")

    def pages(demo_name, page):
        calls.append((demo_name, page))
        return directory(demo_name, page)

    result = metrics.score(replays, pages, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    assert result == metrics.evaluate(export, SPLIT, PREDICTIONS_MAIN, **EVERY_TURN_EXACT)
    assert ("alphaaa", "page-3-1.html") in calls


def test_directory_pages_reads_uids_and_the_bboxes_named_by_the_page(export):
    pages = DirectoryPages(export / "demonstrations", keep=1)
    state = pages("alphaaa", "page-3-1.html")
    assert {"q", "nobox", "html"} <= state.uids
    assert "ghost" not in state.uids
    assert state.bboxes["ghost"]["width"] == 50
    assert pages("alphaaa", "page-22-0.html").bboxes is None  # no bboxes-22.json
    assert pages("alphaaa", "page-3-1.html") == state  # read again after eviction
    assert pages("alphaaa", "missing-1-0.html") == PageState()


def test_pages_are_read_as_utf_8_else_latin_1_and_parsed_as_html(tmp_path):
    from workers.exports.metrics.weblinx_pages import html_uids, read_html

    (tmp_path / "page.html").write_bytes("<p data-webtasks-id='é'>café</p>".encode("latin-1"))
    assert html_uids(read_html(tmp_path / "page.html")) == {"é"}
    assert read_html(tmp_path / "none.html") is None
    assert html_uids("") == frozenset()
    assert html_uids("<p data-webtasks-id='a'>x</p><P DATA-WEBTASKS-ID='b'>") == {"a", "b"}


def bare_turn(intent: str, uid: str | None = None) -> dict:
    """A browser turn with only what the evaluator reads."""
    arguments = {"element": {"attributes": {"data-webtasks-id": uid}}} if uid else {}
    return {"type": "browser", "action": {"intent": intent, "arguments": arguments}, "state": {"page": "p-0-0.html"}}


def test_a_zero_area_box_scores_zero_where_the_official_code_divides_by_zero():
    from weblinx.eval.metrics import IOUMetric

    element = {"bbox": box(*LAYOUT["tiny"])}
    with pytest.raises(ZeroDivisionError):
        IOUMetric().score({"element": element}, {"element": element})
    state = PageState(uids=frozenset({"tiny"}), bboxes={"tiny": box(*LAYOUT["tiny"])})
    replays = {"d": {"data": [bare_turn("click", "tiny")]}}
    result = metrics.score(replays, lambda name, page: state, [p("d", 0, 'click(uid="tiny")')], turns="all")
    assert result["per_turn"][0]["iou"] == 0


def test_a_click_before_a_submit_without_element_is_kept():
    state = PageState(uids=frozenset({"go"}), bboxes={"go": box(*LAYOUT["go"])})
    replays = {"d": {"data": [bare_turn("click", "go"), bare_turn("submit")]}}
    result = metrics.score(replays, lambda name, page: state, [p("d", 0, 'click(uid="go")')], turns="all")
    assert result["per_turn"][0]["score"] == 1


@pytest.mark.parametrize(
    "output",
    [
        'click(uid="a1")',
        'Click(uid="a1")',
        'text_input(text="oh no ):", uid="123")',
        'say(speaker="navigator", utterance="Yes, sure (ok), done")',
        'say(speaker="navigator", utterance="He said "hi", then left")',
        "I will click(x=12.5 y=3) now",
        "scroll(x=-300, y=2.5e2)",
        "click(x=abc, y=1)",
        "click(y=3)",
        "click(x=4)",
        'load(url="https://www.x.com/a,b", extra)',
        'change(value=".", uid="a")',
        'change(value="1.", uid=-7)',
        'change(value="1_000.5")',
        "submit(top=1, left=2, right=3, bottom=4)",
        'action(intent="text_input", text="x")',
        'action(uid="a")',
        "click (uid=a)",
        "no action at all",
        "",
        'say(utterance="unterminated',
        'click(uid="a", uid="b")',
        "tab_switch(from=1, to=2)",
        'my_click(uid="a")',
    ],
)
def test_parses_outputs_as_the_official_parser(output):
    from weblinx.processing.outputs import parse_predicted_output_string, sanitize_args

    intent, args = parse_predicted_output_string(output, warn_for_unknown=False)
    assert parse_output(output) == (intent, sanitize_args(args))


@pytest.mark.parametrize(
    ("output", "parsed"),
    [("action(intent=3)", ("<unk>", {"intent": 3})), ('say(utterance="²")', ("say", {"utterance": "²"}))],
)
def test_parses_outputs_the_official_parser_crashes_on(output, parsed):
    from weblinx.processing.outputs import parse_predicted_output_string

    with pytest.raises((AttributeError, ValueError)):
        parse_predicted_output_string(output, warn_for_unknown=False)
    assert parse_output(output) == parsed


def test_smallest_box_under_a_point_as_the_official_inference():
    from weblinx.processing.outputs import get_element_uid_by_coords

    class FakeTurn:
        bboxes = {uid: box(*xywh) for uid, xywh in LAYOUT.items()}

    for x, y in [(510, 310), (130, 130), (0, 0), (450.5, 160.75), (1281, 5), (540.4, 120), (805, 120.5)]:
        assert metrics.uid_at(FakeTurn.bboxes, x, y) == get_element_uid_by_coords(FakeTurn, x, y), (x, y)


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        (p("gammaaa", 0, "say()"), "prediction 1: field 'demo_name' 'gammaaa' is not in split 'valid'"),
        (p("nosuchd", 0, "say()"), "prediction 1: field 'demo_name' 'nosuchd' is not in split 'valid'"),
        (p("betaaaa", 7, "say()"), "prediction 1: field 'turn_index' 7 is out of range for 'betaaaa' (7 turns)"),
        (p("betaaaa", -1, "say()"), "prediction 1: field 'turn_index' -1 is out of range"),
        ({"demo_name": "betaaaa", "turn_index": 0}, "prediction 1: field 'output_predicted' is missing"),
        ({"turn_index": 0, "output_predicted": ""}, "prediction 1: field 'demo_name' is missing"),
        (p("betaaaa", "0", "say()"), "prediction 1: field 'turn_index' must be an integer, got str"),
        (p("betaaaa", True, "say()"), "prediction 1: field 'turn_index' must be an integer, got bool"),
        (p("betaaaa", 1, None), "prediction 1: field 'output_predicted' must be a string, got NoneType"),
        (p("alphaaa", 0, "say()"), "prediction 1: fields 'demo_name', 'turn_index' repeat prediction 0"),
        (["alphaaa", 0], "prediction 1: expected an object, got list"),
    ],
)
def test_bad_predictions_name_their_index_and_field(export, prediction, message):
    with pytest.raises(PredictionError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        metrics.evaluate(export, SPLIT, [p("alphaaa", 0, "say()"), prediction])


def test_predictions_must_be_a_list(export):
    with pytest.raises(ValueError, match="predictions must be a list"):
        metrics.evaluate(export, SPLIT, {"demo_name": "alphaaa"})


def test_unknown_split_and_missing_files_are_dataset_errors(export, tmp_path):
    with pytest.raises(DatasetError, match="unknown split 'test_geo'.*has: test_iid, train, valid"):
        metrics.evaluate(export, "test_geo", [])
    with pytest.raises(DatasetError, match="splits.json does not exist"):
        metrics.evaluate(tmp_path / "nothing", SPLIT, [])
    (export / "demonstrations" / "betaaaa" / "replay.json").unlink()
    with pytest.raises(DatasetError, match="replay.json does not exist"):
        metrics.evaluate(export, SPLIT, [p("betaaaa", 0, "say()")])


def test_no_predictions_give_empty_scores(export):
    result = metrics.evaluate(export, SPLIT, [])
    assert result["per_turn"] == []
    assert result["aggregate"] == {
        "intent_match": None,
        "element_group": None,
        "text_group": None,
        "overall": None,
        "turns": 0,
    }


# --- a synthetic corpus exported by the platform's own WebLINX exporter ----------------------------------------


def perturbed_output(turn: dict, variant: int, other_uid: str) -> str:
    """Variant 0: gold; 1: typo in every quoted text; 2: another element; 3: the element by its centre; 4: a
    wrong intent."""
    gold = gold_output(turn)
    bbox = ((turn.get("action") or {}).get("arguments") or {}).get("element", {}).get("bbox")
    if variant == 1:
        return gold.replace('e"', 'ee"').replace("/", "/x", 1)
    if variant == 2 and 'uid="' in gold:
        return gold.split('uid="')[0] + f'uid="{other_uid}")'
    if variant == 3 and bbox:
        x, y = bbox["left"] + bbox["width"] / 2, bbox["top"] + bbox["height"] / 2
        return gold.split("(")[0] + f"(x={x}, y={y})"
    if variant == 4:
        return 'say(speaker="navigator", utterance="ok")' if turn["type"] == "browser" else 'click(uid="x")'
    return gold


@pytest.mark.django_db
def test_scores_a_synthetic_export_as_the_official_evaluator(tmp_path, monkeypatch):
    from tests.support.corpus import ingest_corpus
    from workers.exports.dataset import export_demos, storage_blobs
    from workers.exports.exporters import get_exporter

    monkeypatch.chdir(tmp_path)
    demos = ingest_corpus(demos=4, turns=30, elements=40, seed=21)
    out = tmp_path / "export"
    get_exporter("weblinx").export(export_demos(demos[0].project, "weblinx"), out, storage_blobs())
    splits = {name: names for name, names in json.loads((out / "splits.json").read_text()).items() if names}
    compared = 0
    for split, names in splits.items():
        predictions = []
        for name in names:
            turns = json.loads((out / "demonstrations" / name / "replay.json").read_text())["data"]
            uids = [uid for uid in map(gold_output, turns) if 'uid="' in uid]
            for index, turn in enumerate(turns):
                other = uids[(index + 3) % len(uids)].split('uid="')[1].split('"')[0] if uids else "none"
                predictions.append(p(name, index, perturbed_output(turn, (index + len(name)) % 5, other)))
        ours = metrics.evaluate(out, split, predictions, **EVERY_TURN_EXACT)
        theirs = official_scores(out, predictions, split)
        assert_same_turns(ours, theirs)
        assert_same_aggregate(ours, official_aggregate(tmp_path / "results" / split, theirs, split=split))
        compared += len(theirs)
    assert compared > 60
