"""The TurkingBench scorer: the official rules (spec §4.4–4.6, §5) and the paper metric, without a browser."""

import math

import pytest

from agents import scoring
from agents.scoring import OFFICIAL, PAPER, field_score

NAN = float("nan")


@pytest.mark.parametrize(
    ("field_type", "gold", "prediction", "expected"),
    [
        ("text", ["Being gluttonous.", "being gluttonous"], "being gluttonous", 1.0),
        ("text", ["The cat sat on the mat"], "cat on the mats", 0.8),
        ("text", ["Привет мир"], "Привет", 0.0),
        ("radio", [3.0, 3.0, 2.0], "3", 1.0),
        ("radio", ["b", "a", "a", "b"], "a", 0.0),
        ("radio", ["", "", "yes"], "", 1.0),
        ("radio", ["-1"], "1", 1.0),
        ("select", [NAN], "NA", 0.0),
        ("checkbox", ["b|a", "b"], "a|b", 1.0),
        ("checkbox", ["a|b|c"], "a|b", 0.0),
        ("checkbox", ["", "q1-humans"], "", 1.0),
        ("range", [2, 4], "3", 0.75),
    ],
)
def test_every_worked_example_of_the_spec_scores_as_the_official_scorer(field_type, gold, prediction, expected):
    assert field_score(OFFICIAL, field_type, gold, prediction) == pytest.approx(expected)


def test_blank_text_gold_is_not_counted_but_blank_radio_and_checkbox_gold_are():
    for blank in (["", NAN], ["nan", "{}", "'{}'"], []):
        assert field_score(OFFICIAL, "textarea", blank, "") is None
        assert field_score(OFFICIAL, "text", blank, "anything") is None
    assert field_score(OFFICIAL, "radio", [NAN, NAN], "") == 1.0
    assert field_score(OFFICIAL, "radio", [NAN], "yes") == 0.0
    assert field_score(OFFICIAL, "checkbox", [NAN], "") == 1.0
    assert field_score(OFFICIAL, "checkbox", [NAN], "a") == 0.0


def test_text_takes_the_best_annotator_and_undoes_only_amp():
    assert field_score(OFFICIAL, "text", ["one two", "three four"], "three four") == 1.0
    assert field_score(OFFICIAL, "textarea", ["A &amp; B"], "A &amp; B") == 1.0
    assert field_score(OFFICIAL, "textarea", ["a < b"], "a &lt; b") < 1.0
    assert field_score(OFFICIAL, "text", [4.0], "4") == 1.0  # numbers through try_numeric on both sides


def test_radio_majority_counts_blank_votes_and_breaks_ties_by_first_seen():
    assert field_score(OFFICIAL, "radio", ["", "", "yes"], "yes") == 0.0
    assert field_score(OFFICIAL, "radio", ["x", "y"], "x") == 1.0
    assert field_score(OFFICIAL, "radio", ["y", "x"], "x") == 0.0
    assert field_score(OFFICIAL, "select", ["b", "2.0", 2.0], "2") == 0.0  # "2.0" and 2.0: two votes, not one


def test_nan_votes_pool_only_when_they_are_the_same_object_as_with_pandas():
    shared = NAN
    assert scoring.majority([3.0, shared, shared]) is shared  # one NaN object (a text column): 2 votes
    assert scoring.majority([3.0, float("nan"), float("nan")]) == 3.0  # new NaN per cell (numeric column)


def test_punctuation_is_stripped_so_signs_and_dots_vanish():
    assert field_score(OFFICIAL, "radio", [-1.0], "1") == 1.0
    assert field_score(OFFICIAL, "radio", ["1.5"], "15") == 1.0
    assert field_score(OFFICIAL, "select", ["Yes!"], "yes") == 1.0
    assert scoring.try_numeric(" 05 ") == "5"
    assert scoring.try_numeric("1_000") == "1000"
    assert scoring.try_numeric("nan") == "nan"


def test_checkbox_is_an_exact_match_of_the_sorted_set_with_one_annotator():
    assert field_score(OFFICIAL, "checkbox", ["c|a|b"], "a|b|c") == 1.0
    assert field_score(OFFICIAL, "checkbox", ["a|b", "c"], "c") == 1.0
    assert field_score(OFFICIAL, "checkbox", ["a|b"], "a") == 0.0


def test_range_is_the_normalised_distance_to_every_annotator():
    assert field_score(OFFICIAL, "range", [0, 0], "0") == 1.0  # no scale: 1 − 0
    assert field_score(OFFICIAL, "range", [10], "5") == 0.5
    assert field_score(OFFICIAL, "range", [2], "") == 0.0  # no number: mean exact match
    assert field_score(OFFICIAL, "range", ["low", "low", "high"], "low") == pytest.approx(2 / 3)
    assert math.isnan(field_score(OFFICIAL, "range", [2, NAN], "3"))


def test_range_counts_as_one_in_the_instance_score_but_for_real_in_the_task_table():
    scored = [("range", 0.25), ("radio", 1.0)]
    assert scoring.instance_score(OFFICIAL, scored) == 1.0
    assert scoring.instance_score(PAPER, scored) == 0.625
    assert scoring.instance_score(OFFICIAL, []) == 0.0
    rows = [{"task": "t", "type": t, "score": s} for t, s in scored] + [{"task": "u", "type": "text", "score": 0.5}]
    tables = scoring.task_table(rows)
    assert tables == {"t": {"range": 0.25, "radio": 1.0, "all": 0.625}, "u": {"text": 0.5, "all": 0.5}}
    assert scoring.overall(tables) == 0.5625


def test_a_nan_range_score_makes_its_task_nan_and_is_left_out_of_the_overall():
    tables = scoring.task_table(
        [{"task": "t", "type": "range", "score": NAN}, {"task": "u", "type": "radio", "score": 1.0}]
    )
    assert math.isnan(tables["t"]["all"])
    assert scoring.overall(tables) == 1.0
    assert scoring.json_number(tables["t"]["all"]) is None


def test_prediction_strings_are_built_as_the_official_reader():
    assert scoring.prediction_string("checkbox", ["b", "a", "3.0"]) == "3|a|b"
    assert scoring.prediction_string("text", [None, "x"]) == ""
    assert scoring.prediction_string("radio", []) == ""
    assert scoring.prediction_string("select", ["2.0"]) == "2"


def test_an_unknown_input_type_is_refused():
    with pytest.raises(scoring.UnsupportedFieldType):
        field_score(OFFICIAL, "date", ["2024-01-01"], "2024-01-01")
    with pytest.raises(ValueError, match="unknown metric"):
        field_score("fixed", "text", ["a"], "a")


def test_the_paper_metric_uses_iou_real_range_and_keeps_punctuation():
    assert field_score(PAPER, "checkbox", ["a|b|c"], "a|b") == pytest.approx(2 / 3)
    assert field_score(PAPER, "checkbox", ["a|b|c", "a"], "a") == 1.0
    assert field_score(PAPER, "checkbox", [NAN], "") == 1.0
    assert field_score(PAPER, "radio", [-1.0], "1") == 0.0
    assert field_score(PAPER, "radio", [-1.0, -1.0], "-1") == 1.0
    assert field_score(PAPER, "range", [2, 4], "3") == pytest.approx(1 - 1 / 4)
    assert field_score(PAPER, "range", [10], "30") == 0.0
    assert field_score(PAPER, "text", ["The cat sat on the mat"], "cat on the mats") == pytest.approx(0.8)
    assert field_score(PAPER, "text", ["", NAN], "x") is None


def test_summary_counts_every_task_and_names_the_ones_left_out_of_the_task_mean():
    tasks = {"a": {"all": 1.0}, "b": {"all": 0.5}, "nan": {"all": math.nan}}
    summary = scoring.summary(["a", "b", "nan", "hidden"], tasks, [1.0, 0.5, 0.0, 0.0])
    assert summary == {
        "tasks": 4,
        "tasks_scored": 2,
        "tasks_unscorable": [
            {"task": "nan", "reason": scoring.NAN_SCORE},
            {"task": "hidden", "reason": scoring.NOTHING_SCORABLE},
        ],
        "task_mean": 0.75,
        "instances": 4,
        "instance_mean": 0.375,
    }
    assert scoring.summary([], {}, [])["instance_mean"] is None
