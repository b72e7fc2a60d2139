"""A curated demo exported in WebLINX format loads with the official ``weblinx`` package and shows the curation,
and the export's query count stays constant with curation rows."""

import hashlib

import weblinx
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.actions import review as actions
from annotation.models import DemoStatus, Turn, TurnType
from tests.support.review_data import recorded_demo
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters.weblinx import WeblinxExporter


def curate(demo, reviewer):
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    chat = next(t for t in turns if t.type == TurnType.CHAT and t.utterance)
    typed = next(t for t in turns if t.intent == "textInput")
    hover = next(t for t in turns if t.type == TurnType.BROWSER and t.pk not in (typed.pk,) and t.intent != "load")
    invalid = next(t for t in turns if t.intent == "click")
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    steps = [
        lambda r: actions.do_delete_turn(reviewer, demo, r, hover.pk),
        lambda r: actions.do_edit_text(reviewer, demo, r, chat.pk, "Curated utterance"),
        lambda r: actions.do_edit_text(reviewer, demo, r, typed.pk, "curated typing"),
        lambda r: actions.do_set_validity(reviewer, demo, r, invalid.pk, False),
        lambda r: actions.do_choose_screenshot(reviewer, demo, r, framed.pk, framed.frames[0]["screenshot"]),
        lambda r: actions.do_move_turn(reviewer, demo, r, turns[3].pk, 2),
        lambda r: actions.do_transition(reviewer, demo, r, "validate"),
    ]
    for revision, step in enumerate(steps):
        step(revision)
    return {"chat": chat, "typed": typed, "deleted": hover, "invalid": invalid, "framed": framed}


def test_a_curated_demo_loads_with_the_weblinx_package(alpha, reviewer, tmp_path):
    demo = recorded_demo()
    curated = curate(demo, reviewer)
    assert demo.status == DemoStatus.VALIDATED
    WeblinxExporter().export(export_demos(alpha, "weblinx"), tmp_path, storage_blobs())
    replay = weblinx.Replay.from_demonstration(weblinx.Demonstration(demo.name, str(tmp_path / "demonstrations")))
    assert replay.validate_turns()
    assert len(replay) == Turn.objects.filter(demonstration=demo).count() - 1
    utterances = [turn.get("utterance") for turn in replay if turn.type == "chat"]
    assert "Curated utterance" in utterances
    texts = [turn.args.get("text") for turn in replay if turn.intent == "textInput"]
    assert "curated typing" in texts
    statuses = [turn.get_screenshot_status() for turn in replay if turn.type == "browser"]
    assert "broken" in statuses
    last = replay[len(replay) - 1]
    with open(last.get_screenshot_path(), "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == curated["framed"].frames[0]["screenshot"]


def test_export_queries_do_not_grow_with_curated_demos(alpha, reviewer):
    def queries():
        with CaptureQueriesContext(connection) as captured:
            list(export_demos(alpha, "weblinx"))
        return len(captured)

    first = recorded_demo(seed=1)
    actions.do_delete_turn(reviewer, first, 0, Turn.objects.filter(demonstration=first).first().pk)
    actions.do_transition(reviewer, first, 1, "validate")
    queries()  # the first export creates the project's split configuration
    one = queries()
    for seed in (2, 3):
        demo = recorded_demo(seed=seed)
        actions.do_move_turn(reviewer, demo, 0, Turn.objects.filter(demonstration=demo).last().pk, 0)
        actions.do_transition(reviewer, demo, 1, "validate")
    assert queries() == one
