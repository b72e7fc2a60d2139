"""Nothing of a model's answer is silent, and what is kept of it is bounded and never holds the endpoint's key:
the client masks the key (and ``Bearer <key>``) in every answer, fresh or cached, and cuts it at
``MAX_ANSWER_CHARS``; the prompt lists every option of a field up to ``MAX_OPTIONS`` and says how many more there
are; on a real page in headless Chromium, every call the ``llm`` solver cannot apply is the error of the field it
names or an entry of the instance's ``unapplied`` list with its line and why (an upper-cased name says which name
the page has), and prose is nobody's error."""

import re
import string
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agents import answers
from agents.answers import MAX_ANSWER_CHARS, cut_answer, redact_answer
from agents.browser import make_driver
from agents.harness import run as run_solver
from agents.llm import ChatClient, Completion, Endpoint
from agents.llm_solver import MAX_OPTIONS, MAX_UNAPPLIED, LLMSolver, PagePlan, describe_fields, unapplied_entry
from agents.server import serve
from devtools.standin_model import standin_model
from tests.support.agents_data import form_dataset

KEY = "sk-answers-SECRET-4242abcd"
HELLO = [{"role": "user", "content": "Fill the form, please."}]


@pytest.mark.parametrize(
    ("text", "key", "kept"),
    [
        (f"modify_text('name', 'Bearer {KEY}')", KEY, "modify_text('name', 'Bearer [key]')"),
        (f"my_key_is_{KEY}_ok", KEY, "my_key_is_[key]_ok"),  # a long key is masked even inside a word
        ("modify_radio('grade', '1') and k", "1", "modify_radio('grade', '1') and k"),  # a short key: a placeholder
        ("modify_radio('x', 'on')", "on", "modify_radio('x', 'on')"),  # masking it would change the answer
        ("nothing to mask", "", "nothing to mask"),
        # Disguised: another case, a zero-width space or spaces between characters, literal \\u escapes.
        (f"say {KEY.upper()}!", KEY, "say [key]!"),
        (f"'{KEY[:5]}\u200b{KEY[5:]}'", KEY, "'[key]'"),
        (f"key: {' '.join(KEY)}.", KEY, "key: [key]."),
        ("".join(f"\\u{ord(c):04x}" for c in KEY) + " end", KEY, "[key] end"),
        ("".join(f"\\u{ord(c):04X}" for c in KEY.upper()), KEY, "[key]"),
        (f"{KEY[:-1]} is not it", KEY, f"{KEY[:-1]} is not it"),  # a part of the key is no key
        ("s k i p p i n g", "skipping", "[key]"),  # 8 characters: masked
        ("s k i p p e d", "skipped", "s k i p p e d"),  # 7: a placeholder, never masked
    ],
)
def test_an_answer_is_redacted_of_the_key_wherever_it_stands(text, key, kept):
    assert redact_answer(text, key) == kept


SEPARATORS = [" ", "\t", "\n", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e"]
KEYS = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=answers.LONG_KEY, max_size=40)
TEXT = st.text(
    alphabet=string.ascii_letters + string.digits + string.punctuation.replace("[", "") + "".join(SEPARATORS)
)


def normal(text: str) -> str:
    """What redaction compares: literal \\u escapes decoded, separators (whitespace, Cf) dropped, lower case."""
    decoded = re.sub(r"\\[uU]([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return "".join(c for c in decoded if not (c.isspace() or unicodedata.category(c) == "Cf")).lower()


@st.composite
def disguised(draw, key):
    """The key in another case, with separators between its characters and some of them as \\u escapes."""
    case = draw(st.sampled_from([str, str.upper, str.lower, str.swapcase]))
    out = []
    for index, c in enumerate(case(key)):
        if index:
            out.append("".join(draw(st.lists(st.sampled_from(SEPARATORS), max_size=3))))
        out.append(draw(st.sampled_from([c, f"\\u{ord(c):04x}", f"\\u{ord(c):04X}"])))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), key=KEYS, before=TEXT, after=TEXT)
def test_a_disguised_key_never_survives_redaction(data, key, before, after):
    text = before + data.draw(disguised(key)) + after
    kept = redact_answer(text, key)
    assert "[key]" in kept
    assert normal(key) not in normal(kept)


@settings(max_examples=300, deadline=None)
@given(key=KEYS, text=TEXT)
def test_text_without_the_key_is_unchanged(key, text):
    assume(normal(key) not in normal(text))
    assert redact_answer(text, key) == text


def test_a_long_answer_is_cut_at_the_cap_saying_how_much_was_cut():
    assert cut_answer("short") == "short"
    cut = cut_answer("x" * (MAX_ANSWER_CHARS + 7))
    assert cut.startswith("x" * MAX_ANSWER_CHARS + "\n[… 7 more characters cut")
    assert len(cut) < MAX_ANSWER_CHARS + 100


def test_the_client_masks_the_key_and_cuts_the_answer_before_it_is_returned_or_cached():
    cache = {}
    long_tail = "# " + "y" * (5 * 1024 * 1024)
    with standin_model(default=f"key:Bearer {{key}} and {{key}}\n{long_tail}") as model:
        endpoint = Endpoint(model.url, "m", KEY, max_reply_bytes=16 * 1024 * 1024)
        with ChatClient(endpoint, cache=cache) as client:
            fresh = client.complete(HELLO)
    assert fresh.text.startswith("Bearer [key] and [key]\n# yyy")
    assert KEY not in fresh.text
    assert len(fresh.text) <= MAX_ANSWER_CHARS + 100
    (stored,) = cache.values()
    assert stored["text"] == fresh.text
    # An answer cached before masking (an older run's row) comes back masked and cut too.
    stored["text"] = f"Bearer {KEY} " + "z" * (MAX_ANSWER_CHARS * 2)
    with ChatClient(Endpoint(model.url, "m", KEY), cache=cache) as client:
        again = client.complete(HELLO)
    assert again.cached
    assert again.text.startswith("Bearer [key] zzz")
    assert len(again.text) <= MAX_ANSWER_CHARS + 100
    assert len(KEY) >= answers.LONG_KEY


def test_every_option_is_listed_up_to_the_cap_and_the_prompt_says_how_many_more():
    countries = [(f"c{n}", f"Country {n}") for n in range(236)]
    listed = describe_fields([{"name": "country", "type": "select", "options": countries}])
    assert "'c235' (Country 235)" in listed
    assert "more not listed" not in listed
    many = [(f"v{n}", "") for n in range(MAX_OPTIONS + 120)]
    line = describe_fields([{"name": "city", "type": "select", "options": many}])
    assert f"'v{MAX_OPTIONS - 1}'" in line
    assert f"'v{MAX_OPTIONS}'" not in line
    assert line.endswith("… and 120 more not listed here: write the exact value you mean")


def test_an_instance_keeps_at_most_max_unapplied_entries_and_says_how_many_more():
    solver = LLMSolver(client=None)
    lines = [unapplied_entry(f"launch_rocket({n})", None, "not a call of the action library") for n in range(250)]
    solver.plan = PagePlan(Completion("…"), {}, [], {}, lines, leading_done=True)
    kept = solver.instance_unapplied()
    assert kept[:MAX_UNAPPLIED] == lines[:MAX_UNAPPLIED]
    assert kept[MAX_UNAPPLIED:] == [
        {
            "line": "",
            "field": None,
            "reason": f"and {250 - MAX_UNAPPLIED} more lines no field took (the whole answer has them)",
        }
    ]


ANSWER = "\n".join(
    [
        "Sure! Here is how I would fill it.",  # prose: nobody's error
        "modify_text('NAME', 'Ann')",  # upper-cased: the page has 'name'
        "modify_text('name', 'Ann')",
        "modify_radio('grade', '-1')",
        "modify_checkbox('tags', 'a|zz')",  # 'zz' is none of the group's values
        "modify_select('colour', 'blue')",  # not an option
        "modify_text('hidden_text', 'h')",  # not displayed at its turn
        "modify_text('nowhere', 'x')",  # no such field
        "launch_rocket(3)",  # a call-like line naming no field
        "That is all.",
    ]
)


@pytest.mark.browser
def test_every_call_not_applied_is_recorded_with_its_line_and_why_and_prose_is_no_error(tmp_path):
    dataset = form_dataset(tmp_path)
    task = dataset.task("Form task")
    driver = make_driver()
    try:
        with serve(dataset) as pages, standin_model(default=f"text:{ANSWER}") as model:
            client = ChatClient(Endpoint(model.url, "stand-in", KEY))
            result = run_solver(driver, LLMSolver(client), [task], pages.url, instances={task.name: [0]})
    finally:
        driver.quit()
    (instance,) = result.instances
    fields = {f.field: f for f in instance.fields}
    assert (fields["name"].prediction, fields["name"].error) == ("Ann", None)
    assert (fields["grade"].prediction, fields["grade"].error) == ("-1", None)
    assert "'zz' is not among the values of checkbox group 'tags' ('a', 'b', 'c')" in fields["tags"].error
    assert fields["tags"].prediction == ""  # refused whole: nothing clicked
    assert "modify_select('colour', 'blue') failed: ActionError" in fields["colour"].error
    assert sorted(name for name, f in fields.items() if f.error) == ["colour", "tags"]  # prose: no field's error
    by_line = {entry["line"]: entry for entry in instance.unapplied}
    assert set(by_line) == {
        "modify_text('NAME', 'Ann')",
        "modify_text('hidden_text', 'h')",
        "modify_text('nowhere', 'x')",
        "launch_rocket(3)",
    }
    assert by_line["modify_text('NAME', 'Ann')"] == {
        "line": "modify_text('NAME', 'Ann')",
        "field": "NAME",
        "reason": "unknown field 'NAME': the page has 'name' (names must match exactly, case included)",
    }
    assert "not displayed when its turn came" in by_line["modify_text('hidden_text', 'h')"]["reason"]
    assert "the page has no field of that name" in by_line["modify_text('nowhere', 'x')"]["reason"]
    assert "launch_rocket() is not a call of the action library" in by_line["launch_rocket(3)"]["reason"]


@pytest.mark.browser
def test_an_answer_of_prose_only_is_one_note_on_the_instance_and_no_field_s_error(tmp_path):
    dataset = form_dataset(tmp_path)
    task = dataset.task("Form task")
    driver = make_driver()
    try:
        with serve(dataset) as pages, standin_model(default="nonsense") as model:
            client = ChatClient(Endpoint(model.url, "stand-in", KEY))
            result = run_solver(driver, LLMSolver(client), [task], pages.url, instances={task.name: [0]})
    finally:
        driver.quit()
    (instance,) = result.instances
    assert not any(f.error for f in instance.fields)
    assert instance.unapplied == [
        {"line": "", "field": None, "reason": "the answer holds no call of the action library"}
    ]
