"""WebLINX by the official protocol: ``predict`` asks about the turns the official ``weblinx`` modelling code predicts
and the scores equal the official evaluator's on the same predictions (its turn selection, aggregation and
rounding). The export is the platform's own, of a synthetic project; the official package is the reference client
(``tests/support/weblinx_official.py``); the model is the stand-in server on loopback. Every turn but the
instructor's chat is the named option ``turns="all"``."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from devtools.standin_model import standin_model
from tests.support.corpus import ingest_corpus
from tests.support.metrics_data import SPLIT, DemoBuilder, build_export, gold_output
from tests.support.weblinx_official import official_evaluation, official_turns
from workers.agents.predict import Settings, items_for
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.metrics import weblinx
from workers.exports.metrics.weblinx_data import split_turns

pytestmark = pytest.mark.django_db

FIGURES = ("intent_match", "element_group", "text_group", "overall")


@pytest.fixture
def export(tmp_path, monkeypatch):
    """``(data, split)``: the platform's WebLINX export of a synthetic project, and its split with most demos."""
    monkeypatch.chdir(tmp_path)  # the official code caches xpaths under the working directory
    demos = ingest_corpus(project="protocol", demos=4, turns=30, elements=40, seed=13)
    data = tmp_path / "export"
    get_exporter("weblinx").export(export_demos(demos[0].project, "weblinx"), data, storage_blobs())
    splits = json.loads((data / "splits.json").read_text())
    return data, max(splits, key=lambda name: len(splits[name]))


def replay_turns(data, name):
    return json.loads((data / "demonstrations" / name / "replay.json").read_text())["data"]


def answer(turn: dict, position: int) -> str:
    """The gold action, except every 4th (another element), 5th (a typo) and 7th (a wrong intent), and every message
    otherwise with a word added (a chrF between 0 and 1 that the official rounding changes, whatever demos the
    split draws)."""
    gold = gold_output(turn)
    if position % 7 == 3:
        return 'say(speaker="navigator", utterance="ok")' if turn["type"] == "browser" else 'click(uid="nope")'
    if position % 5 == 2 and '"' in gold:
        return gold.replace('"', 'x"', 2)
    if position % 4 == 1 and 'uid="' in gold:
        return gold.split('uid="')[0] + 'uid="nope")'
    if turn["type"] == "chat":
        return gold[: -len('")')] + ' indeed")'
    return gold


def assert_same_figures(ours: dict, theirs: dict):
    for part in ("aggregate", "conditional"):
        for name in FIGURES:
            mine, official = ours[part][name], theirs[part][name]
            assert (mine is None) == (official is None), (part, name, mine, official)
            assert mine is None or mine == pytest.approx(official, abs=1e-12), (part, name, mine, official)


def test_predict_asks_the_official_turns_and_scores_as_the_official_evaluator(export, tmp_path, monkeypatch):
    data, split = export
    official = official_turns(data, split)
    items = items_for("weblinx", data, split)
    assert [(i.key["demo_name"], i.key["turn_index"]) for i in items] == official == split_turns(data, split)
    turns = {name: replay_turns(data, name) for name, _ in official}
    intents = {(turns[n][i].get("action") or {}).get("intent") for n, i in official}
    assert not intents & {"hover", "copy", "paste", "tabcreate", "tabswitch", "tabremove"}
    answers = [answer(turns[name][index], n) for n, (name, index) in enumerate(official)]
    monkeypatch.setenv("STANDIN_KEY", "sk-protocol")
    out = tmp_path / "preds.json"
    with standin_model(default="nonsense") as server:
        server.script = [f"text:{text}" for text in answers]  # one request at a time: in order
        call_command(
            "predict", format="weblinx", data=str(data), split=split, out=str(out), url=server.url,
            model="stand-in", key_env="STANDIN_KEY", in_flight=1, evaluate=True, stdout=StringIO(),
        )  # fmt: skip
    predictions = json.loads(out.read_text())
    assert [p["output_predicted"] for p in predictions] == answers
    ours = json.loads(out.with_suffix(".scores.json").read_text())
    theirs = official_evaluation(data, split, predictions, tmp_path / "results")
    assert (ours["turns"], ours["rounding"], ours["outside"]) == ("official", "official", [])
    assert [(row["demo_name"], row["turn_index"]) for row in ours["per_turn"]] == theirs["turns"]
    assert len(theirs["turns"]) > 15
    assert_same_figures(ours, theirs)
    assert 0 < ours["aggregate"]["overall"] < 1  # the wrong answers count
    exact = weblinx.evaluate(data, split, predictions, rounding="exact")
    assert exact["aggregate"]["overall"] != ours["aggregate"]["overall"]  # the rounding shows on this data


def test_every_turn_is_an_option_and_the_default_scores_only_the_official_ones(export, tmp_path):
    data, split = export
    official = official_turns(data, split)
    every = [
        (i.key["demo_name"], i.key["turn_index"]) for i in items_for("weblinx", data, split, Settings(turns="all"))
    ]
    assert set(official) < set(every)
    for name in dict.fromkeys(name for name, _ in every):
        turns = replay_turns(data, name)
        instructor = {i for i, turn in enumerate(turns) if turn["type"] == "chat" and turn["speaker"] == "instructor"}
        assert [i for n, i in every if n == name] == [i for i in range(len(turns)) if i not in instructor]
    turns = {name: replay_turns(data, name) for name, _ in every}
    predictions = [
        {"demo_name": name, "turn_index": index, "output_predicted": answer(turns[name][index], n)}
        for n, (name, index) in enumerate(every)
    ]
    ours = weblinx.evaluate(data, split, predictions)  # the default: the official turns and rounding
    on_official = [p for p in predictions if (p["demo_name"], p["turn_index"]) in set(official)]
    theirs = official_evaluation(data, split, on_official, tmp_path / "results")
    assert [(row["demo_name"], row["turn_index"]) for row in ours["per_turn"]] == theirs["turns"]
    assert_same_figures(ours, theirs)
    outside = {(row["demo_name"], row["turn_index"]) for row in ours["outside"]}
    assert outside == set(every) - set(official)
    every_turn = weblinx.evaluate(data, split, predictions, turns="all")
    assert every_turn["outside"] == []
    assert every_turn["aggregate"]["turns"] > ours["aggregate"]["turns"]


def test_the_official_turn_set_follows_the_official_selection_in_its_corners(tmp_path):
    """Chat turns take the screenshot before them (none, or a broken one, leaves them out); a textInput without an
    element stays (the official check compares its intent with "textinput"); hover, copy, paste, tabs never."""
    root = build_export(tmp_path / "wl")
    demo = DemoBuilder(root, "deltaaa")
    demo.chat("navigator", "Hello, before any screenshot")  # 0: no screenshot before it
    demo.chat("instructor", "Open the flights")  # 1
    demo.browser("click", "q")  # 2
    demo.chat("navigator", "Clicked")  # 3: takes turn 2's good screenshot
    demo.browser("click", "go")  # 4: broken below
    demo.chat("navigator", "It broke")  # 5: takes turn 4's broken screenshot
    for intent in ("textInput", "click", "change", "submit"):  # 6-9: without an element
        demo.browser(intent, element=False, text="x")
    for intent in ("hover", "copy", "paste", "tabcreate", "tabswitch", "scroll", "load"):  # 10-16
        demo.browser(intent, "q")
    demo.browser("click", "go")  # 17: no screenshot below
    demo.chat("navigator", "Own screenshot")  # 18: its own good one below
    demo.turns[4]["state"]["screenshot_status"] = "broken"
    del demo.turns[17]["state"]["screenshot"]
    demo.turns[18]["state"] = {"screenshot": "screenshot-18-0.png", "screenshot_status": "good"}
    demo.write()
    splits = json.loads((root / "splits.json").read_text())
    (root / "splits.json").write_text(json.dumps({**splits, SPLIT: [*splits[SPLIT], "deltaaa"]}))

    ours = split_turns(root, SPLIT)
    assert ours == official_turns(root, SPLIT)
    assert [index for name, index in ours if name == "deltaaa"] == [2, 3, 6, 15, 16, 18]
    every = [index for name, index in split_turns(root, SPLIT, "all") if name == "deltaaa"]
    assert every == [i for i in range(19) if i != 1]
