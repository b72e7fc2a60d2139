"""Serving form tasks: the template filled Turkle's way inside ``mturk_form`` (every ``${var}`` of the 28 real
tasks), the task frames' tokens and CSP (wrong, expired and replayed tokens store nothing; from the real server, assets
only from the page's own server unless ``FORM_TASK_ASSET_SOURCES`` adds some), the read-only view of submitted work,
and who may open which page."""

import datetime as dt
import html
import re
import urllib.request

import lxml.html
import pytest
from django.core import signing
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotation.actions import forms
from annotation.models import Assignment, AssignmentStatus, Batch, Task
from devtools.processes import asgi_server, database_url
from tests.support.actors import signed_in
from tests.support.forms_data import make_batch, task_dirs

FIELD = re.compile(r"\$\{(\w+)\}")


@pytest.fixture
def batch(alpha):
    return make_batch(alpha, assignments_per_task=1, allotted_seconds=600)


@pytest.fixture
def assignment(batch, owner):
    return forms.do_accept_next(owner, batch)


def anonymous():
    return Client()


def page_form(html: str):
    return lxml.html.document_fromstring(html).get_element_by_id("mturk_form")


# --- The page ---------------------------------------------------------------------------------------------------


def test_every_placeholder_of_the_28_real_templates_is_filled_in_every_task(db):
    from django.core.management import call_command

    call_command("import_turkingbench", *[str(d) for d in task_dirs()], project="tb", stdout=None)
    for batch in Batch.objects.filter(project__name="tb"):
        for task in batch.tasks.all():
            html = forms.task_page(batch, task, "#", "preview")
            left = set(FIELD.findall(html)) & set(batch.template_fields)
            assert not left, f"{batch.name} task {task.index}: {left} not filled"
            assert '<form name="mturk_form" method="post" id="mturk_form" action="#">' in html


def test_filling_is_turkles_plain_replacement_without_escaping(alpha):
    batch = make_batch(alpha, csv_text='topic,sentence\n<b>bold</b>,"say ""hi"""\n')
    task = batch.tasks.get()
    html = forms.task_page(batch, task, "#", "preview")
    assert "<h3>Question about <b>bold</b></h3>" in html
    assert '<p id="sentence">say "hi"</p>' in html


def test_a_submit_button_is_added_only_when_the_template_has_none(alpha, batch, assignment):
    task = batch.tasks.get(index=0)
    work_page = forms.task_page(batch, task, "/submit/", "work")
    button = page_form(work_page).get_element_by_id("submitButton")
    assert button.get("type") == "submit"
    assert button.get("disabled") is None
    assert (
        lxml.html.document_fromstring(forms.task_page(batch, task, "#", "preview"))
        .get_element_by_id("submitButton")
        .get("disabled")
        is not None
    )
    own = make_batch(
        alpha, name="own", template="<input name='a'><button type='SUBMIT'>Send</button>", csv_text="x\n1\n"
    )
    assert own.has_submit_button
    assert "submitButton" not in forms.task_page(own, own.tasks.get(), "#", "work")


# --- Preview frames -----------------------------------------------------------------------------------------------


def test_the_preview_loads_by_its_signed_url_without_a_session_sandboxed(batch):
    task = batch.tasks.get(index=1)
    response = anonymous().get(forms.preview_url(task))
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert csp.startswith("sandbox allow-scripts allow-forms")
    assert "allow-same-origin" not in csp
    assert "connect-src 'none'" in csp
    assert "form-action 'none'" in csp
    assert response["Referrer-Policy"] == "no-referrer"
    assert "Set-Cookie" not in response
    html = response.content.decode()
    assert "<h3>Question about sport</h3>" in html
    assert 'id="submitButton"' in html


def test_a_wrong_or_expired_preview_token_is_refused(batch, settings):
    task, other = batch.tasks.get(index=0), batch.tasks.get(index=1)
    wrong = forms.preview_url(task, token=forms.preview_token(other))
    assert anonymous().get(wrong).status_code == 404
    assert anonymous().get(f"/forms/tasks/{task.pk}/iframe/?token=garbage").status_code == 404
    assert anonymous().get(f"/forms/tasks/{task.pk}/iframe/").status_code == 404
    settings.FORM_PREVIEW_TOKEN_MAX_AGE_SECONDS = -1  # every token is already too old
    assert anonymous().get(forms.preview_url(task)).status_code == 404


def test_the_api_lists_tasks_with_preview_urls_for_managers_only(alpha, batch, researcher, owner, api_for):
    body = api_for(researcher).get(f"/api/batches/{batch.pk}/tasks/").json()
    assert [t["index"] for t in body["results"]] == [0, 1, 2]
    url = body["results"][2]["preview_url"]
    assert url.startswith("http://testserver/forms/tasks/")
    assert "<h3>Question about food</h3>" in anonymous().get(url).content.decode()
    assert api_for(owner).get(f"/api/batches/{batch.pk}/tasks/").status_code == 403


# --- Work frames and submissions -----------------------------------------------------------------------------------


def test_the_work_frame_is_authorised_by_its_token_and_posts_only_to_itself(assignment):
    url = forms.work_frame_url(assignment)
    response = anonymous().get(url)
    assert response.status_code == 200
    action = forms.work_url(assignment)
    assert f"form-action http://testserver{action}" in response["Content-Security-Policy"]
    assert page_form(response.content.decode()).get("action") == action
    assert "workerId=" in url
    wrong = f"/forms/assignments/{assignment.pk}/{'0' * 64}/"
    assert anonymous().get(wrong).status_code == 404
    assert anonymous().post(wrong, {"short": "x"}).status_code == 404
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


def test_a_submission_stores_every_value_of_a_repeated_name_in_form_order(assignment):
    body = "short=hello&tags=c&tags=a&level=high&score=7&polarity=neg&long=line1%0D%0Aline2"
    response = anonymous().post(forms.work_url(assignment), body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    assert 'data-status="submitted"' in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.answers == {
        "short": "hello",
        "tags": ["c", "a"],
        "level": "high",
        "score": "7",
        "polarity": "neg",
        "long": "line1\r\nline2",
    }


def test_a_replayed_submission_is_refused_and_stores_nothing(assignment):
    url = forms.work_url(assignment)
    assert anonymous().post(url, {"short": "first"}).status_code == 200
    replay = anonymous().post(url, {"short": "second"})
    assert replay.status_code == 409
    assert Assignment.objects.get(pk=assignment.pk).answers == {"short": "first"}
    assert anonymous().get(url).status_code == 409


def test_a_submission_after_expiry_is_410_and_stores_nothing(assignment):
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    response = anonymous().post(forms.work_url(assignment), {"short": "late"})
    assert response.status_code == 410
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.EXPIRED
    assert assignment.answers == {}
    assert Task.objects.get(pk=assignment.task_id).taken == 0


def test_a_returned_assignments_token_submits_nothing(assignment):
    forms.do_return(assignment)
    assert anonymous().post(forms.work_url(assignment), {"short": "x"}).status_code == 409
    assert Assignment.objects.get(pk=assignment.pk).answers == {}


def test_a_nul_character_in_an_answer_is_refused_by_name(assignment):
    response = anonymous().post(forms.work_url(assignment), {"short": "a\x00b"})
    assert response.status_code == 400
    assert "short" in response.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


MULTIPART = "multipart/form-data; boundary=XyZ"


def multipart(name: bytes, value: bytes) -> bytes:
    return b'--XyZ\r\nContent-Disposition: form-data; name="' + name + b'"\r\n\r\n' + value + b"\r\n--XyZ--\r\n"


@pytest.mark.parametrize(
    ("body", "content_type", "field"),
    [
        pytest.param("long=ok&short=caf%E9", "application/x-www-form-urlencoded", "short", id="latin-1-value"),
        pytest.param("short=%FF%FE", "application/x-www-form-urlencoded", "short", id="invalid-bytes"),
        pytest.param("short=%ED%A0%80", "application/x-www-form-urlencoded", "short", id="encoded-surrogate"),
        pytest.param("caf%E9=x", "application/x-www-form-urlencoded", "caf\\xe9", id="latin-1-name"),
        pytest.param(multipart(b"short", b"caf\xe9"), MULTIPART, "short", id="multipart-value"),
    ],
)
def test_answers_that_are_not_utf8_are_refused_by_name_and_store_nothing(
    assignment, researcher, api_for, body, content_type, field
):
    response = anonymous().post(forms.work_url(assignment), body, content_type=content_type)

    assert response.status_code == 400
    assert f"field '{field}' is not UTF-8 text; nothing was stored" in html.unescape(response.content.decode())
    stored = api_for(researcher).get(f"/api/assignments/{assignment.pk}/").json()
    assert stored["status"] == AssignmentStatus.ACTIVE
    assert stored["answers"] == {}


def test_utf8_answers_are_stored_exactly_as_sent(assignment, teammate, researcher, api_for):
    # A replacement character the worker really typed is an answer like any other.
    body = "short=caf%C3%A9&long=%F0%9F%98%80%EF%BF%BD"
    response = anonymous().post(forms.work_url(assignment), body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    multipart_assignment = forms.do_accept_next(teammate, assignment.task.batch)
    assert multipart_assignment is not None
    answer = anonymous().post(forms.work_url(multipart_assignment), multipart(b"short", "naïve".encode()), MULTIPART)
    assert answer.status_code == 200

    client = api_for(researcher)
    assert client.get(f"/api/assignments/{assignment.pk}/").json()["answers"] == {"short": "café", "long": "😀\ufffd"}
    assert client.get(f"/api/assignments/{multipart_assignment.pk}/").json()["answers"] == {"short": "naïve"}


def test_too_many_fields_are_refused_and_store_nothing(assignment, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    response = anonymous().post(forms.work_url(assignment), {f"f{i}": "x" for i in range(10)})
    assert response.status_code == 400
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


# --- Read-only view of submitted work --------------------------------------------------------------------------------


def test_a_worker_opens_their_submitted_work_read_only(assignment, owner):
    anonymous().post(forms.work_url(assignment), {"short": "kept", "tags": ["a", "b"]})
    page = signed_in(owner).get(f"/work/assignments/{assignment.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "This is your work, read-only" in html
    frame_url = lxml.html.document_fromstring(html).get_element_by_id("task-frame").get("src")
    frame = anonymous().get(frame_url)
    assert frame.status_code == 200
    assert "form-action 'none'" in frame["Content-Security-Policy"]
    stored = lxml.html.document_fromstring(frame.content.decode()).get_element_by_id("stored-answers").text
    assert '"tags": ["a", "b"]' in stored
    assert '"short": "kept"' in stored


def test_a_read_only_link_needs_its_signed_token(assignment):
    anonymous().post(forms.work_url(assignment), {"short": "kept"})
    assert anonymous().get(f"/forms/assignments/{assignment.pk}/view/?token=x").status_code == 404
    other = signing.dumps(assignment.pk + 1, salt=forms.frames.VIEW_SALT)
    assert anonymous().get(f"/forms/assignments/{assignment.pk}/view/?token={other}").status_code == 404


# --- Who may open what ----------------------------------------------------------------------------------------------


def test_an_outsider_cannot_open_a_projects_tasks_batches_or_assignments(batch, assignment, outsider, api_for):
    client = signed_in(outsider)
    task = batch.tasks.get(index=0)
    assert client.get(f"/work/tasks/{task.pk}/preview/").status_code == 404
    assert client.get(f"/work/batches/{batch.pk}/").status_code == 404
    assert client.get(f"/work/batches/{batch.pk}/preview/").status_code == 404
    assert client.post(f"/work/batches/{batch.pk}/accept/").status_code == 404
    assert not Assignment.objects.filter(worker=outsider).exists()
    assert client.get(f"/work/assignments/{assignment.pk}/").status_code == 404
    assert client.get(f"/work/batches/{batch.pk}/results.csv").status_code == 404
    api = api_for(outsider)
    for path in ("", "results/", "stats/", "tasks/"):
        assert api.get(f"/api/batches/{batch.pk}/{path}").status_code == 404
    assert api.get("/api/assignments/").json()["count"] == 0


def test_a_member_whose_role_may_not_open_a_batch_page_gets_the_styled_403(batch, owner, reviewer, researcher):
    """The batch's statistics are for reviewers, researchers and admins; its preview for its workers; its results
    for researchers and admins: anyone else of the project gets the app's 403 page saying why, never a 500."""
    refused = {
        f"/work/batches/{batch.pk}/": {owner: "cannot see batch statistics"},
        f"/work/batches/{batch.pk}/preview/": {
            reviewer: "not among the workers of batch 'questions'",
            researcher: "not among the workers of batch 'questions'",
        },
        f"/work/batches/{batch.pk}/results.csv": {
            owner: "cannot manage batches (needs researcher or admin)",
            reviewer: "cannot manage batches (needs researcher or admin)",
        },
    }
    for path, users in refused.items():
        for user, reason in users.items():
            response = signed_in(user).get(path)
            assert response.status_code == 403, (path, user.username)
            assert response["Content-Type"].startswith("text/html"), (path, user.username)
            page = lxml.html.document_fromstring(response.content.decode())
            assert page.get_element_by_id("error-page").get("data-status") == "403"
            assert reason in page.get_element_by_id("error-page").text_content(), (path, user.username)


def test_another_worker_cannot_open_or_change_someone_elses_assignment(assignment, teammate):
    client = signed_in(teammate)
    assert client.get(f"/work/assignments/{assignment.pk}/").status_code == 404
    assert client.get(f"/work/assignments/{assignment.pk}/state").status_code == 404
    assert client.post(f"/work/assignments/{assignment.pk}/return").status_code == 404
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


def test_work_pages_need_a_sign_in(batch):
    for path in ("/work/", f"/work/batches/{batch.pk}/", "/work/batches/new/"):
        response = anonymous().get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


# --- The worker's pages ------------------------------------------------------------------------------------------


def test_the_assignment_page_embeds_the_sandboxed_frame_under_a_strict_csp(assignment, owner):
    response = signed_in(owner).get(f"/work/assignments/{assignment.pk}/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    frame = lxml.html.document_fromstring(response.content.decode()).get_element_by_id("task-frame")
    assert frame.get("sandbox") == "allow-scripts allow-forms allow-popups allow-modals"
    assert frame.get("src").startswith(forms.work_url(assignment))


def test_accept_skip_and_return_through_the_pages(batch, owner):
    client = signed_in(owner)
    accepted = client.post(f"/work/batches/{batch.pk}/accept/")
    first = Assignment.objects.get(worker=owner)
    assert accepted["Location"] == f"/work/assignments/{first.pk}/"
    state = client.get(f"/work/assignments/{first.pk}/state").json()
    assert state["status"] == "active"
    assert 0 < state["seconds_left"] <= 600
    skipped = client.post(f"/work/assignments/{first.pk}/skip")
    second = Assignment.objects.get(worker=owner, status=AssignmentStatus.ACTIVE)
    assert skipped["Location"] == f"/work/assignments/{second.pk}/"
    assert second.task.index == 1
    returned = client.post(f"/work/assignments/{second.pk}/return")
    assert returned["Location"] == "/work/"
    assert client.get(f"/work/assignments/{second.pk}/state").json()["status"] == "returned"
    assert not Assignment.objects.filter(status=AssignmentStatus.ACTIVE).exists()


def test_the_work_page_lists_batches_with_counts_and_the_home_page_points_to_them(batch, owner, assignment):
    client = signed_in(owner)
    html = client.get("/work/").content.decode()
    assert f'data-assignment="{assignment.pk}"' in html
    cell = f'//*[@id="available-batches"]//tr[@data-batch="{batch.pk}"]//*[@class="available"]'
    assert lxml.html.document_fromstring(html).xpath(cell)[0].text == "2"  # the task held is not offered again
    home = lxml.html.document_fromstring(client.get("/").content.decode())
    item = f'//*[@id="form-batches"]/li[@data-batch="{batch.pk}"]/*[@class="available"]'
    assert home.xpath(item)[0].text == "2"
    assert "1 assignment in progress" in home.get_element_by_id("form-active").text_content()


def test_submit_and_next_is_on_by_default_and_remembered_per_session(assignment, owner):
    client = signed_in(owner)
    page = lxml.html.document_fromstring(client.get(f"/work/assignments/{assignment.pk}/").content.decode())
    assert page.get_element_by_id("auto-accept").get("checked") is not None
    assert client.post("/work/auto-accept", {"on": "0"}).json() == {"auto_accept": False}
    page = lxml.html.document_fromstring(client.get(f"/work/assignments/{assignment.pk}/").content.decode())
    assert page.get_element_by_id("auto-accept").get("checked") is None


def test_the_batch_page_shows_progress_to_reviewers_and_results_to_managers(batch, assignment, reviewer, researcher):
    anonymous().post(forms.work_url(assignment), {"short": "x"})
    html = signed_in(reviewer).get(f"/work/batches/{batch.pk}/").content.decode()
    assert 'id="tasks-done">1 / 3<' in html
    assert "results-download" not in html
    assert signed_in(reviewer).get(f"/work/batches/{batch.pk}/results.csv").status_code == 403
    download = signed_in(researcher).get(f"/work/batches/{batch.pk}/results.csv")
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment;")
    assert b'"Answer.short"' in b"".join(download.streaming_content)


# --- The frames' policy from the real server ------------------------------------------------------------------------

ASSET_DIRECTIVES = ("script-src", "style-src", "img-src", "font-src", "media-src", "frame-src")


def directives(csp: str) -> dict:
    return {part.split()[0]: part.split()[1:] for part in csp.split("; ")}


def frame_policies(url: str, assignment, submitted) -> dict:
    """The CSP of the work, preview and read-only frames, asked over HTTP without a session."""
    paths = {
        "work": forms.work_frame_url(assignment),
        "preview": forms.preview_url(assignment.task),
        "view": forms.view_url(submitted),
    }
    policies = {}
    for name, path in paths.items():
        with urllib.request.urlopen(url + path, timeout=60) as response:
            assert response.status == 200, name
            policies[name] = directives(response.headers["Content-Security-Policy"])
    return policies


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_by_default_a_frame_loads_assets_only_from_its_own_server(alpha, owner, teammate, tmp_path, monkeypatch):
    """The server as `make run` starts it, without ``FORM_TASK_ASSET_SOURCES``: every asset directive of every kind
    of frame is inline or ``'self'`` (the vendored libraries) and nothing else; set, the sources are added to each."""
    batch = make_batch(alpha, assignments_per_task=2)
    assignment = forms.do_accept_next(owner, batch)
    submitted = forms.do_submit(forms.do_accept_next(teammate, batch).pk, {"short": "x"})
    monkeypatch.delenv("FORM_TASK_ASSET_SOURCES", raising=False)  # the server inherits this process's environment
    base = {"DATABASE_URL": database_url(connection.settings_dict)}
    with asgi_server(base, tmp_path / "default.log") as url:
        policies = frame_policies(url, assignment, submitted)
    for name, policy in policies.items():
        for directive in ASSET_DIRECTIVES:
            assert "'self'" in policy[directive], (name, directive)
            others = set(policy[directive]) - {"'self'", "'unsafe-inline'", "'unsafe-eval'", "data:", "blob:"}
            assert not others, (name, directive, others)
        assert policy["connect-src"] == ["'none'"]
        assert policy["default-src"] == ["'none'"]

    widened = {**base, "FORM_TASK_ASSET_SOURCES": "https://cdn.example.org https://fonts.example.org"}
    with asgi_server(widened, tmp_path / "widened.log") as url:
        policies = frame_policies(url, assignment, submitted)
    for name, policy in policies.items():
        for directive in ASSET_DIRECTIVES:
            assert policy[directive][-3:] == ["'self'", "https://cdn.example.org", "https://fonts.example.org"], name
        assert policy["connect-src"] == ["'none'"]
