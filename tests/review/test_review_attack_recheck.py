"""Hostile retarget, undo and redo sequences against the cached quality issues (``DemoReview.quality``, re-checked
per retargeted turn by ``recheck_targets``): after any sequence the stored list is the one a full recomputation on
the curated targets gives; a turn whose page or bboxes blob is gone does not stop an undo or a retarget back."""

import contextlib
import threading
from importlib import import_module

import pytest
from django.apps import apps
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.actions.recordings.late import forget_review_caches
from annotation.actions.review import ensure_quality, review_of
from annotation.actions.review.background import curated_elements
from annotation.lib.quality import quality_issues
from annotation.models import DemoReview, DemoStatus, Edit, Role, Turn, TurnCuration
from annotation.store.blobstore import read_blob, sha256_path
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.review_data import acting, post_edit, uid_missing_demo


@pytest.fixture
def recorded(db, media_storage):
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=16, seed=5, status=DemoStatus.RECORDED)[0]
    return demo, make_user("ana", demo.project, Role.REVIEWER)


def timeline(demo) -> list:
    return list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))


def fresh(demo) -> list:
    return quality_issues(timeline(demo), read_blob, curated_elements(demo))


def stored(demo) -> list:
    return DemoReview.objects.get(demonstration=demo).quality


@contextlib.contextmanager
def first_view_held(demo):
    """The demo's issues first computed in another thread (as by the first view or the realign worker), its first
    blob read held until the block has run; the thread is done after the block."""
    reading, go_on = threading.Event(), threading.Event()

    def gated(sha):
        reading.set()
        go_on.wait(timeout=60)
        return read_blob(sha)

    def first_view():
        try:
            ensure_quality(demo, review_of(demo), timeline(demo), gated)
        finally:
            connection.close()

    viewer = threading.Thread(target=first_view)
    viewer.start()
    assert reading.wait(timeout=60)
    try:
        yield
    finally:
        go_on.set()
        viewer.join()


def uids(client, demo, turn) -> list:
    answer = client.get(f"/review/{demo.name}/turns/{turn.pk}/elements")
    assert answer.status_code == 200, answer.content
    return [element["uid"] for element in answer.json()["elements"]]


def test_random_retarget_undo_and_redo_sequences_keep_the_stored_issues_a_full_recomputation(client, recorded):
    demo, ana = recorded
    client.force_login(ana)
    assert client.get(f"/review/{demo.name}/").status_code == 200  # the issues computed and cached
    turns = acting(demo)[:6]
    choices = {turn.pk: [turn.element_uid, *uids(client, demo, turn)[:6], "not-on-the-page"] for turn in turns}
    step = st.one_of(
        st.tuples(st.just("retarget"), st.sampled_from(turns), st.integers(0, 7)),
        st.tuples(st.just("undo"), st.integers(0, 50), st.just(0)),
    )

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(step, min_size=1, max_size=8))
    def sequence(steps):
        for op, what, index in steps:
            if op == "retarget":
                options = choices[what.pk]
                answer = post_edit(client, demo, op="retarget", turn=what.pk, element=options[index % len(options)])
            else:
                edits = list(Edit.objects.filter(demonstration=demo).order_by("pk").values_list("pk", flat=True))
                if not edits:
                    continue
                answer = post_edit(client, demo, op="undo", edit=edits[what % len(edits)])
            assert answer.status_code < 500, answer.content
            assert stored(demo) == fresh(demo), steps

    sequence()
    assert Edit.objects.filter(demonstration=demo, kind="retarget").exists()


SPOILED = {"gone": None, "binary": b"\xff\xfe\x00" * 50_000, "deep": b"[" * 200_000, "list": b"[1, 2]"}


@pytest.mark.parametrize("how", list(SPOILED))
@pytest.mark.parametrize("blob", ["page", "bboxes"])
def test_an_undo_or_a_retarget_back_on_a_turn_whose_blob_is_gone_is_not_refused(client, recorded, blob, how):
    demo, ana = recorded
    client.force_login(ana)
    assert client.get(f"/review/{demo.name}/").status_code == 200
    turn = acting(demo)[0]
    other = next(uid for uid in uids(client, demo, turn) if uid != turn.element_uid)
    made = post_edit(client, demo, op="retarget", turn=turn.pk, element=other)
    assert made.status_code == 200, made.content
    path = sha256_path(getattr(turn, f"{blob}_id"))
    default_storage.delete(path)  # lost from the store since, or spoiled
    if SPOILED[how] is not None:
        default_storage.save(path, ContentFile(SPOILED[how]))

    undone = post_edit(client, demo, op="undo", edit=made.json()["id"])
    assert undone.status_code == 200, undone.content
    assert TurnCuration.objects.get(turn=turn).element is None
    redone = post_edit(client, demo, op="undo", edit=undone.json()["id"])
    assert redone.status_code == 200, redone.content
    back = post_edit(client, demo, op="retarget", turn=turn.pk, element=turn.element_uid)
    assert back.status_code == 200, back.content
    assert TurnCuration.objects.get(turn=turn).element is None
    assert client.get(f"/review/{demo.name}/").status_code == 200
    picker = client.get(f"/review/{demo.name}/turns/{turn.pk}/elements")  # nothing to pick without the page
    assert picker.status_code == 200, picker.content
    refused = post_edit(client, demo, op="retarget", turn=turn.pk, element=other)
    assert refused.status_code == 400, refused.content  # no element with a box to choose
    DemoReview.objects.filter(demonstration=demo).update(quality=None)
    assert client.get(f"/review/{demo.name}/").status_code == 200  # the checks computed again without the blob
    assert stored(demo) == fresh(demo)


def test_issues_cached_on_the_recorded_targets_before_the_checks_read_retargets_are_computed_again(
    client, db, media_storage
):
    """A review whose issues were cached while the checks still read the recorded element (before 0044's release),
    its turn retargeted since, shows the issues of the curated target after the migration (they were stale for
    good: a re-check of another turn keeps the other turns' cached uid_missing)."""
    demo, turn = uid_missing_demo()
    client.force_login(make_user("ana", demo.project, Role.REVIEWER))
    chosen = next(uid for uid in uids(client, demo, turn) if uid != turn.element_uid)
    assert post_edit(client, demo, op="retarget", turn=turn.pk, element=chosen).status_code == 200
    old = quality_issues(timeline(demo), read_blob)  # as the release before cached them: on the recorded element
    DemoReview.objects.filter(demonstration=demo).update(quality=old)
    assert any(i["turn"] == turn.pk and i["check"] == "uid_missing" for i in old)

    import_module("annotation.migrations.0046_recheck_retargeted").forget_retargeted_quality(apps, None)
    assert client.get(f"/review/{demo.name}/").status_code == 200
    assert stored(demo) == fresh(demo)
    assert not any(i["turn"] == turn.pk and i["check"] == "uid_missing" for i in stored(demo))


@pytest.mark.django_db(transaction=True)
def test_a_retarget_while_the_issues_are_first_computed_is_not_lost(client, media_storage):
    """The first view (or the realign worker) computes the issues reading every blob; a reviewer retargets a turn
    meanwhile (nothing cached yet, so nothing re-checked): the issues written at the end are those of the curated
    targets, not of the ones read before the retarget."""
    demo, turn = uid_missing_demo()
    client.force_login(make_user("ana", demo.project, Role.REVIEWER))
    chosen = next(uid for uid in uids(client, demo, turn) if uid != turn.element_uid)
    with first_view_held(demo):  # its first blob read waits until the retarget is committed
        made = post_edit(client, demo, op="retarget", turn=turn.pk, element=chosen)
    assert made.status_code == 200, made.content
    assert stored(demo) == fresh(demo)
    assert not any(i["turn"] == turn.pk and i["check"] == "uid_missing" for i in stored(demo))


BAD_RETARGETS = [
    {"turn": "1x", "element": "a"},
    {"turn": 1.5, "element": "a"},
    {"turn": True, "element": "a"},
    {"turn": [1], "element": "a"},
    {"turn": {"id": 1}, "element": "a"},
    {"turn": 2**70, "element": "a"},
    {"turn": -1, "element": "a"},
    {"element": "a"},
    {"turn": "TURN", "element": {"attributes": {"data-webtasks-id": "x"}}},
    {"turn": "TURN", "element": "x" * 2_000_000},
    {"turn": "TURN", "element": "a\x00b"},
    {"turn": "TURN", "element": "\ud800"},
    {"turn": "TURN", "element": 1e308},
]


def test_a_retarget_with_a_bad_body_is_a_4xx_and_changes_nothing(client, recorded):
    demo, ana = recorded
    client.force_login(ana)
    assert client.get(f"/review/{demo.name}/").status_code == 200
    before = stored(demo)
    turn = acting(demo)[0]
    url = f"/review/{demo.name}/edit"
    for raw in (b"{", b"[]", b'"retarget"', b"\x00", b'{"op": "retarget", "turn": NaN}', b"\xff\xfe"):
        answer = client.post(url, raw, content_type="application/json")
        assert 400 <= answer.status_code < 500, raw
    for body in BAD_RETARGETS:
        sent = {key: (turn.pk if value == "TURN" else value) for key, value in body.items()}
        answer = post_edit(client, demo, op="retarget", **sent)
        assert 400 <= answer.status_code < 500, (str(body)[:80], answer.status_code)
    assert not Edit.objects.filter(demonstration=demo).exists()
    assert stored(demo) == before


def test_another_projects_edit_or_turn_is_not_undone_nor_retargeted_from_this_demo(client, recorded):
    demo, ana = recorded
    other = ingest_corpus(project="beta", demos=1, turns=24, elements=16, seed=6, status=DemoStatus.RECORDED)[0]
    bob = make_user("bob", other.project, Role.REVIEWER)
    client.force_login(bob)
    assert client.get(f"/review/{other.name}/").status_code == 200
    theirs = acting(other)[0]
    made = post_edit(client, other, op="retarget", turn=theirs.pk, element=uids(client, other, theirs)[2])
    assert made.status_code == 200, made.content
    their_quality, their_element = stored(other), TurnCuration.objects.get(turn=theirs).element

    client.force_login(ana)
    mine = acting(demo)[0]
    for body in (
        {"op": "undo", "edit": made.json()["id"]},
        {"op": "retarget", "turn": theirs.pk, "element": theirs.element_uid},
        {"op": "retarget", "turn": mine.pk, "element": their_element["attributes"]["data-webtasks-id"]},
    ):
        answer = post_edit(client, demo, **body)
        assert answer.status_code in (400, 404), (body, answer.content)
        assert other.name not in answer.content.decode()
    assert client.get(f"/review/{demo.name}/turns/{theirs.pk}/elements").status_code == 404
    assert client.get(f"/review/{other.name}/turns/{theirs.pk}/elements").status_code == 404
    assert (stored(other), TurnCuration.objects.get(turn=theirs).element) == (their_quality, their_element)
    assert stored(other) == fresh(other)


@pytest.mark.django_db(transaction=True)
def test_issues_computed_while_a_late_turn_came_are_not_cached(media_storage):
    """A late turn arrives (its caches forgotten, the worker to compute them again) while the first view reads the
    blobs: what that view computed on the turns before it is not written over the forgotten cache."""
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=16, seed=5, status=DemoStatus.RECORDED)[0]
    with first_view_held(demo), transaction.atomic():
        # as a late chat turn is taken: the turn, then the review's caches forgotten
        late = Turn.objects.filter(demonstration=demo, type="chat").order_by("-seq").first()
        last = Turn.objects.filter(demonstration=demo).order_by("-seq").first()
        late.pk, late.seq, late.client_id, late.utterance = None, last.seq + 1, "late-chat", " "
        late.timestamp, late._state.adding = last.timestamp, True  # a new row copied from the chat turn
        late.save()
        forget_review_caches(demo)
    assert stored(demo) in (None, fresh(demo))
