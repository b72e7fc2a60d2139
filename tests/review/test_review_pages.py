"""The review pages and endpoints: who sees what, the JSON write endpoint (403, 404, 409), the sandboxed page
HTML, thumbnails, and a review page whose query count does not grow with the number of turns."""

import json

from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import DemoReview, DemoStatus, Edit, Turn, TurnType
from tests.support.review_data import recorded_demo
from workers.exports.dataset import export_timeline


def signed_in(client, user):
    client.force_login(user)
    return client


def post(client, demo, **body):
    return client.post(f"/review/{demo.name}/edit", json.dumps(body), content_type="application/json")


def chat_turn(demo):
    return Turn.objects.filter(demonstration=demo, type=TurnType.CHAT).order_by("seq").first()


def test_the_list_shows_demos_with_counts_and_filters(client, reviewer, demo):
    response = signed_in(client, reviewer).get("/review/")
    assert response.status_code == 200
    assert demo.name in response.text
    assert 'data-status="recorded"' in response.text
    assert demo.name in client.get("/review/", {"status": "recorded", "project": "alpha"}).text
    assert demo.name not in client.get("/review/", {"status": "validated"}).text
    assert demo.name not in client.get("/review/", {"q": "no such task text"}).text
    assert demo.name in client.get("/review/", {"website": demo.websites[0], "since": "2000-01-01"}).text
    assert demo.name not in client.get("/review/", {"annotator": "somebody-else"}).text
    assert demo.name not in client.get("/review/", {"website": "nowhere.example"}).text
    assert demo.name in client.get("/review/", {"category": demo.category, "annotator": "synth-navigator"}).text
    assert demo.name not in client.get("/review/", {"until": "2000-01-01"}).text
    assert "unsure</span>" not in client.get("/review/").text
    post(client, demo, op="set_unsure", revision=0, unsure=True)
    assert "unsure</span>" in client.get("/review/").text
    assert demo.name in client.get("/review/", {"q": demo.task_description.split()[1]}).text


def test_the_list_paginates_with_constant_queries(client, reviewer, alpha):
    from tests.support.corpus import ingest_corpus

    ingest_corpus(project="alpha", demos=2, turns=6, elements=30, seed=3, status=DemoStatus.RECORDED)
    signed_in(client, reviewer)
    with CaptureQueriesContext(connection) as few:
        client.get("/review/")
    ingest_corpus(project="alpha", demos=28, turns=6, elements=30, seed=4, status=DemoStatus.RECORDED)
    with CaptureQueriesContext(connection) as many:
        response = client.get("/review/")
    assert len(many) == len(few)
    assert response.text.count("<tr data-name=") == 25
    assert "page 1 of 2 (30 demos)" in response.text
    assert client.get("/review/", {"page": 2}).text.count("<tr data-name=") == 5


def test_the_list_requires_sign_in_and_hides_other_projects(client, outsider, demo):
    assert client.get("/review/").status_code == 302
    assert demo.name not in signed_in(client, outsider).get("/review/").text


def test_the_review_page_shows_timeline_quality_and_workflow(client, reviewer, demo):
    response = signed_in(client, reviewer).get(f"/review/{demo.name}/")
    assert response.status_code == 200
    text = response.text
    turns = Turn.objects.filter(demonstration=demo).count()
    assert text.count('class="turn ') == turns
    assert 'id="btn-validate"' in text
    assert 'id="quality"' in text
    assert DemoReview.objects.get(pk=demo.pk).quality is not None  # computed once, cached


def test_outsider_gets_404_everywhere(client, outsider, demo):
    signed_in(client, outsider)
    turn = chat_turn(demo)
    assert client.get(f"/review/{demo.name}/").status_code == 404
    response = post(client, demo, op="delete", revision=0, turn=turn.pk)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert client.get(f"/review/{demo.name}/turns/{turn.pk}/page").status_code == 404
    sha = Turn.objects.exclude(screenshot=None).first().screenshot_id
    assert client.get(f"/review/thumbs/{sha}").status_code == 404


def test_annotator_who_did_not_record_gets_404_and_researcher_reads_only(client, owner, researcher, demo):
    assert signed_in(client, owner).get(f"/review/{demo.name}/").status_code == 404
    page = signed_in(client, researcher).get(f"/review/{demo.name}/")
    assert page.status_code == 200
    assert 'id="btn-validate"' not in page.text
    response = post(client, demo, op="transition", revision=0, action="validate")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_the_navigator_sees_their_demo_and_comments_but_cannot_validate(client, reviewer, demo):
    turn = chat_turn(demo)
    signed_in(client, reviewer)
    assert post(client, demo, op="comment", revision=0, text="Typo here", turn=turn.pk).status_code == 200
    assert post(client, demo, op="transition", revision=1, action="return", comment="See comments").status_code == 200
    page = signed_in(client, demo.navigator).get(f"/review/{demo.name}/")
    assert "Typo here" in page.text
    assert "See comments" in page.text
    assert 'id="btn-resubmit"' in page.text
    assert post(client, demo, op="transition", revision=2, action="validate").status_code == 403
    assert post(client, demo, op="transition", revision=2, action="resubmit").json()["status"] == DemoStatus.RECORDED


def test_every_operation_through_the_endpoint(client, reviewer, demo):
    signed_in(client, reviewer)
    chat = chat_turn(demo)
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    steps = [
        {"op": "delete", "turn": chat.pk},
        {"op": "restore", "turn": chat.pk},
        {"op": "move", "turn": chat.pk, "to_index": 3},
        {"op": "edit_text", "turn": chat.pk, "text": "Corrected"},
        {"op": "set_validity", "turn": framed.pk, "valid": False},
        {"op": "choose_screenshot", "turn": framed.pk, "screenshot": framed.frames[0]["screenshot"]},
        {"op": "accept_suggestions"},
        {"op": "edit_metadata", "fields": {"category": "Shopping", "instructor_sees_screen": False}},
        {"op": "set_unsure", "unsure": True},
        {"op": "comment", "text": "Looks fine"},
    ]
    for revision, step in enumerate(steps):
        response = post(client, demo, revision=revision, **step)
        assert response.status_code == 200, (step, response.json())
        assert response.json()["revision"] == revision + 1
    undo = Edit.objects.filter(demonstration=demo, kind="edit_text").get()
    assert post(client, demo, op="undo", revision=len(steps), edit=undo.pk).status_code == 200
    assert Edit.objects.filter(demonstration=demo).count() == len(steps) + 1


def test_a_stale_write_is_409_with_who_changed_what(client, reviewer, demo):
    signed_in(client, reviewer)
    turn = chat_turn(demo)
    assert post(client, demo, op="delete", revision=0, turn=turn.pk).status_code == 200
    response = post(client, demo, op="edit_text", revision=0, turn=turn.pk, text="late")
    assert response.status_code == 409
    assert "changed by reviewer (delete turn" in response.json()["detail"]


def test_bad_requests_are_400(client, reviewer, demo):
    signed_in(client, reviewer)
    assert client.post(f"/review/{demo.name}/edit", "{", content_type="application/json").status_code == 400
    assert post(client, demo, op="explode", revision=0).status_code == 400
    response = post(client, demo, op="delete", turn=chat_turn(demo).pk)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "revision"


def test_writes_need_the_csrf_token(reviewer, demo):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert post(client, demo, op="delete", revision=0, turn=chat_turn(demo).pk).status_code == 403
    assert not Edit.objects.exists()


def test_page_html_is_served_inline_in_a_sandbox_with_a_strict_csp(client, reviewer, demo):
    turn = Turn.objects.filter(demonstration=demo, page__isnull=False).first()
    response = signed_in(client, reviewer).get(f"/review/{demo.name}/turns/{turn.pk}/page")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert csp.startswith("sandbox;")
    assert "default-src 'none'" in csp
    assert "script-src" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'self'" in csp
    assert response["X-Frame-Options"] == "SAMEORIGIN"
    assert "attachment" not in response.get("Content-Disposition", "")
    assert b"data-webtasks-id" in response.content


def test_thumbnails_are_a_placeholder_until_the_worker_made_them(client, reviewer, demo):
    from workers.exports.dataset import storage_blobs
    from workers.review.thumbnails import make_thumbnails

    sha = Turn.objects.exclude(screenshot=None).filter(demonstration=demo).first().screenshot_id
    signed_in(client, reviewer)
    pending = client.get(f"/review/thumbs/{sha}")
    assert pending["X-Thumbnail"] == "pending"
    assert make_thumbnails([sha, sha], storage_blobs().read) == 1
    assert make_thumbnails([sha], storage_blobs().read) == 0  # made once
    ready = client.get(f"/review/thumbs/{sha}")
    assert ready["Content-Type"] == "image/webp"
    assert ready.content[:4] == b"RIFF"


def page_queries(client, demo) -> int:
    client.get(f"/review/{demo.name}/")  # first view computes and caches the quality checks
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/review/{demo.name}/").status_code == 200
    return len(queries)


def test_review_page_queries_do_not_grow_with_turns(client, reviewer, alpha):
    from annotation.actions import review as actions

    small, large = recorded_demo(turns=10, seed=1), recorded_demo(turns=100, seed=2)
    signed_in(client, reviewer)
    for demo in (small, large):  # some curation so every kind of row is read
        turns = list(Turn.objects.filter(demonstration=demo).order_by("seq")[:3])
        actions.do_delete_turn(reviewer, demo, 0, turns[0].pk)
        actions.do_move_turn(reviewer, demo, 1, turns[1].pk, 0)
        actions.do_comment(reviewer, demo, 2, "note", turns[2].pk)
    assert page_queries(client, small) == page_queries(client, large)
    assert page_queries(client, large) <= 16  # with the problem marks and the project's kinds


def test_status_links_keep_the_other_filters_and_mark_the_current_one(client, reviewer, demo):
    filters = {"project": "alpha", "q": "two words", "status": "recorded"}
    text = signed_in(client, reviewer).get("/review/", filters).text
    assert 'href="?project=alpha&amp;q=two+words&amp;status=validated"' in text
    assert 'href="?project=alpha&amp;q=two+words&amp;status=recorded" aria-current="page"' in text
    assert 'href="?project=alpha&amp;q=two+words">All</a>' in text  # "All" drops only the status
    assert 'id="clear-filters"' in text
    assert 'id="clear-filters"' not in client.get("/review/").text


def test_the_list_says_why_it_is_empty(client, reviewer, demo):
    signed_in(client, reviewer)
    assert "No demonstrations match these filters." in client.get("/review/", {"q": "no such task"}).text
    Turn.objects.all().delete()
    demo.delete()
    assert "No recorded demonstrations to review yet." in client.get("/review/").text


def test_a_demo_without_turns_or_edits_has_empty_states(client, reviewer, demo):
    Turn.objects.filter(demonstration=demo).delete()
    text = signed_in(client, reviewer).get(f"/review/{demo.name}/").text
    assert "This demonstration has no turns." in text
    assert "No edits yet." in text
    assert 'id="box-legend"' in text


def test_history_entries_show_their_number_and_undo_buttons_are_labelled(client, reviewer, demo):
    signed_in(client, reviewer)
    post(client, demo, op="delete", revision=0, turn=chat_turn(demo).pk)
    edit = Edit.objects.get(demonstration=demo)
    text = client.get(f"/review/{demo.name}/").text
    assert f'<span class="muted">#{edit.pk}</span> <b>Deleted turn {chat_turn(demo).seq}</b>' in text
    assert f'aria-label="Undo edit #{edit.pk} (delete turn)"' in text


def test_an_undo_can_be_redone_from_the_history(client, reviewer, demo):
    signed_in(client, reviewer)
    turn = chat_turn(demo)
    post(client, demo, op="delete", revision=0, turn=turn.pk)
    delete = Edit.objects.get(demonstration=demo)
    assert post(client, demo, op="undo", revision=1, edit=delete.pk).status_code == 200
    undo = Edit.objects.get(undoes=delete)
    text = client.get(f"/review/{demo.name}/").text
    assert f'data-edit="{undo.pk}" aria-label="Redo edit #{delete.pk} (delete turn)">Redo</button>' in text
    assert f'class="undo" data-edit="{delete.pk}"' not in text  # already undone: only its undo can be undone
    assert post(client, demo, op="undo", revision=2, edit=undo.pk).status_code == 200
    assert turn.client_id not in {t.key for t in export_timeline(demo)}  # deleted again
    redo = Edit.objects.get(undoes=undo)
    text = client.get(f"/review/{demo.name}/").text
    assert f'data-edit="{redo.pk}" aria-label="Undo edit #{delete.pk} again (delete turn)">Undo</button>' in text


def test_history_names_the_new_status_and_quotes_comments(client, reviewer, demo):
    signed_in(client, reviewer)
    post(client, demo, op="comment", revision=0, text="Turn 3 looks misordered")
    post(client, demo, op="transition", revision=1, action="reject")
    text = client.get(f"/review/{demo.name}/").text
    assert "<b>Rejected</b>" in text
    assert "<b>Commented “Turn 3 looks misordered”</b>" in text
    assert "<kbd>d</kbd> delete/restore" not in text  # read-only now: only the keys that still work


def test_history_says_which_undos_a_later_edit_blocks(client, reviewer, demo):
    from annotation.actions import review as actions

    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    delete = actions.do_delete_turn(reviewer, demo, 0, turns[2].pk)
    restore = actions.do_restore_turn(reviewer, demo, 1, turns[2].pk)
    first_move = actions.do_move_turn(reviewer, demo, 2, turns[4].pk, 0)
    second_move = actions.do_move_turn(reviewer, demo, 3, turns[6].pk, 0)
    text = signed_in(client, reviewer).get(f"/review/{demo.name}/").text
    assert f'id="blocked-{delete.pk}">changed since by #{restore.pk}: undo that first' in text
    assert f'id="blocked-{first_move.pk}">changed since by #{second_move.pk}: undo that first' in text
    assert f'id="blocked-{restore.pk}"' not in text
    assert f'id="blocked-{second_move.pk}"' not in text
    assert f'aria-describedby="blocked-{delete.pk}"' in text


def test_an_open_page_can_ask_whether_the_demo_changed_elsewhere(client, reviewer, demo):
    from annotation.actions import review as actions
    from tests.support.actors import make_user

    signed_in(client, reviewer)
    state = client.get(f"/review/{demo.name}/revision").json()
    assert state == {"revision": 0, "status": "recorded", "last_edit": None}
    colleague = make_user("colleague", demo.project, "reviewer")
    actions.do_delete_turn(colleague, demo, 0, chat_turn(demo).pk)
    response = client.get(f"/review/{demo.name}/revision")
    assert response["Cache-Control"] == "no-store"
    state = response.json()
    assert state["revision"] == 1
    assert (state["last_edit"]["author"], state["last_edit"]["kind"], state["last_edit"]["by_you"]) == (
        "colleague",
        f"Deleted turn {chat_turn(demo).seq}",
        False,
    )
    post(client, demo, op="comment", revision=1, text="seen")
    assert client.get(f"/review/{demo.name}/revision").json()["last_edit"]["by_you"] is True


def test_the_revision_is_answered_only_to_who_may_review(client, demo, outsider):
    assert client.get(f"/review/{demo.name}/revision").status_code == 302  # to the login page
    response = signed_in(client, outsider).get(f"/review/{demo.name}/revision")
    assert response.status_code == 404
    assert "detail" in response.json()
    assert signed_in(client, outsider).get("/review/no-such-demo/revision").status_code == 404


def test_a_metadata_value_longer_than_its_column_is_a_400_naming_the_field(client, reviewer, demo):
    signed_in(client, reviewer)
    fields = {"category": "c" * 101, "region": "Atlantis", "websites": ["w" * 254 + ".com"], "subcategory": "s" * 100}

    response = post(client, demo, op="edit_metadata", revision=0, fields=fields)

    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "category", "message": "at most 100 characters"},
        {"field": "websites", "message": "domains of at most 253 characters"},
    ]
    demo.refresh_from_db()
    assert demo.region != "Atlantis"
    assert not Edit.objects.filter(demonstration=demo).exists()
    assert post(client, demo, op="edit_metadata", revision=0, fields={"fields": 1}).status_code == 400
    assert post(client, demo, op="edit_metadata", revision=0, fields=["category"]).status_code == 400


def test_the_metadata_form_suggests_the_projects_choice_lists(client, reviewer, demo, alpha):
    alpha.category_choices, alpha.region_choices = ["Shopping", "Travel <&>"], ["Europe"]
    alpha.save()
    text = signed_in(client, reviewer).get(f"/review/{demo.name}/").text
    assert 'name="category" value="' in text
    assert 'list="category-choices"' in text
    assert (
        '<datalist id="category-choices"><option value="Shopping"><option value="Travel &lt;&amp;&gt;"></datalist>'
        in text
    )
    assert '<datalist id="region-choices"><option value="Europe"></datalist>' in text
    assert '<datalist id="subcategory-choices"></datalist>' in text
