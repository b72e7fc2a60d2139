"""The live session's pages: instructor, navigator fallback, invitations, and the screenshots they show."""

import pytest
from django.test import Client

from annotation.actions import do_ingest_turns, do_store_blob_bytes, live
from annotation.models import Invitation, Role
from tests.support import payloads
from tests.support.actors import make_user, start_demo

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def with_screenshot(demo) -> str:
    blobs = payloads.state_blobs(3)
    for blob in blobs.values():
        do_store_blob_bytes(blob.data, blob.media_type, demo.project)
    refs = payloads.state_refs(blobs)
    do_ingest_turns(demo, [payloads.browser_turn("click-1", "click", 2.0, **refs)])
    return refs["screenshot"]


def test_the_instructor_page_shows_the_chat_and_the_screen(owner, alpha, instructor):
    demo = start_demo(owner, alpha, instructor)
    page = browser(instructor).get(f"/sessions/{demo.name}/instruct")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-ws-path="/ws/sessions/{demo.name}/"' in html
    assert 'id="screen-shot"' in html
    assert 'id="no-vision"' not in html
    assert "/static/recorder_lib/live.js" in html


def test_a_no_vision_instructor_page_says_so_and_has_no_screen(owner, alpha, instructor):
    demo = start_demo(owner, alpha, instructor, sees_screen=False)
    html = browser(instructor).get(f"/sessions/{demo.name}/instruct").content.decode()
    assert 'id="no-vision"' in html
    assert 'id="screen-shot"' not in html


def test_each_participant_is_sent_to_their_own_page(owner, alpha, instructor):
    demo = start_demo(owner, alpha, instructor)
    assert browser(owner).get(f"/sessions/{demo.name}/instruct").url == f"/sessions/{demo.name}/navigate"
    assert browser(instructor).get(f"/sessions/{demo.name}/navigate").url == f"/sessions/{demo.name}/instruct"
    navigate = browser(owner).get(f"/sessions/{demo.name}/navigate")
    assert navigate.status_code == 200
    assert "/sessions/join/" not in navigate.content.decode()  # it has its instructor: nothing to invite to
    alone = start_demo(owner, alpha)
    assert "http://testserver/sessions/join/" in browser(owner).get(f"/sessions/{alone.name}/navigate").text


@pytest.mark.parametrize("who", ["teammate", "outsider", "reviewer"])
def test_session_pages_are_404_for_people_outside_the_session(owner, alpha, who, request):
    demo = start_demo(owner, alpha)
    client = browser(request.getfixturevalue(who))
    for page in ("instruct", "navigate"):
        assert client.get(f"/sessions/{demo.name}/{page}").status_code == 404
    assert client.get("/sessions/nosuchdemo/instruct").status_code == 404


def test_session_pages_need_sign_in(owner, alpha):
    demo = start_demo(owner, alpha)
    response = Client().get(f"/sessions/{demo.name}/instruct")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def invite_link(demo) -> str:
    """The invitation link the navigator's page shows."""
    return f"/sessions/join/{live.do_issue_invitation(demo.navigator, demo).code}"


def test_an_invited_member_joins_as_instructor_first_come(owner, alpha, teammate, reviewer):
    demo = start_demo(owner, alpha)
    link = invite_link(demo)
    offer = browser(teammate).get(link)
    assert offer.status_code == 200
    assert 'id="join-button"' in offer.content.decode()
    assert browser(teammate).post(link).url == f"/sessions/{demo.name}/instruct"
    demo.refresh_from_db()
    assert demo.instructor == teammate
    late = browser(reviewer).post(link)
    assert late.status_code == 410  # the invitation is spent
    assert "already been used" in late.content.decode()
    assert browser(reviewer).get(link).status_code == 410
    demo.refresh_from_db()
    assert demo.instructor == teammate
    assert browser(teammate).get(link).url == f"/sessions/{demo.name}/instruct"  # joining again is harmless


def test_an_invitation_is_404_for_outsiders_and_forged_codes(owner, alpha, outsider, teammate):
    demo = start_demo(owner, alpha)
    link = invite_link(demo)
    assert browser(outsider).post(link).status_code == 404
    assert browser(teammate).get(link[:-2] + "xx").status_code == 404
    assert browser(teammate).get("/sessions/join/not-a-code").status_code == 404
    assert Client().get(link).status_code == 302  # sign in first
    demo.refresh_from_db()
    assert demo.instructor is None


def test_the_navigator_following_their_own_invitation_goes_to_their_page(owner, alpha):
    demo = start_demo(owner, alpha)
    response = browser(owner).post(invite_link(demo))
    assert response.url == f"/sessions/{demo.name}/navigate"


def test_session_screenshots_follow_the_no_vision_rule(owner, alpha, instructor):
    seeing, blind = start_demo(owner, alpha, instructor), start_demo(owner, alpha, instructor, sees_screen=False)
    shot, blind_shot = with_screenshot(seeing), with_screenshot(blind)
    image = browser(instructor).get(f"/sessions/{seeing.name}/screenshots/{shot}")
    assert image.status_code == 200
    assert image["Content-Type"] == "image/png"
    assert b"".join(image.streaming_content) == payloads.state_blobs(3)["screenshot"].data
    assert browser(instructor).get(f"/sessions/{blind.name}/screenshots/{blind_shot}").status_code == 404
    assert browser(owner).get(f"/sessions/{blind.name}/screenshots/{blind_shot}").status_code == 200
    # A screenshot is served only under a session whose turns use it.
    assert browser(owner).get(f"/sessions/{seeing.name}/screenshots/{'0' * 64}").status_code == 404


def test_the_api_keeps_a_no_vision_recordings_screen_from_its_instructor_until_it_ends(
    owner, alpha, instructor, api_for
):
    blind = start_demo(owner, alpha, instructor, sees_screen=False)
    shot = with_screenshot(blind)
    teacher, navigator = api_for(instructor), api_for(owner)
    assert teacher.get(f"/api/recordings/{blind.name}/turns/").status_code == 404
    assert teacher.get(f"/api/recordings/{blind.name}/video/").status_code == 404
    assert teacher.get(f"/api/blobs/{shot}").status_code == 404
    assert navigator.get(f"/api/recordings/{blind.name}/turns/").status_code == 200
    assert navigator.get(f"/api/blobs/{shot}").status_code == 200
    # The instructor still adds turns (chat) and sees the demonstration's metadata.
    chat = payloads.chat_turn("by-instructor", "instructor", 3.0)
    assert teacher.post(f"/api/recordings/{blind.name}/turns/", {"turns": [chat]}, format="json").status_code == 201
    assert teacher.get(f"/api/recordings/{blind.name}/").status_code == 200
    assert teacher.post(f"/api/recordings/{blind.name}/finish/", {}, format="json").status_code == 200
    assert teacher.get(f"/api/recordings/{blind.name}/turns/").status_code == 200
    assert teacher.get(f"/api/blobs/{shot}").status_code == 200


def test_an_instructor_who_sees_the_screen_reads_it_through_the_api(owner, alpha, instructor, api_for):
    seeing = start_demo(owner, alpha, instructor)
    shot = with_screenshot(seeing)
    assert api_for(instructor).get(f"/api/recordings/{seeing.name}/turns/").status_code == 200
    assert api_for(instructor).get(f"/api/blobs/{shot}").status_code == 200


def test_a_project_admin_observes_on_the_instructor_page_without_a_chat_box(owner, alpha):
    admin = make_user("admin", alpha, Role.ADMIN)
    demo = start_demo(owner, alpha, sees_screen=False)
    html = browser(admin).get(f"/sessions/{demo.name}/instruct").content.decode()
    assert 'id="chat-form"' not in html
    assert 'id="screen-shot"' in html  # the no-vision rule is the instructor's, not an observer's


def test_a_chat_message_and_a_catch_up_take_a_fixed_number_of_queries(
    owner, alpha, instructor, django_assert_max_num_queries
):
    demo = start_demo(owner, alpha, instructor)
    for i in range(30):
        live.do_send_chat(demo, "navigator", f"warm-{i}", f"message {i}")
    with django_assert_max_num_queries(7):
        live.do_send_chat(demo, "instructor", "one-more", "next step")
    with django_assert_max_num_queries(1):
        assert len(live.session_turns(demo, -1)) == 31


def test_only_the_shared_live_client_of_the_extension_is_served(client):
    from pathlib import Path

    from django.conf import settings

    served = client.get("/static/recorder_lib/live.js")
    assert served.status_code == 200
    assert (
        b"".join(served.streaming_content) == (Path(settings.BASE_DIR) / "recorder_extension/lib/live.js").read_bytes()
    )
    for other in ("recorder.js", "store.js", "uploader.js", "../manifest.json"):
        assert client.get(f"/static/recorder_lib/{other}").status_code == 404, other


def test_the_navigator_page_has_a_copy_button_for_the_invitation_and_none_once_ended(owner, alpha):
    demo = start_demo(owner, alpha)
    html = browser(owner).get(f"/sessions/{demo.name}/navigate").content.decode()
    assert 'data-copy="invite-url"' in html
    assert 'id="revoke-invite"' in html
    assert "data-confirm=" in html  # revoking asks first
    live.do_end_session(owner, demo)
    ended = browser(owner).get(f"/sessions/{demo.name}/navigate")
    assert ended.status_code == 200
    assert 'id="chat-form"' in ended.text
    assert 'id="invite-url"' not in ended.text


def test_a_task_mode_recording_is_given_no_invitation_by_its_pages(owner, alpha):
    """Task mode is the navigator alone: opening its navigator page issues no instructor invitation (as the home
    page shows none), and a join link cannot be made for it."""
    demo = start_demo(owner, alpha, mode="task")
    page = browser(owner).get(f"/sessions/{demo.name}/navigate")
    assert page.status_code == 200
    assert "/sessions/join/" not in page.content.decode()
    assert live.do_issue_invitation(owner, demo) is None
    assert not Invitation.objects.filter(demonstration=demo).exists()
