"""The human ceiling of an instance and the reasons a solver stays below it (agents/ceiling.py), on hand-made
results: the rules are pure; the oracle's figures on real tasks are in test_agents_baselines.py."""

import math

import pytest

from agents import ceiling, scoring
from agents.harness import FieldResult, InstanceResult, RunResult


def field(name, kind, prediction, gold, metric="official", **extra):
    score = scoring.field_score(metric, kind, gold, prediction)
    return FieldResult("T", 0, name, kind, score=score, prediction=prediction, **extra)


def instance(fields, metric="official"):
    return InstanceResult("T", 0, "http://x/", metric, fields)


@pytest.mark.parametrize(
    ("kind", "answer", "read"),
    [
        ("text", "Paris", "Paris"),
        ("text", math.nan, ""),
        ("textarea", "{}", ""),
        ("text", 4.0, "4"),
        ("radio", 3.0, "3"),
        ("radio", math.nan, ""),
        ("select", "b", "b"),
        ("checkbox", "q2|q1", "q1|q2"),
        ("checkbox", math.nan, ""),
        ("range", 7.5, "7.5"),
        ("text", None, ""),
    ],
)
def test_an_annotators_answer_is_read_as_the_page_would_read_it(kind, answer, read):
    assert ceiling.annotator_prediction(kind, answer) == read


def test_the_ceiling_is_the_best_single_annotators_instance_score_and_its_field_scores():
    gold = {"q": ["a", "b", "a"], "note": ["x y", "z", "x"], "box": ["k", "k|l", "k"]}
    fields = [
        field("q", "radio", "b", gold["q"]),  # the solver took the minority answer: 0.0
        field("note", "text", "x y", gold["note"]),
        field("box", "checkbox", "k", gold["box"]),
    ]
    result = instance(fields)
    ceiling.apply(result, gold, oracle=False)
    # Annotator 0 (a, "x y", k) and 2 (a, "x", k) reach 1.0 on every field; 0 is first.
    assert result.ceiling == 1.0
    assert [f.ceiling for f in fields] == [1.0, 1.0, 1.0]
    assert fields[0].shortfall == "answer: differs from the best annotator's"
    assert fields[1].shortfall is None
    assert fields[2].shortfall is None


def test_annotators_who_disagree_on_a_range_bound_the_ceiling_below_one_and_the_oracles_median_reaches_it():
    gold = {"r": [10.0, 1.0, 1.0]}
    median = field("r", "range", "1", gold["r"], calls=["self.actions.modify_range('r', '1.0')"])
    result = instance([median])  # official: the instance counts the range as 1.0, so the field scores break the tie
    ceiling.apply(result, gold, oracle=True)
    best = 1 - (9 + 0 + 0) / 3 / 10
    assert median.ceiling == pytest.approx(best)
    assert median.score == pytest.approx(best)
    assert median.shortfall is None
    mean = field("r", "range", "4", gold["r"], metric="paper", calls=["self.actions.modify_range('r', '4.0')"])
    result = instance([mean], metric="paper")
    ceiling.apply(result, gold, oracle=True)
    assert mean.score < mean.ceiling == pytest.approx(best)
    assert mean.shortfall.startswith("page changed the value: the page reads '4'")


def test_a_control_that_cannot_hold_the_best_annotators_answer_is_named_before_the_action():
    gold = {"r": [12.0] * 3, "steps": ["lift arm up"] * 3, "other": [4.0, 4.0, 12.0]}
    held = "the range (min 0, max 10, step 1) holds 10 for the gold 12"
    fields = [
        field("r", "range", "10", gold["r"], metric="paper", cannot_hold={"12": held}, error="ActionError: x"),
        field("steps", "textarea", "", gold["steps"], metric="paper", cannot_hold={"*": "read-only textarea"}),
        # Only another annotator's 12 is out of reach; the best one's 4 is not: the reason is the answer's.
        field("other", "range", "9", gold["other"], metric="paper", cannot_hold={"12": held}),
    ]
    result = instance(fields, metric="paper")
    ceiling.apply(result, gold, oracle=False)
    assert [f.shortfall for f in fields] == [
        f"the control cannot hold the gold value: {held}",
        "the control cannot hold the gold value: read-only textarea",
        "answer: differs from the best annotator's",
    ]


def test_each_reason_below_the_ceiling_is_named_in_order():
    gold = {"late": ["yes"], "bad": ["b"], "reset": ["typed"], "untouched": ["v"]}
    fields = [
        field("late", "radio", "", gold["late"], shown_at_turn=False),
        field("bad", "select", "", gold["bad"], error="ActionError: no option 'b'", calls=[]),
        field("reset", "text", "other words", gold["reset"], calls=["self.actions.modify_text('reset', 'typed')"]),
        field("untouched", "checkbox", "w", gold["untouched"]),
    ]
    result = instance(fields)
    ceiling.apply(result, gold, oracle=True)
    reasons = [f.shortfall for f in fields]
    assert reasons[0].startswith("dynamic element: not displayed when its turn came")
    assert reasons[1] == "action failed: ActionError: no option 'b'"
    assert reasons[2].startswith("page changed the value: the page reads 'other words' after self.actions.modify_text(")
    assert reasons[3].startswith("page changed the value: the oracle took no action")
    assert result.ceiling == 1.0
    assert result.score < 1.0


def test_a_field_at_its_ceiling_has_no_reason_and_an_ended_instance_no_ceiling():
    gold = {"q": ["a"]}
    at = instance([field("q", "radio", "a", gold["q"], calls=["self.actions.modify_radio('q', 'a')"])])
    ceiling.apply(at, gold, oracle=True)
    assert at.ceiling == 1.0
    assert at.fields[0].shortfall is None
    ended = InstanceResult("T", 1, "http://x/", "official", [FieldResult("T", 1, "q", "", skipped="over time")])
    ended.ended = "over time"
    ceiling.apply(ended, gold, oracle=True)
    assert ended.ceiling is None
    nothing = instance([FieldResult("T", 0, "q", "radio", skipped="not displayed")])
    ceiling.apply(nothing, gold, oracle=True)
    assert nothing.ceiling == 0.0  # as its score: an instance with nothing counted scores 0.0


def test_the_results_put_the_ceiling_beside_each_score_per_task_and_overall():
    run = RunResult(metric="official")
    for task, answer in (("A", "a"), ("B", "b")):
        gold = {"q": ["a", "a", "b"]}
        result = InstanceResult(task, 0, "http://x/", "official", [field("q", "radio", answer, gold["q"])])
        result.fields[0].task = task
        ceiling.apply(result, gold, oracle=False)
        run.instances.append(result)
    data = run.as_dict()
    assert data["tasks"]["A"]["all"] == 1.0
    assert data["tasks"]["B"]["all"] == 0.0
    assert data["ceiling"] == {"tasks": {"A": 1.0, "B": 1.0}, "overall": 1.0, "overall_instances": 1.0}
    assert [row["ceiling"] for row in data["instances"]] == [1.0, 1.0]
    assert [row["ceiling"] for row in data["fields"]] == [1.0, 1.0]
    assert data["shortfalls"] == [
        {
            "task": "B",
            "instance": 0,
            "field": "q",
            "type": "radio",
            "reason": "answer: differs from the best annotator's",
        }
    ]
