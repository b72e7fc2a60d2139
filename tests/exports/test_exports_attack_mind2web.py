"""Attacks on the Mind2Web import and its corrected-release export: a password shown in the acted element, boxes
that are not numbers, all-digit action ids, hostile names and text, other projects and roles."""

import datetime as dt
import io
import json
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import IntegrityError, transaction

from annotation.lib.formats import mind2web_task_id
from annotation.models import Demonstration, ExportJob, ImportJob, Project, Role, Turn
from annotation.store.blobstore import read_blob
from tests.support.actors import make_user
from workers.exports.imports import run_import
from workers.exports.jobs import run_export

URL = "/api/projects/alpha/imports/"
STARTED = {"recording_start": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}
SECRET = "hunter2-Sesame!"
PAGE = (
    '<html backend_node_id="1" bounding_box_rect="0,0,1280,800"><body backend_node_id="2" '
    'bounding_box_rect="0,0,1280,792"><input backend_node_id="3" bounding_box_rect="10,10,200,40" type="password" '
    'name="pw"{value}></input><button backend_node_id="7" bounding_box_rect="330,10,60,40">Go</button>'
    "</body></html>"
)
BLANK = PAGE.format(value="")
MHTML = (
    b"From: <Saved by Blink>\r\nSubject: Login\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n"
    b'\ttype="text/html";\r\n\tboundary="----MultipartBoundary--x----"\r\n\r\n------MultipartBoundary--x----\r\n'
    b"Content-Type: text/html\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<html><body><input value=3D"
    b'"hunter2-Ses=\r\name!"></body></html>\r\n------MultipartBoundary--x------\r\n'
)


def action(uid, op, node="7", tag="button", value="", page=BLANK, attributes=None) -> dict:
    attributes = json.dumps(attributes or {"backend_node_id": node, "bounding_box_rect": "10,10,200,40"})
    candidate = {"tag": tag, "backend_node_id": node, "is_original_target": True, "attributes": attributes}
    return {
        "action_uid": uid,
        "operation": {"op": op, "original_op": op, "value": value},
        "raw_html": page,
        "pos_candidates": [candidate],
        "neg_candidates": [],
    }


def task(aid: str, actions: list, text="Sign in", website="shop") -> dict:
    record = {"annotation_id": aid, "website": website, "domain": "Shopping", "subdomain": "Shoes"}
    return {**record, "confirmed_task": text, "action_reprs": ["x"] * len(actions), "actions": actions}


def write(root, tasks: list, name="train.json"):
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    return root / name


def exported(client, tmp_path):
    """A Mind2Web export of every status through the API, unpacked: its folder."""
    body = {"project": "alpha", "format": "mind2web", "statuses": ["recorded", "in_review", "validated"]}
    created = client.post("/api/exports/", body, format="json")
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(tmp_path / "out", filter="data")
    return tmp_path / "out" / job.filename.removesuffix(".tar.gz")


@pytest.fixture
def researcher(alpha):
    return make_user("researcher", alpha, Role.RESEARCHER)


@pytest.mark.django_db
def test_a_password_in_the_acted_elements_html_and_attributes_is_masked_and_its_snapshots_not_kept(
    api_for, researcher, alpha, tmp_path, media_storage
):
    typed = action("u-1", "TYPE", "3", "input", SECRET, attributes={"backend_node_id": "3", "type": "password"})
    shown = PAGE.format(value=f' input_value="{SECRET}"')  # the next page shows what was typed
    attributes = {"backend_node_id": "3", "type": "password", "input_value": SECRET}
    clicked = action("u-2", "CLICK", "3", "input", page=shown, attributes=attributes)  # on the field, again
    path = write(tmp_path / "release", [task("t-login", [typed, clicked, action("u-3", "CLICK", page=shown)])])
    snapshots = tmp_path / "release" / "task" / "t-login" / "processed" / "snapshots"
    snapshots.mkdir(parents=True)
    (snapshots / "u-3_before.mhtml").write_bytes(MHTML)  # the secret, quoted-printable and split: not findable
    out = io.StringIO()
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=out)
    assert "Imported 1 task" in out.getvalue()
    assert "1 MHTML snapshot(s) not imported: a password was typed in this task" in out.getvalue()

    for turn in Turn.objects.filter(demonstration__project=alpha):
        assert SECRET not in json.dumps(turn.arguments), turn.client_id
    assert "********" in Turn.objects.get(client_id="u-2").arguments["element"]["outerHTML"]
    for stored in media_storage.rglob("*"):
        assert not stored.is_file() or b"hunter2" not in stored.read_bytes(), stored
    folder = exported(api_for(researcher), tmp_path)
    assert not list(folder.rglob("*.mhtml"))  # the task folder holds its trace (raw dump), no snapshot
    for written in folder.rglob("*"):
        assert not written.is_file() or b"hunter2" not in written.read_bytes(), written


@pytest.mark.django_db
def test_boxes_that_are_not_finite_numbers_leave_the_element_without_a_box_and_the_task_imported(
    researcher, alpha, tmp_path, media_storage
):
    page = BLANK.replace('"330,10,60,40"', '"nan,10,60,40"').replace('"0,0,1280,792"', '"1e308,0,1e308,1"')
    attributes = {"backend_node_id": "7", "bounding_box_rect": "inf,0,1,1"}
    path = write(tmp_path / "release", [task("t-nan", [action("u-1", "CLICK", page=page, attributes=attributes)])])
    out = io.StringIO()
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=out)
    assert "Imported 1 task" in out.getvalue(), out.getvalue()
    element = Turn.objects.get(client_id="u-1").arguments["element"]
    assert (element["bbox"]["x"], element["bbox"]["width"]) == (0, 0)


def edit(client, demo, revision, **body):
    answer = client.post(
        f"/review/{demo.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content


@pytest.mark.django_db
def test_all_digit_action_uids_are_indexed_by_their_place_in_changes_json(
    client, api_for, researcher, alpha, tmp_path, media_storage
):
    actions = [action(uid, "CLICK") for uid in ("9", "8", "7")]
    path = write(tmp_path / "release", [task("t-digits", actions)])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    demo = Demonstration.objects.get(source_id="t-digits")
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    edit(client, demo, 0, op="delete", turn=demo.turns.get(client_id="8").pk)
    folder = exported(api_for(researcher), tmp_path)
    entry = json.loads((folder / "changes.json").read_text())["demos"][0]
    assert entry["turns"] == [{"index": 1, "change": "deleted", "by": "ana"}]
    written = json.loads((folder / "train.json").read_text())[0]
    assert [step["action_uid"] for step in written["actions"]] == ["9", "7"]


def upload(client, data: bytes, name: str, url=URL):
    return client.post(url, {"file": SimpleUploadedFile(name, data), "format": "mind2web"}, format="multipart")


@pytest.mark.django_db
def test_a_split_file_name_longer_than_the_job_keeps_is_refused_naming_the_file(
    api_for, researcher, tmp_path, media_storage
):
    data = json.dumps([task("t-long", [action("u-1", "CLICK")])]).encode()
    answer = upload(api_for(researcher), data, f"train_{'1' * 240}.json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"][0]["field"] == "file"
    assert not ImportJob.objects.exists()


@pytest.mark.django_db
def test_a_short_password_is_masked_as_a_whole_value_and_a_long_one_wherever_it_reappears(
    researcher, alpha, tmp_path, media_storage
):
    password = {"backend_node_id": "3", "type": "password"}
    short = [
        action("s-1", "TYPE", "3", "input", "in", attributes=password),
        action("s-2", "CLICK", page=PAGE.format(value=' input_value="in"')),
    ]
    typed_twice = [
        action("l-1", "TYPE", "3", "input", SECRET, attributes=password),
        action("l-2", "TYPE", "7", "button", SECRET),  # the same secret typed where it is not a password field
    ]
    text = f"Sign in with {SECRET}"
    path = write(tmp_path / "release", [task("t-short", short), task("t-twice", typed_twice, text=text)])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())

    page = read_blob(Turn.objects.get(client_id="s-2").page_id)
    assert b'<input backend_node_id="3"' in page  # not "<********put"
    assert b'input_value="********"' in page
    assert Turn.objects.get(client_id="l-2").arguments["text"] == "********"
    demo = Demonstration.objects.get(source_id="t-twice")
    assert demo.task_description == "Sign in with ********"
    assert demo.source["masked"] is True
    for stored in media_storage.rglob("*"):
        assert not stored.is_file() or b"hunter2" not in stored.read_bytes(), stored


def export(client, release_format: str) -> ExportJob:
    body = {"project": "alpha", "format": release_format, "statuses": ["recorded", "in_review", "validated"]}
    created = client.post("/api/exports/", body, format="json")
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    return ExportJob.objects.get(pk=created.json()["id"])


@pytest.mark.django_db
def test_an_imported_task_takes_no_late_turns_and_an_edit_taken_back_leaves_it_verbatim(
    client, api_for, researcher, alpha, tmp_path, media_storage
):
    path = write(tmp_path / "release", [task("t-back", [action("u-1", "CLICK"), action("u-2", "CLICK")])])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    demo = Demonstration.objects.get(source_id="t-back")
    late = {"client_id": "late-1", "type": "chat", "timestamp": 30.0, "speaker": "navigator", "utterance": "Added"}
    answer = api_for(researcher).post(f"/api/recordings/{demo.name}/turns/", {"turns": [late]}, format="json")
    assert answer.status_code == 409, answer.content

    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    edit(client, demo, 0, op="edit_metadata", fields={"refined_task": "Sign in now"})
    edit(client, demo, 1, op="edit_metadata", fields={"refined_task": ""})
    folder = exported(api_for(researcher), tmp_path)
    assert json.loads((folder / "changes.json").read_text())["demos"][0]["status"] == "unchanged"
    original = json.dumps(json.loads(path.read_text())[0], ensure_ascii=False)
    assert original in (folder / "train.json").read_text()  # its own bytes

    weblinx = export(api_for(researcher), "weblinx")  # the project's other format exports it as recorded
    assert weblinx.status == "done", weblinx.error


@pytest.mark.django_db
def test_a_candidates_attributes_nested_too_deep_skip_its_task_with_why_not_the_job(
    api_for, researcher, alpha, tmp_path, media_storage
):
    deep = action("d-1", "CLICK")
    deep["pos_candidates"][0]["attributes"] = "[" * 100_000  # a string: the split file itself is shallow
    data = json.dumps([task("t-deep", [deep]), task("t-fine", [action("f-1", "CLICK")])]).encode()
    client = api_for(researcher)
    answer = upload(client, data, "train.json")
    assert answer.status_code == 202, answer.content
    run_import(answer.json()["id"])
    job = client.get(f"/api/imports/{answer.json()['id']}/").json()
    assert job["status"] == "done", job
    assert job["report"]["skipped"] == [
        {
            "item": "t-deep",
            "why": "train.json[0]: actions[0].pos_candidates: the target's attributes must be a JSON object string",
        }
    ]
    assert [d.source_id for d in Demonstration.objects.filter(project=alpha)] == ["t-fine"]


@pytest.mark.django_db
def test_a_discarded_task_is_dropped_by_who_discarded_it_not_by_who_edited_it_last(
    client, api_for, researcher, alpha, tmp_path, media_storage
):
    path = write(tmp_path / "release", [task("t-gone", [action("u-1", "CLICK")])])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    demo = Demonstration.objects.get(source_id="t-gone")
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    client.force_login(ana)
    edit(client, demo, 0, op="edit_metadata", fields={"discarded": True})
    client.force_login(ben)
    edit(client, demo, 1, op="edit_metadata", fields={"refined_task": "Sign in at once"})
    folder = exported(api_for(researcher), tmp_path)
    entry = json.loads((folder / "changes.json").read_text())["demos"][0]
    assert (entry["status"], entry["by"]) == ("dropped", "ana")
    assert json.loads((folder / "train.json").read_text()) == []


@pytest.mark.django_db
def test_the_same_task_in_two_split_files_is_imported_once_and_the_second_named_as_a_repeat(
    researcher, alpha, tmp_path, media_storage
):
    first = write(tmp_path / "release", [task("t-twice", [action("u-1", "CLICK")])], "train_0.json")
    second = write(tmp_path / "release", [task("t-twice", [action("u-1", "CLICK")])], "train_1.json")
    out = io.StringIO()
    call_command("import_mind2web", str(first), str(second), "--project", "alpha", "--user", "researcher", stdout=out)
    assert "skipped t-twice: train_1.json[0]: the release has task t-twice already; not imported" in out.getvalue()
    assert Demonstration.objects.filter(project=alpha).count() == 1


@pytest.mark.django_db
def test_a_password_a_page_shows_without_it_being_typed_is_masked(researcher, alpha, tmp_path, media_storage):
    autofilled = PAGE.format(value=f' value="{SECRET}"')  # the browser filled it in; nobody typed it in the task
    path = write(tmp_path / "release", [task("t-filled", [action("u-1", "CLICK", page=autofilled)])])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    assert b'value="********"' in read_blob(Turn.objects.get(client_id="u-1").page_id)
    assert Demonstration.objects.get(source_id="t-filled").source["masked"] is True
    for stored in media_storage.rglob("*"):
        assert not stored.is_file() or b"hunter2" not in stored.read_bytes(), stored


@pytest.mark.django_db
def test_a_password_typed_where_only_the_page_says_the_field_is_one_is_masked(
    researcher, alpha, tmp_path, media_storage
):
    typed = action("u-1", "TYPE", "3", "input", SECRET, attributes={"backend_node_id": "3"})  # no type given
    path = write(tmp_path / "release", [task("t-typeless", [typed])])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    assert Turn.objects.get(client_id="u-1").arguments["text"] == "********"
    assert Demonstration.objects.get(source_id="t-typeless").source["masked"] is True
    for stored in media_storage.rglob("*"):
        assert not stored.is_file() or b"hunter2" not in stored.read_bytes(), stored


@pytest.mark.django_db
def test_a_password_equal_to_a_tag_or_attribute_name_leaves_the_pages_html_whole(
    researcher, alpha, tmp_path, media_storage
):
    password = {"backend_node_id": "3", "type": "password"}
    typed = action("u-1", "TYPE", "3", "input", "button", attributes=password)
    shown = action("u-2", "CLICK", page=PAGE.format(value=' input_value="button"') + "<p>button</p>")
    path = write(tmp_path / "release", [task("t-tag", [typed, shown])])
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=io.StringIO())
    page = read_blob(Turn.objects.get(client_id="u-2").page_id)
    assert b'<button backend_node_id="7"' in page
    assert b'input_value="********"' in page
    assert b">button<" not in page
    element = Turn.objects.get(client_id="u-2").arguments["element"]
    assert element["outerHTML"].startswith("<button ")


@pytest.mark.django_db
def test_two_folders_train_files_are_told_apart_in_the_report(researcher, alpha, tmp_path, media_storage):
    good = write(tmp_path / "release" / "a", [task("t-a", [action("u-1", "CLICK")])])
    bad = write(tmp_path / "release" / "b", [{"annotation_id": "t-b", "website": "shop"}])
    out = io.StringIO()
    call_command("import_mind2web", str(good), str(bad), "--project", "alpha", "--user", "researcher", stdout=out)
    assert "skipped t-b: b/train.json[0]:" in out.getvalue()


@pytest.mark.django_db
def test_a_task_with_the_id_the_export_gives_a_recorded_demo_is_skipped_with_why(
    researcher, alpha, tmp_path, media_storage
):
    recorded = Demonstration.objects.create(project=alpha, name="recordedone", navigator=researcher, **STARTED)
    taken = mind2web_task_id(recorded.name)  # what the Mind2Web export names that demo
    path = write(
        tmp_path / "release", [task(taken, [action("u-1", "CLICK")]), task("t-free", [action("u-2", "CLICK")])]
    )
    out = io.StringIO()
    call_command("import_mind2web", str(path), "--project", "alpha", "--user", "researcher", stdout=out)
    assert f"skipped {taken}: the Mind2Web export gives recorded demo recordedone this id" in out.getvalue()
    assert list(Demonstration.objects.exclude(source_id="").values_list("source_id", flat=True)) == ["t-free"]


@pytest.mark.django_db
def test_ids_equal_but_for_case_cannot_both_be_stored_even_by_two_imports_at_once(researcher, alpha):
    """The check before writing reads the ids present; two imports at once both pass it, so the database refuses
    the second (the import lists it as imported meanwhile)."""
    Demonstration.objects.create(
        project=alpha, name="importedone", navigator=researcher, source_id="T-1", client_id="c1", **STARTED
    )
    with pytest.raises(IntegrityError, match="demo_source_id_per_project"), transaction.atomic():
        Demonstration.objects.create(
            project=alpha, name="importedtwo", navigator=researcher, source_id="t-1", client_id="c2", **STARTED
        )
    other = Project.objects.create(name="beta", title="Beta")
    Demonstration.objects.create(
        project=other, name="importedthree", navigator=researcher, source_id="t-1", client_id="c3", **STARTED
    )
