"""The home page per role: what each person sees on landing and where every link takes them."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Comment, DemoReview, DemoStatus, ExportJob, JobStatus, Membership, Role
from tests.support.actors import make_user, signed_in, start_demo

pytestmark = pytest.mark.django_db


def home_of(user) -> str:
    page = signed_in(user).get("/")
    assert page.status_code == 200
    return page.content.decode()


def block(html: str, block_id: str) -> str:
    """The HTML of one ``<section id=...>`` of the page ('' when absent)."""
    start = html.find(f'id="{block_id}"')
    return "" if start < 0 else html[start : html.find("</section>", start)]


# --- Anonymous and outsiders ----------------------------------------------------------------------------


def test_anonymous_visitors_get_the_sign_in_invitation_only(owner, alpha):
    start_demo(owner, alpha)
    html = Client().get("/").content.decode()
    assert "Sign in" in html
    assert "my-recordings" not in html
    assert "review-queue" not in html
    assert "/sessions/" not in html


def test_a_user_without_projects_is_told_to_ask_an_admin(db):
    nobody = get_user_model().objects.create_user("nobody", password="x")
    html = home_of(nobody)
    assert "not a member of any project" in html
    assert 'id="recent"' not in html


def test_outsiders_see_nothing_of_other_projects(owner, alpha, outsider):
    demo = start_demo(owner, alpha)
    recorded = start_demo(owner, alpha, status=DemoStatus.RECORDED)
    html = home_of(outsider)
    assert demo.name not in html
    assert recorded.name not in html
    assert "review-queue" not in html
    assert 'id="research"' not in html
    assert 'id="navigating-empty"' in html


# --- Annotators -----------------------------------------------------------------------------------------


def test_an_annotator_sees_their_recording_with_open_session_and_the_invitation(owner, alpha):
    demo = start_demo(owner, alpha, mode="chat")
    html = block(home_of(owner), "my-recordings")
    assert f'href="/sessions/{demo.name}/navigate"' in html
    assert "Open session" in html
    assert 'class="invite-url"' in html
    assert "/sessions/join/" in html
    assert 'id="install-recorder"' in html


def test_the_install_box_tells_the_panels_steps_and_points_at_the_recorder_doc(owner, alpha):
    start_demo(owner, alpha, mode="task")
    html = block(home_of(owner), "my-recordings")
    box = html[html.index('id="install-recorder"') : html.index("</details>", html.index('id="install-recorder"'))]
    assert "http://testserver</code>" in box  # the address to type, with its scheme
    assert "username and password" in box
    assert 'href="/account/token/"' in box  # or paste a token from the token page
    assert "docs/recorder.md, “Install and record”" in box
    assert "README" not in box
    assert "## Install and record" in (settings.BASE_DIR / "docs" / "recorder.md").read_text()


def test_the_invitation_on_the_home_page_lets_a_teammate_join(owner, alpha, teammate):
    demo = start_demo(owner, alpha, mode="chat")
    html = block(home_of(owner), "my-recordings")
    invite = html.split('class="invite-url"', 1)[1].split('value="', 1)[1].split('"', 1)[0]
    assert f'data-copy="invite-{demo.name}"' in html  # the copy button
    path = invite.split("://", 1)[1].split("/", 1)[1]
    assert signed_in(teammate).get("/" + path).status_code == 200
    assert signed_in(teammate).post("/" + path).url == f"/sessions/{demo.name}/instruct"


def test_a_task_mode_recording_has_no_invitation(owner, alpha):
    demo = start_demo(owner, alpha, mode="task")
    html = block(home_of(owner), "my-recordings")
    assert f"/sessions/{demo.name}/navigate" in html
    assert "invite-url" not in html


def test_an_annotator_without_recordings_sees_the_empty_states(owner, alpha):
    html = home_of(owner)
    for empty in ("navigating-empty", "returned-empty", "instructing-empty"):
        assert f'id="{empty}"' in html


def test_returned_demos_show_their_comment_count_and_link_to_the_review_page(owner, alpha, reviewer):
    demo = start_demo(owner, alpha, status=DemoStatus.RETURNED)
    for text in ("Wrong site", "Missing chat"):
        Comment.objects.create(demonstration=demo, author=reviewer, text=text)
    html = block(home_of(owner), "my-recordings")
    assert f'href="/review/{demo.name}/"' in html
    assert "2 comments" in html
    page = signed_in(owner).get(f"/review/{demo.name}/")
    assert page.status_code == 200
    assert "Wrong site" in page.content.decode()


def test_a_teammates_returned_demo_is_not_listed_nor_linked(owner, alpha, teammate):
    demo = start_demo(teammate, alpha, status=DemoStatus.RETURNED)
    html = home_of(owner)
    assert demo.name in block(html, "recent")  # the recent list shows the project's demos...
    assert f"/review/{demo.name}/" not in html  # ...but the annotator may not open a teammate's
    assert 'id="returned-empty"' in html


def test_an_instructor_sees_the_demo_they_instruct_with_the_instructor_page(owner, alpha, teammate):
    demo = start_demo(owner, alpha, instructor=teammate)
    html = block(home_of(teammate), "my-instructing")
    assert f'href="/sessions/{demo.name}/instruct"' in html
    assert "Open instructor page" in html
    assert signed_in(teammate).get(f"/sessions/{demo.name}/instruct").status_code == 200


def test_a_teammates_recording_is_not_linked_for_an_annotator(owner, alpha, teammate):
    demo = start_demo(teammate, alpha)
    html = home_of(owner)
    assert f"/sessions/{demo.name}/" not in html
    assert signed_in(owner).get(f"/sessions/{demo.name}/navigate").status_code == 404


# --- Reviewers ------------------------------------------------------------------------------------------


def test_a_reviewer_sees_the_queue_counts_linked_to_the_filtered_list(owner, alpha, reviewer, outsider, beta):
    for _ in range(2):
        start_demo(owner, alpha, status=DemoStatus.RECORDED)
    start_demo(owner, alpha, status=DemoStatus.VALIDATED)
    start_demo(outsider, beta, status=DemoStatus.RECORDED)  # another project: not counted
    html = block(home_of(reviewer), "review-queue")
    assert 'href="/review/?project=alpha&amp;status=recorded" data-status="recorded">Recorded</a> 2' in html
    assert 'data-status="validated">Validated</a> 1' in html
    assert 'data-status="in_review">In review</a> 0' in html
    assert 'data-project="beta"' not in html
    listed = signed_in(reviewer).get("/review/?project=alpha&status=recorded").content.decode()
    assert listed.count("<tr data-name=") == 2


def test_unsure_demos_await_a_second_reviewer(owner, alpha, reviewer):
    second = make_user("second", alpha, Role.REVIEWER)
    demo = start_demo(owner, alpha, status=DemoStatus.IN_REVIEW)
    decided = start_demo(owner, alpha, status=DemoStatus.VALIDATED)
    DemoReview.objects.create(demonstration=demo, unsure_by=reviewer)
    DemoReview.objects.create(demonstration=decided, unsure_by=reviewer)
    mine = block(home_of(reviewer), "review-queue")
    assert f'href="/review/{demo.name}/"' in mine
    assert "another reviewer must decide" in mine
    assert decided.name not in mine
    theirs = block(home_of(second), "review-queue")
    assert f'href="/review/{demo.name}/"' in theirs
    assert "marked by\n          reviewer" in theirs


def test_a_reviewer_without_work_sees_the_empty_state(reviewer):
    html = block(home_of(reviewer), "review-queue")
    assert 'id="unsure-empty"' in html
    assert 'data-status="recorded">Recorded</a> 0' in html


def test_a_reviewer_links_recorded_demos_to_review_but_recordings_to_nothing(owner, alpha, reviewer):
    recording = start_demo(owner, alpha)
    recorded = start_demo(owner, alpha, status=DemoStatus.RECORDED)
    html = home_of(reviewer)
    assert f'href="/review/{recorded.name}/"' in html
    assert f"/sessions/{recording.name}/" not in html  # only admins observe a session
    assert signed_in(reviewer).get(f"/sessions/{recording.name}/instruct").status_code == 404
    assert "my-recordings" not in html


def test_a_project_admin_may_observe_recordings(owner, alpha, admin):
    demo = start_demo(owner, alpha)
    html = block(home_of(admin), "review-queue")
    assert f'href="/sessions/{demo.name}/instruct"' in html
    page = signed_in(admin).get(f"/sessions/{demo.name}/instruct")
    assert page.status_code == 200
    assert 'data-role="observer"' in page.content.decode()


def test_a_superuser_is_admin_everywhere(owner, alpha, outsider, beta):
    root = get_user_model().objects.create_superuser("root", password="x")
    mine = start_demo(owner, alpha, status=DemoStatus.RECORDED)
    theirs = start_demo(outsider, beta)
    html = home_of(root)
    assert f'href="/review/{mine.name}/"' in html
    assert f'href="/sessions/{theirs.name}/instruct"' in html
    assert 'id="research"' in html
    assert 'id="review-queue"' in html


# --- Researchers ----------------------------------------------------------------------------------------


def test_a_researcher_sees_the_api_docs_splits_and_recent_exports(alpha, beta, researcher, owner, outsider):
    done = ExportJob.objects.create(
        project=alpha, owner=researcher, format="weblinx", status=JobStatus.DONE, file="exports/a.tar.gz"
    )
    failed = ExportJob.objects.create(project=alpha, owner=researcher, format="mind2web", status=JobStatus.FAILED)
    failed.error = "no validated demos"
    failed.save()
    other = ExportJob.objects.create(project=beta, owner=outsider, format="weblinx", status=JobStatus.DONE)
    html = block(home_of(researcher), "research")
    assert 'href="/api/docs/"' in html
    assert 'href="/projects/alpha/splits/"' in html  # the splits page, not the API browser
    assert 'href="/projects/alpha/exports/"' in html
    assert f'href="/api/exports/{done.pk}/download/"' in html
    assert f"/api/exports/{failed.pk}/download/" not in html
    assert "no validated demos" in html
    assert f"/api/exports/{other.pk}/" not in html
    assert signed_in(researcher).get("/projects/alpha/splits/").status_code == 200


def test_a_researcher_without_exports_sees_the_empty_state(researcher):
    html = block(home_of(researcher), "research")
    assert 'id="exports-empty"' in html


def test_a_researcher_reads_recorded_demos_in_review(owner, alpha, researcher):
    demo = start_demo(owner, alpha, status=DemoStatus.VALIDATED)
    assert f'href="/review/{demo.name}/"' in home_of(researcher)
    assert "my-recordings" not in home_of(researcher)


# --- Query bounds ---------------------------------------------------------------------------------------


def home_queries(user) -> int:
    client = signed_in(user)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def populate(count, alpha, owner, teammate, reviewer, researcher):
    statuses = [DemoStatus.RECORDING, DemoStatus.RETURNED, DemoStatus.IN_REVIEW, DemoStatus.RECORDED]
    for index in range(count):
        demo = start_demo(owner, alpha, instructor=teammate, status=statuses[index % len(statuses)])
        Comment.objects.create(demonstration=demo, author=reviewer, text="note")
        if demo.status == DemoStatus.IN_REVIEW:
            DemoReview.objects.create(demonstration=demo, unsure_by=reviewer)
        ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", status=JobStatus.DONE, file="x")


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER, Role.ADMIN])
def test_the_home_page_makes_as_many_queries_for_20_demos_as_for_2(role, alpha, owner, teammate, reviewer, researcher):
    viewer = {Role.ANNOTATOR: owner, Role.REVIEWER: reviewer, Role.RESEARCHER: researcher}.get(role)
    viewer = viewer or make_user("boss", alpha, Role.ADMIN)
    populate(2, alpha, owner, teammate, reviewer, researcher)
    few = home_queries(viewer)
    populate(18, alpha, owner, teammate, reviewer, researcher)
    assert home_queries(viewer) == few


# --- Links between the review and session pages ---------------------------------------------------------


def test_an_ended_sessions_page_links_to_its_review_page_for_those_who_may_open_it(owner, alpha, teammate, admin):
    demo = start_demo(owner, alpha, instructor=teammate, status=DemoStatus.RECORDED)
    for user, page in ((owner, "navigate"), (teammate, "instruct"), (admin, "instruct")):
        html = signed_in(user).get(f"/sessions/{demo.name}/{page}").content.decode()
        assert f'id="review-link" href="/review/{demo.name}/"' in html
        assert signed_in(user).get(f"/review/{demo.name}/").status_code == 200


def test_the_review_page_links_to_the_chat_session_only_for_its_participants_and_admins(
    owner, alpha, teammate, admin, reviewer, researcher
):
    demo = start_demo(owner, alpha, instructor=teammate, status=DemoStatus.IN_REVIEW)
    expected = {
        owner: f"/sessions/{demo.name}/navigate",
        teammate: f"/sessions/{demo.name}/instruct",
        admin: f"/sessions/{demo.name}/instruct",
    }
    for user, url in expected.items():
        html = signed_in(user).get(f"/review/{demo.name}/").content.decode()
        assert f'id="session-link" href="{url}"' in html
        assert signed_in(user).get(url).status_code == 200
    for user in (reviewer, researcher):  # they read the review, but have no place in the session
        html = signed_in(user).get(f"/review/{demo.name}/").content.decode()
        assert 'id="session-link"' not in html
        assert signed_in(user).get(f"/sessions/{demo.name}/instruct").status_code == 404


def test_a_task_mode_review_page_has_no_session_link(owner, alpha):
    demo = start_demo(owner, alpha, mode="task", status=DemoStatus.RECORDED)
    assert 'id="session-link"' not in signed_in(owner).get(f"/review/{demo.name}/").content.decode()


def test_an_admins_own_recordings_are_not_repeated_as_observable(alpha, admin, owner):
    own = start_demo(admin, alpha)
    other = start_demo(owner, alpha)
    html = block(home_of(admin), "review-queue")
    assert f'href="/sessions/{other.name}/instruct"' in html
    assert own.name not in html


def test_the_queue_counts_each_project_where_the_user_reviews(owner, alpha, beta, reviewer, outsider):
    Membership.objects.create(project=beta, user=reviewer, role=Role.REVIEWER)
    start_demo(outsider, beta, status=DemoStatus.RECORDED)
    html = block(home_of(reviewer), "review-queue")
    assert 'href="/review/?project=beta&amp;status=recorded" data-status="recorded">Recorded</a> 1' in html
    assert 'href="/review/?project=alpha&amp;status=recorded" data-status="recorded">Recorded</a> 0' in html
