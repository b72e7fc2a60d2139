"""Blobs are stored once but answered per project: another project's annotator who knows a sha256 can neither
reference that blob in a turn of their own (and then read it), nor learn from HEAD, PUT or ``missing`` whether any
other project has it. Uploading the bytes themselves gives their project the right, without a second copy."""

import importlib

import pytest
from django.apps import apps

from annotation.models import Blob, ProjectBlob, Turn
from tests.support.payloads import MHTML, BlobFile, browser_turn, intent_arguments, png_bytes, state_blobs, state_refs
from tests.support.recorder import (
    blob_url,
    missing,
    post_turns,
    put_blob,
    put_raw,
    start_demo,
    stored_files,
    upload_blobs,
)


@pytest.fixture
def owner_client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def outsider_client(outsider, api_for):
    return api_for(outsider)


@pytest.fixture
def alphas_blobs(owner_client):
    """A screenshot, page and bboxes uploaded to alpha and used by a turn of the owner's recording there."""
    files = state_blobs(seed=11)
    upload_blobs(owner_client, files.values())
    demo = start_demo(owner_client, client_id="alpha-rec")
    assert post_turns(owner_client, demo.name, [browser_turn("b-0", **state_refs(files))]).status_code == 201
    return files


def test_a_turn_may_not_reference_another_projects_blob_and_so_never_serves_it(outsider_client, alphas_blobs):
    theirs = start_demo(outsider_client, project="beta", client_id="beta-rec")
    refs = state_refs(alphas_blobs)

    response = post_turns(outsider_client, theirs.name, [browser_turn("steal", **refs)])

    assert response.status_code == 400
    errors = {error["field"]: error["message"] for error in response.json()["errors"]}
    assert set(errors) == {"turns[0].screenshot", "turns[0].page", "turns[0].bboxes"}
    assert "has not been uploaded to this project" in errors["turns[0].screenshot"]
    assert "?project=beta" in errors["turns[0].screenshot"]
    assert not Turn.objects.filter(demonstration=theirs).exists()
    assert outsider_client.get(f"/api/blobs/{refs['screenshot']}").status_code == 404


def test_head_put_and_missing_answer_for_the_asking_project_only(owner_client, outsider_client, alphas_blobs):
    shot = alphas_blobs["screenshot"]
    never = BlobFile(png_bytes(color=(9, 9, 9)), "image/png")

    assert owner_client.head(blob_url(shot.sha256, "alpha")).status_code == 200
    # beta: alpha's blob looks exactly like one that nobody has.
    for sha in (shot.sha256, never.sha256):
        head = outsider_client.head(blob_url(sha, "beta"))
        assert head.status_code == 404
        assert "X-Blob-Size" not in head
    listed = missing(outsider_client, [shot.sha256, never.sha256], "beta")
    assert listed.json() == {"missing": [shot.sha256, never.sha256]}
    assert missing(owner_client, [shot.sha256, never.sha256], "alpha").json() == {"missing": [never.sha256]}
    # Probing alpha from beta's account is refused as for any project not yours.
    assert outsider_client.head(blob_url(shot.sha256, "alpha")).status_code == 404
    assert missing(outsider_client, [shot.sha256], "alpha").status_code == 404


def test_uploading_the_same_bytes_gives_the_project_the_right_without_a_second_copy(
    outsider_client, alphas_blobs, media_storage
):
    shot, files_before = alphas_blobs["screenshot"], len(stored_files(media_storage))
    fresh = BlobFile(png_bytes(color=(1, 99, 7)), "image/png")

    again = put_blob(outsider_client, shot, project="beta")
    new = put_blob(outsider_client, fresh, project="beta")

    assert (again.status_code, new.status_code) == (201, 201)  # the same answer: nothing tells it alpha had it
    assert again.json().keys() == new.json().keys()
    assert len(stored_files(media_storage)) == files_before + 1  # only the fresh bytes were written
    assert Blob.objects.filter(sha256=shot.sha256).count() == 1
    assert set(ProjectBlob.objects.filter(blob=shot.sha256).values_list("project__name", flat=True)) == {
        "alpha",
        "beta",
    }
    assert put_blob(outsider_client, shot, project="beta").status_code == 200  # now beta's own
    assert outsider_client.head(blob_url(shot.sha256, "beta")).status_code == 200
    theirs = start_demo(outsider_client, project="beta", client_id="beta-rec")
    assert post_turns(outsider_client, theirs.name, [browser_turn("b-0", screenshot=shot.sha256)]).status_code == 201
    assert outsider_client.get(f"/api/blobs/{shot.sha256}").status_code == 200


def test_knowing_the_sha256_without_the_bytes_gives_no_right(outsider_client, alphas_blobs):
    shot = alphas_blobs["screenshot"]

    response = put_raw(outsider_client, png_bytes(color=(200, 1, 1)), "image/png", shot.sha256, project="beta")

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "sha256", "message": "does not match body"}]
    assert not ProjectBlob.objects.filter(project__name="beta").exists()


def test_a_blob_request_without_a_project_says_which_field_is_missing(owner_client):
    shot = BlobFile(png_bytes(), "image/png")

    head = owner_client.head(blob_url(shot.sha256, project=None))
    put = put_blob(owner_client, shot, project=None)
    asked = owner_client.post("/api/blobs/missing/", {"sha256": [shot.sha256]}, format="json")

    assert (head.status_code, put.status_code, asked.status_code) == (400, 400, 400)
    for response in (put, asked):
        assert response.json()["errors"] == [{"field": "project", "message": "required"}]
        assert "?project=<name>" in response.json()["detail"]
    assert not Blob.objects.exists()


def test_a_video_chunk_may_not_use_another_projects_blob(owner_client, outsider_client):
    chunk = BlobFile(b"\x1a\x45\xdf\xa3" + b"webm-bytes" * 100, "video/webm")
    assert put_blob(owner_client, chunk).status_code == 201
    theirs = start_demo(outsider_client, project="beta", client_id="beta-rec")

    body = {"index": 0, "blob": chunk.sha256, "started_at": 0.0}
    response = outsider_client.post(f"/api/recordings/{theirs.name}/video/", body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "blob"
    assert "?project=beta" in response.json()["errors"][0]["message"]


def test_the_migration_grants_existing_blobs_to_the_projects_whose_turns_use_them(owner_client, alphas_blobs):
    lonely = BlobFile(png_bytes(color=(3, 3, 3)), "image/png")
    put_blob(owner_client, lonely)
    ProjectBlob.objects.all().delete()  # as before rights existed
    migration = importlib.import_module("annotation.migrations.0006_blob_rights")

    migration.grant_referenced_blobs(apps, None)

    granted = set(ProjectBlob.objects.values_list("project__name", "blob_id"))
    assert granted == {("alpha", blob.sha256) for blob in alphas_blobs.values()}  # not the unused upload


def test_a_step_snapshot_reference_is_checked_like_every_blob(owner_client, outsider_client, alphas_blobs):
    """Step mode's MHTML (``arguments.properties.mhtml``): only a ``multipart/related`` blob of the turn's own
    project; the export copies it, so another project's would leak."""
    snapshot = BlobFile(MHTML, "multipart/related")
    upload_blobs(owner_client, [snapshot])

    def with_snapshot(client_id, sha):
        arguments = intent_arguments("click")
        arguments["properties"] = {"mhtml": sha}
        return browser_turn(client_id, arguments=arguments, **state_refs(alphas_blobs))

    theirs = start_demo(outsider_client, project="beta", client_id="beta-snap")
    upload_blobs(outsider_client, alphas_blobs.values(), project="beta")
    refused = post_turns(outsider_client, theirs.name, [with_snapshot("steal", snapshot.sha256)])
    assert refused.status_code == 400
    assert [error["field"] for error in refused.json()["errors"]] == ["turns[0].arguments.properties.mhtml"]

    mine = start_demo(owner_client, client_id="alpha-snap")
    wrong = post_turns(owner_client, mine.name, [with_snapshot("png", alphas_blobs["screenshot"].sha256)])
    assert wrong.status_code == 400
    assert "expected multipart/related" in wrong.json()["errors"][0]["message"]
    malformed = post_turns(owner_client, mine.name, [with_snapshot("bad", "not-a-sha")])
    assert malformed.status_code == 400
    assert malformed.json()["errors"][0]["field"] == "turns[0].arguments.properties.mhtml"
    assert post_turns(owner_client, mine.name, [with_snapshot("ok", snapshot.sha256)]).status_code == 201


def test_the_admins_blob_page_links_the_file_where_it_is_served(alphas_blobs, client, django_user_model):
    """The admin shows a blob's file as a link to ``/api/blobs/<sha256>`` (``/media/`` is not served)."""
    screenshot = alphas_blobs["screenshot"]
    client.force_login(django_user_model.objects.create_superuser("root", "root@x.org", "pw"))
    page = client.get(f"/admin/annotation/blob/{screenshot.sha256}/change/").content.decode()

    assert f'href="/api/blobs/{screenshot.sha256}"' in page
    assert "/media/" not in page
    assert b"".join(client.get(f"/api/blobs/{screenshot.sha256}").streaming_content) == screenshot.data
