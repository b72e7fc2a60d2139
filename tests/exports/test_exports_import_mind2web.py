"""Importing a Mind2Web release (its split JSON files) for re-curation: through the API job and the command, the
platform's own export round-tripped, a release written from the format doc (odd text, a missing page, a malformed
task, a file that is not the format), importing twice, roles, and the imported task on the review page."""

import dataclasses
import io
import json
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.lib.splits import MIND2WEB_SPLITS
from annotation.models import Demonstration, DemoStatus, ExportJob, ImportJob, Project, Role, Website
from annotation.store.blobstore import read_blob
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.jobs import poll_job
from tests.support.mind2web_release import MHTML, ODD, edit, task, write_release
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters.mind2web import Mind2WebExporter
from workers.exports.imports import run_import
from workers.exports.jobs import run_export

URL = "/api/projects/alpha/imports/"


def tar_gz(root) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root, arcname="mind2web")
    return buffer.getvalue()


def upload(client, data: bytes, name="release.tar.gz", url=URL, release_format="mind2web"):
    return client.post(url, {"file": SimpleUploadedFile(name, data), "format": release_format}, format="multipart")


def imported(client, data: bytes, name="release.tar.gz", url=URL) -> dict:
    """Upload, run the job as the worker does, and read it back through the API."""
    answer = upload(client, data, name, url)
    assert answer.status_code == 202, answer.content
    run_import(answer.json()["id"])
    return client.get(f"/api/imports/{answer.json()['id']}/").json()


def exported(client, project: str, tmp_path, with_folder=False):
    """A Mind2Web export of every status through the API, downloaded: ``{split: [records]}``."""
    body = {"project": project, "format": "mind2web", "statuses": ["recorded", "in_review", "validated"]}
    created = client.post("/api/exports/", body, format="json")
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    into = tmp_path / f"download-{job.pk}"
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    folder = into / job.filename.removesuffix(".tar.gz")
    records = {split: json.loads((folder / f"{split}.json").read_text()) for split in MIND2WEB_SPLITS}
    return (records, folder) if with_folder else records


def regenerate(project: str, tmp_path) -> dict:
    """``{annotation_id: record + split}`` of the project's tasks regenerated from their turns (none verbatim)."""
    statuses = ["recorded", "in_review", "validated"]
    found = export_demos(Project.objects.get(name=project), "mind2web", statuses)
    demos = [dataclasses.replace(demo, original=()) for demo in found]
    out = tmp_path / f"regenerated-{project}"
    Mind2WebExporter().export(demos, out, storage_blobs())
    return {
        record["annotation_id"]: {**record, "split": split}
        for split in MIND2WEB_SPLITS
        for record in json.loads((out / f"{split}.json").read_text())
    }


def summary(records: dict) -> dict:
    """What a round trip keeps, per task: split, website facts, action_reprs, each action's element and operation."""
    found = {}
    for split, tasks in records.items():
        for record in tasks:
            steps = []
            for step in record["actions"]:
                target = next(c for c in step["pos_candidates"] if c["is_original_target"])
                steps.append((step["operation"], target["tag"], target["attributes"]))
            facts = (split, record["website"], record["domain"], record["subdomain"], tuple(record["action_reprs"]))
            found[record["confirmed_task"]] = (facts, steps)
    return found


@pytest.fixture
def people(alpha):
    return {
        "researcher": make_user("researcher", alpha, Role.RESEARCHER),
        "admin": make_user("admin-m", alpha, Role.ADMIN),
        "reviewer": make_user("reviewer", alpha, Role.REVIEWER),
        "annotator": make_user("annotator", alpha, Role.ANNOTATOR),
    }


@pytest.mark.django_db
def test_the_platforms_own_export_imports_and_exports_again_the_same(api_for, alpha, tmp_path, media_storage):
    corpus = ingest_corpus(project="corpus", demos=3, turns=24, elements=60, status=DemoStatus.VALIDATED)
    researcher = make_user("researcher", corpus[0].project, Role.RESEARCHER)
    alpha.memberships.create(user=researcher, role=Role.RESEARCHER)
    client = api_for(researcher)
    first = exported(client, "corpus", tmp_path)
    assert sum(len(tasks) for tasks in first.values()) == 3
    release = tmp_path / "release"
    release.mkdir()
    for split, tasks in first.items():
        (release / f"{split}.json").write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    job = imported(client, tar_gz(release))
    assert job["status"] == "done", job
    assert (job["format"], job["report"]["demos"], job["report"]["skipped"]) == ("mind2web", 3, [])
    again = exported(client, "alpha", tmp_path)
    by_id = lambda records: {s: sorted(t, key=lambda r: r["annotation_id"]) for s, t in records.items()}  # noqa: E731
    assert by_id(again) == by_id(first)  # unchanged tasks: the release's records
    regenerated = regenerate("alpha", tmp_path)
    assert summary({"": list(regenerated.values())}) == summary({"": [r for tasks in first.values() for r in tasks]})
    assert {split: sorted(r["annotation_id"] for r in tasks) for split, tasks in first.items()} == {
        split: sorted(aid for aid, r in regenerated.items() if r["split"] == split) for split in MIND2WEB_SPLITS
    }
    ids = sorted(record["annotation_id"] for tasks in first.values() for record in tasks)
    assert sorted(record["annotation_id"] for tasks in again.values() for record in tasks) == ids
    uids = sorted(step["action_uid"] for tasks in first.values() for record in tasks for step in record["actions"])
    assert (
        sorted(step["action_uid"] for tasks in again.values() for record in tasks for step in record["actions"]) == uids
    )
    listed = client.get("/api/demonstrations/", {"project__name": "alpha"}).json()["results"]
    assert sorted(row["source_id"] for row in listed) == ids


@pytest.mark.django_db
def test_a_release_imports_its_good_tasks_and_lists_the_rest_with_why(api_for, people, alpha, tmp_path, media_storage):
    client = api_for(people["researcher"])
    job = imported(client, tar_gz(write_release(tmp_path / "release")))
    assert job["status"] == "done", job
    report = job["report"]
    assert (report["demos"], report["turns"], report["pages"]) == (4, 12, 11)
    assert [item["item"] for item in report["skipped"]] == ["t-bad"]
    assert "test_task.json[1]" in report["skipped"][0]["why"]
    assert [note["item"] for note in report["notes"]] == ["t-missing"]
    assert "no page" in report["notes"][0]["note"]
    splits = {row["item"]: row["split"] for row in report["imported"]}
    assert splits == {"t-odd": "train", "t-missing": "train", "t-plain": "test_task", "t-web": "test_website"}
    sites = {site.name: (site.domain, site.subdomain) for site in Website.objects.filter(project=alpha)}
    assert sites == {"shoeshop": ("Shopping", "Shoes"), "carhire": ("Travel", "Car")}
    records, folder = exported(client, "alpha", tmp_path, with_folder=True)
    snapshot = folder / "task" / "t-plain" / "processed" / "snapshots" / "t-plain-1_before.mhtml"
    assert snapshot.read_bytes() == MHTML  # an unchanged task's snapshot, written back where the raw dump had it
    by_id = {record["annotation_id"]: (split, record) for split, tasks in records.items() for record in tasks}
    assert {aid: split for aid, (split, _) in by_id.items()} == splits
    odd = by_id["t-odd"][1]  # unchanged: the release's own record
    assert odd == task("t-odd", ODD)
    regenerated = regenerate("alpha", tmp_path)["t-odd"]
    assert regenerated["confirmed_task"] == ODD
    assert regenerated["action_reprs"] == [
        f"[input]  Search -> TYPE: {ODD}",
        "[select]  size -> SELECT: Medium",
        "[button]  Go -> CLICK",
    ]
    assert [step["operation"]["value"] for step in regenerated["actions"]] == [ODD, "Medium", ""]
    missing = by_id["t-missing"][1]
    assert [step["operation"]["op"] for step in missing["actions"]] == ["TYPE", "SELECT", "CLICK"]
    stored = Demonstration.objects.get(project=alpha, source_id="t-odd")
    assert stored.source["files"]["task.json"]
    assert (stored.category, stored.subcategory, stored.mode) == ("Shopping", "Shoes", "task")

    # The same release again in another file: nothing new, the job fails saying so; nothing duplicated.
    again = imported(client, (tmp_path / "release" / "test_task.json").read_bytes(), "test_task.json")
    assert again["status"] == "failed"
    assert "1 in project 'alpha' already, 1 skipped for other reasons" in again["error"]
    assert Demonstration.objects.filter(project=alpha).count() == 4


@pytest.mark.django_db
def test_the_original_task_object_is_kept_byte_for_byte(api_for, people, alpha, tmp_path, media_storage):
    release = write_release(tmp_path / "release")
    text = (release / "train.json").read_bytes().decode()
    imported(api_for(people["admin"]), (release / "train.json").read_bytes(), "train.json")
    stored = Demonstration.objects.get(project=alpha, source_id="t-odd")
    kept = read_blob(stored.source["files"]["task.json"]).decode()
    assert kept in text
    assert json.loads(kept)["annotation_id"] == "t-odd"


@pytest.mark.django_db
def test_a_file_that_is_not_the_format_is_refused_naming_the_part(api_for, people, tmp_path, media_storage):
    client = api_for(people["researcher"])
    cases = [
        (b'{"annotation_id": "x"}', "train.json", "expected a JSON list of task records"),
        (b'[{"annotation_id": "x"}, 3]', "train.json", "train.json[1]"),
        (b"[]", "notes.json", "not a split file"),
        (b"[{", "test_task.json", "not valid JSON"),
    ]
    for data, name, part in cases:
        answer = upload(client, data, name)
        assert answer.status_code == 400, (name, answer.content)
        assert part in answer.json()["detail"]
        assert "nothing was imported" in answer.json()["detail"]
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "readme.txt").write_text("no split files")
    answer = upload(client, tar_gz(stray))
    assert answer.status_code == 400
    assert "no split file" in answer.json()["detail"]
    answer = upload(client, b"[]", "train.json", release_format="webarena")
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["field"] == "format"
    assert not ImportJob.objects.exists()
    assert not Demonstration.objects.exists()


@pytest.mark.django_db
def test_researchers_and_admins_import_other_roles_403_outsiders_404(
    api_for, people, outsider, tmp_path, media_storage
):
    release = write_release(tmp_path / "release")
    data = (release / "test_website.json").read_bytes()
    for role, name in (("researcher", "test_website.json"), ("admin", "test_task.json")):
        answer = upload(api_for(people[role]), (release / name).read_bytes(), name)
        assert answer.status_code == 202, answer.content
        assert answer.json()["format"] == "mind2web"
    for role in ("reviewer", "annotator"):
        answer = upload(api_for(people[role]), data, "test_website.json")
        assert answer.status_code == 403
    assert upload(api_for(outsider), data, "test_website.json").status_code == 404
    job = ImportJob.objects.first()
    assert api_for(people["reviewer"]).get(f"/api/imports/{job.pk}/").status_code == 403
    assert api_for(outsider).get(f"/api/imports/{job.pk}/").status_code == 404


@pytest.mark.django_db
def test_the_command_imports_split_files_and_fails_when_nothing_is_new(people, alpha, tmp_path, media_storage):
    release = write_release(tmp_path / "release")
    files = [str(release / name) for name in ("train.json", "test_task.json")]
    out = io.StringIO()
    call_command("import_mind2web", *files, "--project", "alpha", "--user", "researcher", stdout=out)
    assert "Imported 3 tasks (9 actions, 8 pages) into 'alpha'" in out.getvalue()
    assert "skipped t-bad" in out.getvalue()
    with pytest.raises(CommandError, match="already"):
        call_command("import_mind2web", *files, "--project", "alpha", stdout=io.StringIO())
    with pytest.raises(CommandError, match="not a Mind2Web release"):
        call_command("import_mind2web", str(release / "nothing.json"), "--project", "alpha", stdout=io.StringIO())
    with pytest.raises(CommandError, match="import a release"):
        call_command("import_mind2web", *files, "--project", "alpha", "--user", "reviewer", stdout=io.StringIO())
    assert Demonstration.objects.filter(project=alpha).count() == 3


@pytest.mark.django_db
def test_an_imported_task_opens_on_the_review_page(client, people, alpha, tmp_path, media_storage):
    release = write_release(tmp_path / "release")
    call_command("import_mind2web", str(release / "train.json"), "--project", "alpha", stdout=io.StringIO())
    client.force_login(people["reviewer"])
    for demo in Demonstration.objects.filter(project=alpha):
        page = client.get(f"/review/{demo.name}/")
        assert page.status_code == 200
        assert "Café «naïve»" in page.content.decode() or demo.source_id == "t-missing"
        assert "<script>alert(1)</script>" not in page.content.decode()


@pytest.mark.django_db
def test_a_password_typed_in_a_task_is_masked_everywhere_it_is_stored(api_for, people, alpha, tmp_path, media_storage):
    secret = "hunter2-Sesame!"
    login = task("t-login", "Sign in")
    login["actions"][0]["pos_candidates"][0]["attributes"] = json.dumps({"backend_node_id": "3", "type": "password"})
    login["actions"][0]["operation"]["value"] = secret
    login["actions"][1]["raw_html"] = login["actions"][1]["raw_html"].replace(
        'aria_label="Search"', f'aria_label="Search" type="password" input_value="{secret}"'
    )
    data = json.dumps([login, task("t-plain", "Buy socks")]).encode()
    job = imported(api_for(people["researcher"]), data, "train.json")
    assert job["report"]["demos"] == 2
    records = {r["annotation_id"]: r for r in exported(api_for(people["researcher"]), "alpha", tmp_path)["train"]}
    assert records["t-login"]["actions"][0]["operation"]["value"] == "********"
    assert secret not in json.dumps(records)
    for path in media_storage.rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    stored = Demonstration.objects.get(project=alpha, source_id="t-login")
    assert stored.source["masked"] is True
    assert "task.json" not in stored.source["files"]
    assert Demonstration.objects.get(project=alpha, source_id="t-plain").source["files"]["task.json"]


@pytest.mark.django_db
def test_a_corrected_release_keeps_unchanged_tasks_verbatim_and_lists_the_changes(
    client, api_for, people, alpha, tmp_path, media_storage
):
    release = write_release(tmp_path / "release")
    files = [str(release / name) for name in ("train.json", "test_task.json", "test_website.json")]
    call_command("import_mind2web", *files, "--project", "alpha", stdout=io.StringIO())
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    demo = {row.source_id: row for row in Demonstration.objects.filter(project=alpha)}
    client.force_login(ana)
    step = demo["t-plain"].turns.get(client_id="t-plain-2")
    edit(client, demo["t-plain"], 0, op="delete", turn=step.pk)
    client.force_login(ben)
    edit(client, demo["t-web"], 0, op="edit_metadata", fields={"refined_task": "Rent a small car"})
    edit(client, demo["t-missing"], 0, op="edit_metadata", fields={"discarded": True})

    researcher = api_for(people["researcher"])
    body = {"project": "alpha", "format": "mind2web", "statuses": ["recorded", "in_review", "validated"]}
    created = researcher.post("/api/exports/", body, format="json")
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    data = b"".join(researcher.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(tmp_path / "out", filter="data")
    out = tmp_path / "out" / job.filename.removesuffix(".tar.gz")

    train = (out / "train.json").read_text(encoding="utf-8")
    original = json.loads((release / "train.json").read_text(encoding="utf-8"))[0]
    kept = next(r for r in [json.loads(train)][0] if r["annotation_id"] == "t-odd")
    assert kept == original
    assert json.dumps(original, ensure_ascii=False, indent=1).replace("\n", "\n ") in train  # its own bytes
    assert [r["annotation_id"] for r in json.loads(train)] == ["t-odd"]  # t-missing discarded
    snapshot = out / "task" / "t-plain" / "processed" / "snapshots" / "t-plain-1_before.mhtml"
    assert snapshot.read_bytes() == MHTML  # the raw dump's snapshot, imported and written back where it was
    plain = json.loads((out / "test_task.json").read_text())[0]
    assert [a["action_uid"] for a in plain["actions"]] == ["t-plain-1", "t-plain-3"]
    assert json.loads((out / "test_website.json").read_text())[0]["confirmed_task"] == "Rent a small car"

    changes = {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}
    assert {name: entry["status"] for name, entry in changes.items()} == {
        "t-odd": "unchanged",
        "t-missing": "dropped",
        "t-plain": "changed",
        "t-web": "changed",
    }
    assert changes["t-plain"]["turns"] == [{"index": 1, "change": "deleted", "by": "ana"}]
    assert changes["t-web"]["task"] == [
        {"change": "task", "field": "refined_task", "from": "", "to": "Rent a small car", "by": "ben"}
    ]
    assert changes["t-missing"]["by"] == "ben"
    assert json.loads((out / "changes.json").read_text())["format"] == "mind2web"

    # The re-curation API and page say what changes.json says, for a Mind2Web release too.
    listed = researcher.get("/api/projects/alpha/recuration/").json()
    assert listed["counts"]["status"] == {"unchanged": 1, "changed": 2, "dropped": 1}
    for release_id, entry in changes.items():
        item = researcher.get(f"/api/projects/alpha/recuration/{release_id}/")
        assert item.status_code == 200, item.content
        assert item.json()["changes"] == entry
    client.force_login(ana)
    page = client.get("/projects/alpha/recuration/t-plain/")
    assert page.status_code == 200
    assert b"ana" in page.content
    assert b"deleted" in page.content


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_imports_an_uploaded_split_archive_and_refuses_it_the_second_time(
    api_for, people, alpha, worker, tmp_path, media_storage
):
    client = api_for(people["researcher"])
    data = tar_gz(write_release(tmp_path / "release"))
    first = poll_job(client, f"/api/imports/{upload(client, data).json()['id']}/")[-1]
    assert (first["status"], first["format"], first["progress"]) == ("done", "mind2web", 1.0), first
    assert first["report"]["demos"] == 4
    second = upload(client, data)  # the same file again: refused at submission, naming the job that took it
    assert second.status_code == 409
    assert f"import {first['id']} (done, 'release.tar.gz') took it" in second.json()["detail"]
    other = (tmp_path / "release" / "train.json").read_bytes()  # a file of the release's tasks: a failed job
    third = poll_job(client, f"/api/imports/{upload(client, other, 'train.json').json()['id']}/")[-1]
    assert third["status"] == "failed"
    assert "every task of this release is in project 'alpha' already" in third["error"]
    assert Demonstration.objects.filter(project=alpha).count() == 4


@pytest.mark.django_db
def test_a_task_id_twice_in_a_release_or_equal_to_a_demo_name_is_skipped_with_why(
    people, alpha, tmp_path, media_storage
):
    root = tmp_path / "release"
    root.mkdir()
    (root / "train.json").write_text(json.dumps([task("t-one", "Buy socks")]))
    (root / "test_task.json").write_text(json.dumps([task("T-ONE", "Buy shoes"), task("t-two", "Buy hats")]))
    out = io.StringIO()
    call_command(
        "import_mind2web", str(root / "train.json"), str(root / "test_task.json"), "--project", "alpha", stdout=out
    )
    assert "Imported 2 tasks" in out.getvalue()
    assert "skipped t-one: train.json[0]: the release has task T-ONE already (ids equal but for case)" in out.getvalue()
    name = Demonstration.objects.get(source_id="t-two").name
    (root / "test_website.json").write_text(json.dumps([task(name, "Rent a car")]))
    with pytest.raises(CommandError, match="already"):
        call_command("import_mind2web", str(root / "test_website.json"), "--project", "alpha", stdout=io.StringIO())
    assert Demonstration.objects.filter(project=alpha).count() == 2


@pytest.mark.django_db
def test_a_large_split_file_is_checked_by_the_worker_which_names_the_part(
    api_for, people, monkeypatch, settings, tmp_path, media_storage
):
    monkeypatch.setattr("annotation.actions.exports.imports.CHECKED_SPLIT_BYTES", 10)
    client = api_for(people["researcher"])
    answer = upload(client, b'  {"annotation_id": "x", "website": "w"}', "train.json")
    assert answer.status_code == 400
    assert "train.json: expected a JSON list of task records" in answer.json()["detail"]
    job = imported(client, b'[{"annotation_id": "x"}, 3]', "train.json")
    assert job["status"] == "failed"
    assert "not a Mind2Web release: train.json[1]: expected a task record" in job["error"]
    assert not Demonstration.objects.exists()

    settings.INGEST_MAX_BLOB_BYTES = 300  # a page over the blob limit skips its task
    release = write_release(tmp_path / "release")
    job = imported(client, (release / "test_task.json").read_bytes(), "test_task.json")
    assert job["status"] == "failed"
    assert "t-plain" in [item["item"] for item in job["report"]["skipped"]]
    assert "actions[0].raw_html: " in job["report"]["skipped"][0]["why"]
    assert "at most 300 allowed" in job["report"]["skipped"][0]["why"]
