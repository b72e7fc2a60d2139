"""Who may do what to a recording, per project: owner, teammate, reviewer, researcher, outsider, admin."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Blob, DemoStatus, Membership, Role
from tests.support.payloads import BlobFile, browser_turn, chat_turn, png_bytes
from tests.support.recorder import (
    assert_nothing_stored,
    blob_url,
    finish,
    post_turns,
    put_blob,
    recordings_url,
    start_demo,
    start_recording,
)


@pytest.fixture
def demo(owner, api_for):
    """The owner's recording in alpha, holding one turn."""
    client = api_for(owner)
    demo = start_demo(client, client_id="owner-rec")
    assert post_turns(client, demo.name, [chat_turn("first")]).status_code == 201
    return demo


@pytest.fixture
def beta_demo(outsider, api_for):
    return start_demo(api_for(outsider), project="beta", client_id="outsider-rec")


@pytest.fixture
def screenshot():
    return BlobFile(png_bytes(), "image/png")


def listed_names(client, url="/api/recordings/") -> set[str]:
    response = client.get(url)
    assert response.status_code == 200
    return {item["name"] for item in response.json()["results"]}


def test_the_owner_can_record_upload_add_turns_finish_and_read(owner, api_for, screenshot):
    client = api_for(owner)

    started = start_recording(client, client_id="rec-2")
    name = started.json()["name"]
    uploaded = put_blob(client, screenshot)
    posted = post_turns(client, name, [browser_turn("t-0", screenshot=screenshot.sha256)])
    finished = finish(client, name)
    read = client.get(recordings_url(name))

    statuses = [r.status_code for r in (started, uploaded, posted, finished, read)]
    assert statuses == [201, 201, 201, 200, 200]
    assert read.json()["status"] == DemoStatus.RECORDED
    assert name in listed_names(client)


def test_a_teammate_cannot_add_turns_to_the_owners_recording(teammate, api_for, demo, media_storage):
    response = post_turns(api_for(teammate), demo.name, [browser_turn("t-1")])

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert_nothing_stored(demo, media_storage, turns=1)


def test_a_teammate_cannot_finish_the_owners_recording(teammate, api_for, demo):
    response = finish(api_for(teammate), demo.name)

    assert response.status_code == 403
    demo.refresh_from_db()
    assert demo.status == DemoStatus.RECORDING


def test_a_teammate_can_read_the_owners_recording(teammate, api_for, demo):
    client = api_for(teammate)

    response = client.get(recordings_url(demo.name))

    assert response.status_code == 200
    assert (response.json()["navigator"], response.json()["turn_count"]) == ("owner", 1)
    assert demo.name in listed_names(client)


@pytest.mark.parametrize("actor", ["reviewer", "researcher"])
def test_reviewers_and_researchers_cannot_start_recordings(request, api_for, actor):
    response = start_recording(api_for(request.getfixturevalue(actor)), client_id=f"{actor}-rec")

    assert response.status_code == 403
    assert "needs annotator or admin" in response.json()["detail"]


@pytest.mark.parametrize("actor", ["reviewer", "researcher"])
def test_reviewers_and_researchers_cannot_upload_or_probe_blobs(request, api_for, actor, screenshot, media_storage):
    client = api_for(request.getfixturevalue(actor))

    put = put_blob(client, screenshot)
    head = client.head(blob_url(screenshot.sha256))

    assert (put.status_code, head.status_code) == (403, 403)
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize("actor", ["reviewer", "researcher"])
def test_reviewers_and_researchers_can_read_but_not_write_the_owners_recording(request, api_for, actor, demo):
    client = api_for(request.getfixturevalue(actor))

    assert client.get(recordings_url(demo.name)).status_code == 200
    assert post_turns(client, demo.name, [browser_turn("t-1")]).status_code == 403
    assert finish(client, demo.name).status_code == 403
    assert demo.turns.count() == 1


def test_an_outsider_gets_404_reading_the_owners_recording(outsider, api_for, demo):
    client = api_for(outsider)

    assert client.get(recordings_url(demo.name)).status_code == 404
    assert demo.name not in listed_names(client)


def test_an_outsider_gets_404_writing_to_the_owners_recording(outsider, api_for, demo, media_storage):
    client = api_for(outsider)

    posted = post_turns(client, demo.name, [browser_turn("t-1")])
    finished = finish(client, demo.name)

    assert (posted.status_code, finished.status_code) == (404, 404)
    assert_nothing_stored(demo, media_storage, turns=1)
    demo.refresh_from_db()
    assert demo.status == DemoStatus.RECORDING


def test_an_outsider_gets_404_starting_a_recording_in_alpha(outsider, api_for):
    response = start_recording(api_for(outsider), project="alpha", client_id="sneaky")

    assert response.status_code == 404
    assert response.json()["errors"] == [{"field": "project", "message": "not found"}]


def test_the_recordings_list_shows_only_demos_of_the_callers_projects(
    owner, outsider, reviewer, api_for, demo, beta_demo
):
    assert listed_names(api_for(owner)) == {demo.name}
    assert listed_names(api_for(reviewer)) == {demo.name}
    assert listed_names(api_for(outsider)) == {beta_demo.name}


def test_filtering_the_list_by_another_project_is_refused_as_if_it_did_not_exist(owner, api_for, demo, beta_demo):
    other = api_for(owner).get("/api/recordings/?project__name=beta")
    missing = api_for(owner).get("/api/recordings/?project__name=gamma")
    assert other.status_code == missing.status_code == 400
    assert other.json()["errors"][0]["message"] == "no project 'beta' among yours"
    assert missing.json()["errors"][0]["message"] == "no project 'gamma' among yours"


def test_the_projects_list_shows_only_own_projects_with_the_callers_role(owner, reviewer, outsider, api_for):
    def projects(user):
        return [(p["name"], p["role"]) for p in api_for(user).get("/api/projects/").json()["results"]]

    assert projects(owner) == [("alpha", "annotator")]
    assert projects(reviewer) == [("alpha", "reviewer")]
    assert projects(outsider) == [("beta", "annotator")]


def test_another_projects_detail_is_404(owner, api_for, beta):
    assert api_for(owner).get("/api/projects/beta/").status_code == 404
    assert api_for(owner).get("/api/projects/alpha/").json()["role"] == "annotator"


def test_an_outsider_uploads_blobs_to_their_own_project_but_not_to_another(outsider, api_for, screenshot):
    assert put_blob(api_for(outsider), screenshot, project="alpha").status_code == 404
    assert put_blob(api_for(outsider), screenshot, project="beta").status_code == 201
    assert Blob.objects.filter(sha256=screenshot.sha256).exists()


def test_a_project_admin_can_add_turns_to_and_finish_a_members_recording(alpha, api_for, demo):
    admin = get_user_model().objects.create_user("admin")
    Membership.objects.create(project=alpha, user=admin, role=Role.ADMIN)
    client = api_for(admin)

    assert post_turns(client, demo.name, [browser_turn("t-1")]).status_code == 201
    assert finish(client, demo.name).status_code == 200


def test_the_instructor_of_a_recording_can_add_turns_to_it(owner, teammate, api_for):
    demo = start_demo(api_for(owner), instructor="teammate")

    response = post_turns(api_for(teammate), demo.name, [chat_turn("say-1", "instructor")])

    assert response.status_code == 201
    assert demo.instructor == teammate


def test_the_instructor_must_be_a_member_of_the_project(owner, outsider, api_for):
    response = start_recording(api_for(owner), instructor="outsider")

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "instructor", "message": "outsider is not a member of the project"}]
