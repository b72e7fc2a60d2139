"""The Mind2Web export's processed steps: made once when a demo is validated (by the real worker), used by the export
when their key matches, and never written stale: an export is byte for byte the one computed on the fly."""

import filecmp

import pytest

from annotation.actions import review as actions
from annotation.models import DemoStatus, Mind2WebStep, Turn
from tests.support.corpus import ingest_corpus
from tests.support.waits import wait_until
from workers.exports.dataset import export_demos, storage_blobs, to_export_demo
from workers.exports.exporters.mind2web import Mind2WebExporter, is_step, step_key
from workers.exports.mind2web_steps import process_demo

STATUSES = (DemoStatus.VALIDATED, DemoStatus.IN_REVIEW)


def export(project, out):
    with storage_blobs() as blobs:
        counts = Mind2WebExporter().export(export_demos(project, "mind2web", STATUSES), out, blobs)
    assert counts.turns > 0
    return out


def on_the_fly(project, out):
    """The export with no processed step stored, the processed ones put back after."""
    kept = list(Mind2WebStep.objects.filter(demonstration__project=project))
    Mind2WebStep.objects.filter(pk__in=[row.pk for row in kept]).delete()
    export(project, out)
    Mind2WebStep.objects.bulk_create(kept)
    return out


def same_files(first, second) -> None:
    names = sorted(path.name for path in first.iterdir() if path.is_file())
    assert names == sorted(path.name for path in second.iterdir() if path.is_file())
    match, mismatch, errors = filecmp.cmpfiles(first, second, names, shallow=False)
    assert (mismatch, errors) == ([], [])


@pytest.fixture
def corpus(alpha):
    demos = ingest_corpus(project="alpha", demos=4, turns=24, elements=60, seed=11)
    return demos[0].project, demos


def test_the_export_of_processed_steps_is_byte_for_byte_the_one_made_on_the_fly(corpus, tmp_path):
    project, demos = corpus
    before = export(project, tmp_path / "before")
    assert sum(process_demo(demo) for demo in demos) > 0
    assert sum(process_demo(demo) for demo in demos) == 0  # stored already: nothing done twice
    same_files(export(project, tmp_path / "processed"), before)
    same_files(on_the_fly(project, tmp_path / "again"), before)


def test_the_export_uses_a_stored_step_whose_key_matches(corpus, tmp_path):
    project, demos = corpus
    for demo in demos:
        process_demo(demo)
    row = Mind2WebStep.objects.filter(demonstration__project=project, skipped=False).first()
    Mind2WebStep.objects.filter(pk=row.pk).update(action_repr="[marked]  stored -> CLICK")
    text = (export(project, tmp_path / "out") / "train.json").read_text() + "".join(
        (tmp_path / "out" / f"{name}.json").read_text() for name in ("test_task", "test_website", "test_domain")
    )
    assert "[marked]  stored -> CLICK" in text


def step_turns(demo, intent):
    return [t for t in Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq") if t.intent == intent]


def test_a_demo_edited_after_processing_exports_as_on_the_fly(corpus, reviewer, tmp_path):
    project, demos = corpus
    for demo in demos:
        process_demo(demo)
    demo = demos[0]
    actions.do_transition(reviewer, demo, 0, "reopen")
    actions.do_delete_turn(reviewer, demo, 1, step_turns(demo, "click")[0].pk)
    actions.do_edit_text(reviewer, demo, 2, step_turns(demo, "textInput")[0].pk, "edited in review")
    Turn.objects.filter(pk=step_turns(demos[1], "click")[0].pk).update(bboxes=None)  # its page part changes
    processed = export(project, tmp_path / "processed")
    assert "edited in review" in "".join(path.read_text() for path in processed.glob("*.json"))
    same_files(processed, on_the_fly(project, tmp_path / "fly"))
    actions.do_transition(reviewer, demo, 3, "validate")
    process_demo(demo)  # as the worker does once validated: processing again drops the steps the demo no longer has
    value = to_export_demo(demo, "train", "mind2web")
    wanted = {step_key(value, turn) for turn in value.turns if is_step(turn)}
    assert set(Mind2WebStep.objects.filter(demonstration=demo).values_list("key", flat=True)) == wanted
    same_files(export(project, tmp_path / "reprocessed"), processed)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_validating_a_demo_has_the_worker_process_its_steps(alpha, reviewer, worker, tmp_path):
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=60, seed=3, status=DemoStatus.IN_REVIEW)[0]
    before = export(demo.project, tmp_path / "before")
    actions.do_transition(reviewer, demo, 0, "validate")
    wait_until(lambda: Mind2WebStep.objects.filter(demonstration=demo).exists(), timeout=60, message="steps stored")
    same_files(export(demo.project, tmp_path / "processed"), before)


@pytest.mark.django_db
def test_stored_steps_are_compressed_with_lz4_where_postgresql_has_it():
    """The export reads every stored step back: the column holding their pages is lz4 (a third faster to read than
    pglz) on a PostgreSQL server built with it; other databases keep the column as it was."""
    from django.db import connection

    if connection.vendor != "postgresql":
        columns = connection.introspection.get_table_description(connection.cursor(), Mind2WebStep._meta.db_table)
        assert "action" in [column.name for column in columns]
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        assert "lz4" in cursor.fetchone()[0], "this PostgreSQL has no lz4: the migration leaves pglz"
        cursor.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'action'",
            [Mind2WebStep._meta.db_table],
        )
        assert cursor.fetchone()[0] == "l"
