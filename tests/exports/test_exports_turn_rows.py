"""An export reads a recorded demo's turns as rows (``dataset.TurnRow``), not as ``Turn`` models: the values it
makes are the ones the models make, review's edits included; an imported demo among recorded ones, whose turns
re-curation reads as models (``changes.json``), comes out the same in any chunk."""

import io

import pytest
from django.core.management import call_command

from annotation.actions.exports.recuration import is_imported
from annotation.actions.exports.splits import selected_demos, split_of
from annotation.models import Demonstration, DemoReview, DemoStatus, Role, TurnCuration
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.mind2web_release import write_release
from workers.exports.dataset import TurnRow, export_demos, to_export_demo
from workers.exports.mind2web_steps import process_demo


def curate(demo) -> None:
    """Review's edits on ``demo``: the order reversed, a turn deleted, a chat text and a typed text edited, a
    screenshot marked invalid, another chosen, a target element chosen."""
    turns = list(demo.turns.order_by("timestamp", "seq"))
    chat = next(turn for turn in turns if turn.type == "chat")
    typed = next(turn for turn in turns if turn.intent == "textInput")
    clicks = [turn for turn in turns if turn.intent == "click"]
    DemoReview.objects.create(demonstration=demo, order=[turn.pk for turn in reversed(turns)])
    TurnCuration.objects.create(turn=turns[1], demonstration=demo, deleted=True)
    TurnCuration.objects.create(turn=chat, demonstration=demo, text='=HYPERLINK("x") <b>edited</b>')
    TurnCuration.objects.create(turn=typed, demonstration=demo, text="typed again")
    TurnCuration.objects.create(turn=clicks[0], demonstration=demo, valid=False, screenshot=clicks[1].screenshot_id)
    element = {**clicks[1].arguments["element"], "attributes": {"data-webtasks-id": "chosen"}}
    TurnCuration.objects.create(turn=clicks[1], demonstration=demo, element=element)


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["weblinx", "mind2web"])
def test_rows_make_the_values_models_make_with_imported_demos_among_them(alpha, tmp_path, media_storage, scheme):
    make_user("admin-m", alpha, Role.ADMIN)  # the importer
    release = write_release(tmp_path / "release")
    call_command("import_mind2web", str(release / "test_task.json"), "--project", "alpha", stdout=io.StringIO())
    recorded = ingest_corpus("alpha", demos=3, turns=24)
    Demonstration.objects.filter(project=alpha).update(status=DemoStatus.VALIDATED)  # the imported ones too
    curate(recorded[0])
    for demo in Demonstration.objects.filter(project=alpha):
        process_demo(demo)
    split = split_of(alpha, scheme)
    demos = list(selected_demos(alpha))
    assert len(demos) == 4
    assert [is_imported(demo) for demo in demos].count(True) == 1
    expected = [to_export_demo(demo, split(demo), scheme) for demo in demos]  # from Turn models
    for chunk in (1, 2, 20):
        assert list(export_demos(alpha, scheme, chunk=chunk)) == expected
    curated = next(value for value in expected if value.name == recorded[0].name)
    assert curated.turns[0].key == recorded[0].turns.order_by("-timestamp", "-seq")[0].client_id  # reversed
    assert "typed again" in [turn.arguments.get("text") for turn in curated.turns]
    assert "broken" in [turn.screenshot_status for turn in curated.turns]


@pytest.mark.django_db
def test_a_split_chosen_reads_only_its_demos_turns(alpha):
    demos = ingest_corpus("alpha", demos=4, turns=12)
    split = split_of(alpha, "weblinx")
    wanted = split(demos[0])
    values = list(export_demos(alpha, "weblinx", splits=[wanted], chunk=20))
    assert [value.name for value in values] == [demo.name for demo in demos if split(demo) == wanted]
    assert all(value.turns for value in values)
    assert TurnRow._fields[0] == "pk"  # what review's order and curations are keyed by
