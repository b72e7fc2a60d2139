"""The quality figures' definitions (docs/quality.md), on ``annotation.lib.agreement`` alone: property tests (a
task's majority answer and agreement, and a worker's gold accuracy, do not change when other tasks are added, removed
or reordered) and figures compared with values computed in this file in plain Python, on data with ties, blank
known answers, missing answers, hidden fields and MTurk's parameters."""

import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.lib import agreement as lib

PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_EM = 0  # Dawid–Skene (the one figure that looks across tasks) is not what these properties are about


# --- Plain-Python references (nothing of the code under test) -------------------------------------------------


def plain_majority(labels: list[str]) -> tuple[str, Fraction]:
    """The most frequent answer (a tie: the smallest string) and the share of answers equal to it."""
    counts = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0]
    return best[0], Fraction(best[1], len(labels))


def plain_mean(values) -> Fraction:
    values = [Fraction(value) for value in values]
    return sum(values, Fraction(0)) / len(values)


# --- Strategies ---------------------------------------------------------------------------------------------

WORKERS = [f"w{n}" for n in range(6)]
LABELS = ["a", "b", "c", "B", "ab"]


@st.composite
def tasks_of(draw, first: int, count: int) -> list[tuple]:
    """Answers ``(task, worker, {"q": label})`` to ``count`` tasks numbered from ``first``: each worker answers a task
    at most once; some answers leave the field blank."""
    rows = []
    for task in range(first, first + count):
        workers = draw(st.lists(st.sampled_from(WORKERS), min_size=1, max_size=len(WORKERS), unique=True))
        for worker in workers:
            label = draw(st.sampled_from([*LABELS, ""]))
            rows.append((task, worker, {"q": label} if label else {}))
    return rows


def figures_of(result: dict, task) -> dict | None:
    found = next((entry for entry in result["tasks"] if entry["task"] == task), None)
    return None if found is None else found["fields"].get("q")


# --- Properties ---------------------------------------------------------------------------------------------


@PROPERTIES
@given(
    mine=tasks_of(0, 1),
    others=tasks_of(1, 6),
    more=tasks_of(7, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_tasks_majority_and_agreement_depend_on_its_own_answers_only(mine, others, more, seed):
    controls = {"q": "radio"}
    alone = figures_of(lib.batch_agreement(controls, mine, iterations=NO_EM), 0)
    rows = mine + others + more
    random.Random(seed).shuffle(rows)
    with_others = figures_of(lib.batch_agreement(controls, rows, iterations=NO_EM), 0)
    fewer = [row for row in rows if row[0] not in {task for task, _, _ in more}]
    without_some = figures_of(lib.batch_agreement(controls, fewer, iterations=NO_EM), 0)
    labels = [answers["q"] for _, _, answers in mine if answers]
    if not labels:
        assert alone is with_others is without_some is None
        return
    expected, share = plain_majority(labels)
    for figures in (alone, with_others, without_some):
        assert figures["aggregated_majority"] == expected
        assert figures["answers"] == len(labels)
        if len(labels) >= 2:
            assert Fraction(figures["agreement"]).limit_denominator(100) == share
        else:
            assert figures["agreement"] is None


@PROPERTIES
@given(
    own=st.lists(st.floats(0, 1), min_size=0, max_size=8),
    others=st.lists(st.tuples(st.sampled_from(WORKERS[1:]), st.floats(0, 1)), max_size=20),
    answers=tasks_of(100, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_workers_gold_accuracy_depends_on_their_own_gold_answers_only(own, others, answers, seed):
    """w0's gold answers are tasks 0..; other workers' gold answers, answers to tasks that are not gold, and the
    order of everything change nothing (exactly: the same float)."""
    gold = [(task, "w0", score) for task, score in enumerate(own)]
    alone = lib.batch_agreement({"q": "radio"}, [], gold, iterations=NO_EM)
    mixed = gold + [(50 + n, worker, score) for n, (worker, score) in enumerate(others)]
    rows = list(answers)
    random.Random(seed).shuffle(mixed)
    random.Random(seed + 1).shuffle(rows)
    crowded = lib.batch_agreement({"q": "radio"}, rows, mixed, iterations=NO_EM)

    def w0(result):
        found = [worker for worker in result["workers"] if worker["worker"] == "w0"]
        return (found[0]["gold_accuracy"], found[0]["gold_answers"]) if found else (None, 0)

    assert w0(alone) == w0(crowded) == lib.gold_accuracy(own)
    if own:
        assert w0(crowded)[0] == pytest.approx(float(plain_mean(own)))
        assert w0(crowded)[1] == len(own)
    else:
        assert w0(crowded) == (None, 0)


@PROPERTIES
@given(labels=st.lists(st.sampled_from(LABELS), min_size=1, max_size=12))
def test_the_majority_is_the_most_frequent_answer_and_a_tie_goes_to_the_smallest(labels):
    label, count = lib.majority(labels)
    expected, share = plain_majority(labels)
    assert label == expected
    assert Fraction(count, len(labels)) == share


def test_a_tie_goes_to_the_smallest_answer_whatever_the_other_tasks_hold():
    """crowd-kit's MajorityVote gave ``b`` here (ties broken by what the whole field held)."""
    tie = [(0, "w1", {"q": "b"}), (0, "w2", {"q": "a"})]
    for others in ([], [(1, "w3", {"q": "b"}), (1, "w4", {"q": "b"})], [(1, "w1", {"q": "c"}), (2, "w3", {"q": "a"})]):
        result = lib.batch_agreement({"q": "radio"}, tie + others)
        assert figures_of(result, 0)["aggregated_majority"] == "a"
        assert figures_of(result, 0)["agreement"] == 0.5


# --- Fixed data against a plain computation ----------------------------------------------------------------

TEMPLATE = """<input type="hidden" name="assignmentId" value="">
<input type="hidden" name="ctx" value="${ctx}">
<label><input type="radio" name="q" value="a"> a</label><label><input type="radio" name="q" value="b"> b</label>
<label><input type="radio" name="q" value="c"> c</label>
<label><input type="checkbox" name="tags" value="x"> x</label>
<label><input type="checkbox" name="tags" value="y"> y</label>
<input type="email" name="mail">
<textarea name="note"></textarea>
<input type="submit" name="submit" value="Submit">"""

# Known answers from the CSV rows of three tasks (two annotators each). Blank cells ("" and "  ") are no known answer.
CSV_ROWS = {
    0: [{"q": "a", "tags": "x|y", "note": "", "ctx": "zz", "mail": "m@x.org"}, {"q": "a", "tags": "", "note": " "}],
    1: [{"q": "", "tags": "", "note": ""}, {"q": "  ", "tags": "", "note": ""}],  # nothing known: not gold
    2: [{"q": "b", "tags": "", "note": "red car"}, {"q": "c", "tags": "", "note": ""}],
}
# Submitted answers; a name not sent was left blank (a checkbox group with nothing checked sends nothing).
ANSWERS = {
    0: {
        "ann": {"q": "a", "tags": ["y", "x"], "note": "fine", "assignmentId": "7", "ctx": "zz", "submit": "Submit"},
        "bob": {"q": "b", "note": "", "assignmentId": "8", "ctx": "zz"},
        "cy": {"q": "b", "tags": "x", "assignmentId": "9"},
        "dee": {"q": "a", "tags": ["x", "y"]},
    },
    1: {"ann": {"q": "c"}, "bob": {"q": "c"}, "cy": {}},
    2: {"ann": {"q": "b", "note": "a red car"}, "bob": {"q": "c", "note": "red car"}, "cy": {"q": "b", "note": "blue"}},
}


def test_known_answers_keep_only_non_blank_values():
    known = {task: lib.known_answers([{"answers": row} for row in rows]) for task, rows in CSV_ROWS.items()}
    assert known[0] == {"q": ["a", "a"], "tags": ["x|y"], "ctx": ["zz"], "mail": ["m@x.org"]}
    assert known[1] == {}  # every cell blank: not gold
    assert known[2] == {"q": ["b", "c"], "note": ["red car"]}
    assert lib.known_answers([{"answers": {"tags": ["", " "], "q": ["a", "b"]}}]) == {"q": ["a|b"]}


def test_gold_scores_and_accuracy_against_a_plain_computation():
    controls = lib.template_controls(TEMPLATE)
    known = {task: lib.known_answers([{"answers": row} for row in rows]) for task, rows in CSV_ROWS.items()}
    scores = {
        (task, worker): lib.gold_score(controls, known[task], answers)
        for task, by_worker in ANSWERS.items()
        for worker, answers in by_worker.items()
    }
    # Task 0: scored q (radio: exact match with the majority of its known values, "a") and tags (the checkbox set,
    # x|y); not ctx (a hidden input), mail (email: the official scorer has no rule for it), note (all blank).
    assert scores[(0, "ann")] == 1.0  # a ✓, x|y ✓
    assert scores[(0, "bob")] == 0.0  # b ✗, nothing checked ✗
    assert scores[(0, "cy")] == 0.0  # b ✗, x ✗
    assert scores[(0, "dee")] == 1.0
    # Task 1 has no known answer: no score at all.
    assert [scores[(1, worker)] for worker in ("ann", "bob", "cy")] == [None, None, None]
    # Task 2: q against the majority of (b, c): a tie, which the official scorer gives to the first seen, "b";
    # note: ROUGE-L F1 against "red car" ("a red car": P 2/3, R 1, F 4/5; "blue": 0).
    assert scores[(2, "ann")] == pytest.approx(float(plain_mean([1, Fraction(4, 5)])))
    assert scores[(2, "bob")] == pytest.approx(float(plain_mean([0, 1])))
    assert scores[(2, "cy")] == pytest.approx(float(plain_mean([1, 0])))
    rows = [(task, worker, score) for (task, worker), score in scores.items() if score is not None]
    result = lib.batch_agreement(controls, [], rows)
    accuracy = {w["worker"]: (w["gold_accuracy"], w["gold_answers"]) for w in result["workers"]}
    assert accuracy["ann"][0] == pytest.approx(float(plain_mean([1, Fraction(9, 10)])))
    assert accuracy["bob"][0] == pytest.approx(float(plain_mean([0, Fraction(1, 2)])))
    assert accuracy["cy"] == (pytest.approx(0.25), 2)
    assert accuracy["dee"] == (1.0, 1)


def plain_label(name: str, value) -> str | None:
    """An answer as compared: a checkbox group its checked values sorted and joined (nothing checked: ""), text with
    its whitespace collapsed, a blank text no answer."""
    if name == "tags":
        parts = value if isinstance(value, list) else ([value] if value else [])
        return "|".join(sorted(parts))
    text = " ".join((value or "").split())
    return text or None


def test_agreement_without_hidden_fields_and_parameters_against_a_plain_computation():
    controls = lib.template_controls(TEMPLATE)
    assignments = [(task, worker, answers) for task, one in ANSWERS.items() for worker, answers in one.items()]
    result = lib.batch_agreement(controls, assignments)
    assert sorted(field["name"] for field in result["fields"]) == ["mail", "note", "q", "tags"]
    tasks = {entry["task"]: entry["fields"] for entry in result["tasks"]}
    assert not {"assignmentId", "ctx", "submit"} & {name for fields in tasks.values() for name in fields}
    # q per task: (a, b, b, a) a tie → "a"; (c, c) → "c"; (b, c, b) → "b"
    for task, labels in ((0, ["a", "b", "b", "a"]), (1, ["c", "c"]), (2, ["b", "c", "b"])):
        label, share = plain_majority(labels)
        assert tasks[task]["q"]["aggregated_majority"] == label
        assert tasks[task]["q"]["agreement"] == pytest.approx(float(share))
    # tags (a checkbox group: nothing checked is the answer ""): task 0 (x|y, "", x, x|y) → x|y, 2 of 4
    assert tasks[0]["tags"]["aggregated_majority"] == "x|y"
    assert tasks[0]["tags"]["agreement"] == 0.5
    fields = {field["name"]: field for field in result["fields"]}
    assert fields["q"]["majority_share"] == pytest.approx((2 + 2 + 2) / (4 + 2 + 3))
    # a worker's agreement: on each task with two answers or more to a field, whether theirs is the majority's
    workers = {w["worker"]: w for w in result["workers"]}
    compared, agreed = Counter(), Counter()
    for name in ("q", "tags", "note"):
        for by_worker in ANSWERS.values():
            labels = {worker: plain_label(name, answers.get(name)) for worker, answers in by_worker.items()}
            labels = {worker: label for worker, label in labels.items() if label is not None}
            if len(labels) >= 2:
                top, _ = plain_majority(list(labels.values()))
                for worker, label in labels.items():
                    compared[worker] += 1
                    agreed[worker] += label == top
    for worker in ("ann", "bob", "cy", "dee"):
        assert workers[worker]["answers_compared"] == compared[worker], worker
        expected = Fraction(agreed[worker], compared[worker]) if compared[worker] else None
        assert workers[worker]["majority_agreement"] == (None if expected is None else pytest.approx(float(expected)))


def test_the_answers_worth_showing_leave_out_hidden_fields_parameters_and_blanks():
    controls = lib.template_controls(TEMPLATE)
    shown = lib.shown_answers(controls, ANSWERS[0]["bob"] | {"tags": [], "extra": " ", "scripted": "yes"})
    assert shown == [("q", "b"), ("scripted", "yes")]  # a name the markup lacks (made by a script) is an answer


def test_the_figure_is_written_the_same_way_everywhere():
    assert lib.percent(0.4) == "40%"
    assert lib.percent(2 / 3) == "66.7%"
    assert lib.percent(1.0) == "100%"
    assert lib.gold_text(0.4, 5) == "gold accuracy 40% over 5 gold answers"
    assert lib.gold_text(1.0, 1) == "gold accuracy 100% over 1 gold answer"
