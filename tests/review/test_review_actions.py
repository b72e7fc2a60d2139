"""Curation operations over the immutable capture: each is an edit with before/after, undoable, and what the
exporter reads (``export_timeline``) reflects it."""

import pytest

from annotation.actions import ActionError, Conflict, Forbidden, NotFound, ValidationFailed
from annotation.actions import review as actions
from annotation.models import DemoReview, DemoStatus, Edit, EditKind, Membership, Role, Turn, TurnType
from workers.exports.dataset import export_timeline


def revision(demo):
    review = DemoReview.objects.filter(pk=demo.pk).first()
    return review.revision if review else 0


def timeline(demo):
    demo.refresh_from_db()
    return export_timeline(demo)


def raw_turns(demo):
    return list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))


def first(demo, **filters):
    return Turn.objects.filter(demonstration=demo, **filters).order_by("timestamp", "seq").first()


def test_deleting_a_turn_drops_it_from_the_export_and_restoring_brings_it_back(demo, reviewer):
    turn = first(demo, intent="hover") or first(demo, type=TurnType.BROWSER)
    count = len(timeline(demo))
    actions.do_delete_turn(reviewer, demo, 0, turn.pk)
    exported = timeline(demo)
    assert len(exported) == count - 1
    assert turn.client_id not in [t.key for t in exported]
    assert [t.index for t in exported] == list(range(count - 1))
    actions.do_restore_turn(reviewer, demo, 1, turn.pk)
    assert turn.client_id in [t.key for t in timeline(demo)]
    assert demo.status == DemoStatus.IN_REVIEW  # the first edit puts a recorded demo in review


def test_every_edit_records_author_and_before_after_state(demo, reviewer):
    turn = first(demo, type=TurnType.CHAT)
    actions.do_edit_text(reviewer, demo, 0, turn.pk, "Fixed typo")
    edit = Edit.objects.get(demonstration=demo)
    assert (edit.author, edit.kind, edit.turn) == (reviewer, EditKind.EDIT_TEXT, turn)
    assert edit.before == {str(turn.pk): {"text": None}}
    assert edit.after == {str(turn.pk): {"text": "Fixed typo"}}
    assert edit.revision == 1 == revision(demo)


def test_edited_utterance_and_typed_text_are_exported(demo, reviewer):
    chat, typed = first(demo, type=TurnType.CHAT), first(demo, intent="textInput")
    actions.do_edit_text(reviewer, demo, 0, chat.pk, "Hello there")
    actions.do_edit_text(reviewer, demo, 1, typed.pk, "blue shoes")
    by_key = {t.key: t for t in timeline(demo)}
    assert by_key[chat.client_id].utterance == "Hello there"
    assert by_key[typed.client_id].arguments["text"] == "blue shoes"
    assert Turn.objects.get(pk=typed.pk).arguments.get("text") != "blue shoes"  # the raw capture is untouched


def test_text_of_a_click_cannot_be_edited(demo, reviewer):
    with pytest.raises(ValidationFailed):
        actions.do_edit_text(reviewer, demo, 0, first(demo, intent="click").pk, "x")


def test_moving_a_turn_reorders_the_export(demo, reviewer):
    turns = raw_turns(demo)
    actions.do_move_turn(reviewer, demo, 0, turns[3].pk, 0)
    keys = [t.key for t in timeline(demo)]
    assert keys[:4] == [turns[3].client_id, turns[0].client_id, turns[1].client_id, turns[2].client_id]


def test_an_invalid_turn_is_exported_with_a_broken_screenshot(demo, reviewer):
    turn = first(demo, type=TurnType.BROWSER)
    actions.do_set_validity(reviewer, demo, 0, turn.pk, False)
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot_status == "broken"
    actions.do_set_validity(reviewer, demo, 1, turn.pk, True)
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot_status == "good"


def test_choosing_a_frame_changes_the_exported_screenshot(demo, reviewer):
    turn = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    frame = turn.frames[0]["screenshot"]
    actions.do_choose_screenshot(reviewer, demo, 0, turn.pk, frame)
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot == frame
    with pytest.raises(ValidationFailed):
        actions.do_choose_screenshot(reviewer, demo, 1, turn.pk, "f" * 64)


def test_accepting_all_suggestions_applies_them_and_is_one_undoable_edit(demo, reviewer):
    from workers.review.realign import store_suggestions

    turn = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    store_suggestions(demo)
    edit = actions.do_accept_suggestions(reviewer, demo, 0)
    assert edit.after == {str(turn.pk): {"screenshot": turn.frames[1]["screenshot"]}}
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot == turn.frames[1]["screenshot"]
    actions.do_undo(reviewer, demo, 1, edit.pk)
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot == turn.screenshot_id


def test_metadata_edits_are_exported_and_undoable(demo, reviewer):
    from workers.exports.dataset import to_export_demo

    old = demo.task_description
    edit = actions.do_edit_metadata(reviewer, demo, 0, {"task_description": "Buy shoes", "websites": ["a.com"]})
    demo.refresh_from_db()
    assert to_export_demo(demo, "train").task_description == "Buy shoes"
    assert edit.before["task_description"] == old
    actions.do_undo(reviewer, demo, 1, edit.pk)
    demo.refresh_from_db()
    assert demo.task_description == old
    with pytest.raises(ValidationFailed):
        actions.do_edit_metadata(reviewer, demo, 2, {"status": "validated"})


def test_undo_restores_the_before_state_and_both_stay_in_history(demo, reviewer):
    turns = raw_turns(demo)
    keys = [t.key for t in timeline(demo)]
    move = actions.do_move_turn(reviewer, demo, 0, turns[5].pk, 1)
    delete = actions.do_delete_turn(reviewer, demo, 1, turns[2].pk)
    actions.do_undo(reviewer, demo, 2, delete.pk)
    actions.do_undo(reviewer, demo, 3, move.pk)
    assert [t.key for t in timeline(demo)] == keys
    assert Edit.objects.filter(demonstration=demo).count() == 4
    assert Edit.objects.filter(undoes=move).exists()
    with pytest.raises(Conflict):
        actions.do_undo(reviewer, demo, 4, move.pk)


def test_a_stale_revision_is_a_conflict_naming_who_changed_what(demo, reviewer, alpha):
    from tests.support.actors import make_user

    second = make_user("second", alpha, Role.REVIEWER)
    turn = first(demo, type=TurnType.CHAT)
    actions.do_edit_text(reviewer, demo, 0, turn.pk, "mine")
    with pytest.raises(Conflict) as error:
        actions.do_edit_text(second, demo, 0, turn.pk, "theirs")
    assert "reviewer" in error.value.detail
    assert "edit text" in error.value.detail
    assert {t.key: t for t in timeline(demo)}[turn.client_id].utterance == "mine"


def test_annotators_and_researchers_cannot_curate(demo, owner, researcher):
    turn = first(demo, type=TurnType.CHAT)
    for user in (owner, researcher):
        with pytest.raises(Forbidden):
            actions.do_delete_turn(user, demo, 0, turn.pk)
    assert not Edit.objects.exists()


def test_annotators_see_only_their_own_demos_and_outsiders_none(demo, owner, outsider, reviewer, researcher):
    for user in (owner, outsider):
        with pytest.raises(NotFound):
            actions.check_demo_reviewable(user, demo.name)
    for user in (reviewer, researcher, demo.navigator):
        assert actions.check_demo_reviewable(user, demo.name) == demo


def test_validate_reject_return_and_resubmit(demo, reviewer):
    actions.do_transition(reviewer, demo, 0, "return", comment="Please redo the last step")
    assert demo.status == DemoStatus.RETURNED
    assert demo.comments.get().text == "Please redo the last step"
    actions.do_transition(demo.navigator, demo, 1, "resubmit")
    actions.do_transition(reviewer, demo, 2, "start_review")
    actions.do_transition(reviewer, demo, 3, "reject")
    assert demo.status == DemoStatus.REJECTED
    with pytest.raises(Conflict):
        actions.do_delete_turn(reviewer, demo, 4, first(demo).pk)  # decided demos must be reopened first
    actions.do_transition(reviewer, demo, 4, "reopen")
    actions.do_transition(reviewer, demo, 5, "validate")
    assert demo.status == DemoStatus.VALIDATED


def test_annotator_cannot_validate_and_navigator_cannot_validate_own_demo(demo, owner):
    with pytest.raises(Forbidden):
        actions.do_transition(owner, demo, 0, "validate")
    Membership.objects.filter(user=demo.navigator).update(role=Role.REVIEWER)
    with pytest.raises(Forbidden) as error:
        actions.do_transition(demo.navigator, demo, 0, "validate")
    assert "navigated" in error.value.detail
    actions.do_transition(demo.navigator, demo, 0, "reject")  # may reject, not validate


def test_the_instructor_of_a_chat_demo_cannot_validate_it_either(demo, alpha):
    from tests.support.actors import make_user

    rita = make_user("rita", alpha, Role.REVIEWER)
    demo.instructor = rita
    demo.save(update_fields=["instructor"])
    with pytest.raises(Forbidden) as error:
        actions.do_transition(rita, demo, 0, "validate")
    assert "you instructed this demo" in error.value.detail
    actions.do_transition(make_user("second", alpha, Role.REVIEWER), demo, 0, "validate")
    assert demo.status == DemoStatus.VALIDATED


def test_unsure_mark_needs_a_second_reviewer(demo, reviewer, alpha):
    from tests.support.actors import make_user

    actions.do_set_unsure(reviewer, demo, 0, True)
    with pytest.raises(Forbidden):
        actions.do_transition(reviewer, demo, 1, "validate")
    actions.do_transition(make_user("second", alpha, Role.REVIEWER), demo, 1, "validate")
    assert demo.status == DemoStatus.VALIDATED


def test_comments_are_pinned_to_turns(demo, reviewer, owner):
    turn = first(demo)
    comment = actions.do_comment(reviewer, demo, 0, "Stray hover?", turn.pk)
    assert comment.turn == turn
    with pytest.raises(Forbidden):
        actions.do_comment(owner, demo, 1, "hi")
    with pytest.raises(ValidationFailed):
        actions.do_comment(reviewer, demo, 1, "  ")


def test_bad_input_is_refused(demo, reviewer):
    with pytest.raises(ValidationFailed):
        actions.do_delete_turn(reviewer, demo, "1", first(demo).pk)
    with pytest.raises(NotFound):
        actions.do_delete_turn(reviewer, demo, 0, 10**9)
    with pytest.raises(ValidationFailed):
        actions.do_transition(reviewer, demo, 0, "publish")
    assert issubclass(Conflict, ActionError)


# --- Undo never overwrites a later edit ---------------------------------------------------------------


def test_undo_is_refused_when_a_later_edit_changed_the_same_text(demo, reviewer, alpha):
    from tests.support.actors import make_user

    second = make_user("second", alpha, Role.REVIEWER)
    turn = first(demo, type=TurnType.CHAT)
    mine = actions.do_edit_text(reviewer, demo, 0, turn.pk, "mine")
    theirs = actions.do_edit_text(second, demo, 1, turn.pk, "theirs")
    with pytest.raises(Conflict) as error:
        actions.do_undo(reviewer, demo, 2, mine.pk)
    detail = error.value.detail
    assert f"edit #{theirs.pk}" in detail
    assert "second" in detail
    assert "edit text" in detail
    assert f"text of turn {turn.seq}" in detail
    assert error.value.errors[0]["blocked_by"] == theirs.pk
    assert {t.key: t for t in timeline(demo)}[turn.client_id].utterance == "theirs"  # not overwritten
    assert revision(demo) == 2  # nothing recorded
    actions.do_undo(reviewer, demo, 2, theirs.pk)  # undo the later one first, then the earlier one
    actions.do_undo(reviewer, demo, 3, mine.pk)
    assert {t.key: t for t in timeline(demo)}[turn.client_id].utterance == turn.utterance


def test_undo_is_allowed_when_later_edits_changed_other_things(demo, reviewer):
    turns = raw_turns(demo)
    delete = actions.do_delete_turn(reviewer, demo, 0, turns[2].pk)
    actions.do_set_validity(reviewer, demo, 1, turns[2].pk, False)  # same turn, another field
    actions.do_delete_turn(reviewer, demo, 2, turns[3].pk)  # another turn
    actions.do_move_turn(reviewer, demo, 3, turns[5].pk, 0)  # the order is not a turn's state
    actions.do_undo(reviewer, demo, 4, delete.pk)
    assert turns[2].client_id in [t.key for t in timeline(demo)]


def test_undo_of_a_reorder_is_refused_after_a_later_reorder(demo, reviewer):
    turns = raw_turns(demo)
    first_move = actions.do_move_turn(reviewer, demo, 0, turns[3].pk, 0)
    second_move = actions.do_move_turn(reviewer, demo, 1, turns[6].pk, 1)
    with pytest.raises(Conflict) as error:
        actions.do_undo(reviewer, demo, 2, first_move.pk)
    assert "turn order" in error.value.detail
    assert f"#{second_move.pk}" in error.value.detail
    assert [t.key for t in timeline(demo)][:2] == [turns[3].client_id, turns[6].client_id]
    actions.do_undo(reviewer, demo, 2, second_move.pk)
    actions.do_undo(reviewer, demo, 3, first_move.pk)
    assert [t.key for t in timeline(demo)][:4] == [t.client_id for t in turns[:4]]


def test_undo_is_allowed_when_a_later_edit_was_itself_undone(demo, reviewer):
    turn = first(demo, type=TurnType.BROWSER)
    delete = actions.do_delete_turn(reviewer, demo, 0, turn.pk)
    restore = actions.do_restore_turn(reviewer, demo, 1, turn.pk)
    with pytest.raises(Conflict):
        actions.do_undo(reviewer, demo, 2, delete.pk)
    actions.do_undo(reviewer, demo, 2, restore.pk)  # deleted again: delete's after-state holds once more
    actions.do_undo(reviewer, demo, 3, delete.pk)
    assert turn.client_id in [t.key for t in timeline(demo)]


def test_undo_of_metadata_is_refused_after_a_later_change_of_the_same_field(demo, reviewer):
    edit = actions.do_edit_metadata(reviewer, demo, 0, {"task_description": "Buy shoes", "region": "Europe"})
    later = actions.do_edit_metadata(reviewer, demo, 1, {"region": "Asia"})
    with pytest.raises(Conflict) as error:
        actions.do_undo(reviewer, demo, 2, edit.pk)
    assert "the region" in error.value.detail
    assert f"#{later.pk}" in error.value.detail
    demo.refresh_from_db()
    assert (demo.task_description, demo.region) == ("Buy shoes", "Asia")


def test_undo_conflict_over_http_is_409_naming_the_later_edit(demo, reviewer, client):
    import json

    turn = first(demo, type=TurnType.BROWSER)
    delete = actions.do_delete_turn(reviewer, demo, 0, turn.pk)
    restore = actions.do_restore_turn(reviewer, demo, 1, turn.pk)
    client.force_login(reviewer)
    response = client.post(
        f"/review/{demo.name}/edit",
        json.dumps({"op": "undo", "revision": 2, "edit": delete.pk}),
        content_type="application/json",
    )
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "conflict"
    assert f"edit #{restore.pk}" in body["detail"]
    assert "reviewer" in body["detail"]
    assert body["errors"][0]["blocked_by"] == restore.pk


def test_undo_of_accepted_suggestions_is_refused_after_one_of_those_screenshots_was_changed(demo, reviewer):
    from workers.review.realign import store_suggestions

    turn = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    store_suggestions(demo)
    accept = actions.do_accept_suggestions(reviewer, demo, 0)
    choose = actions.do_choose_screenshot(reviewer, demo, 1, turn.pk, turn.frames[0]["screenshot"])
    with pytest.raises(Conflict) as error:
        actions.do_undo(reviewer, demo, 2, accept.pk)
    assert f"chosen screenshot of turn {turn.seq}" in error.value.detail
    assert f"#{choose.pk}" in error.value.detail
    assert {t.key: t for t in timeline(demo)}[turn.client_id].screenshot == turn.frames[0]["screenshot"]
