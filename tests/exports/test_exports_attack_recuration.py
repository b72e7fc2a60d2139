"""Hostile re-curation (docs/recuration.md): a WebLINX release imported, reviewed and exported as a corrected
release, attacked by the people of the project (each test was a finding of an outside attack round)."""

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Demonstration, DemoStatus, JobStatus, Project, Role, Turn
from tests.support.actors import make_user, start_demo, token_client
from tests.support.weblinx_release import download, start_export, write_demo, write_json


@pytest.fixture
def team(db, media_storage):
    project = Project.objects.create(name="recurate", title="Re-curation")
    people = {
        "admin": make_user("admin-h", project, Role.ADMIN),
        "researcher": make_user("researcher-h", project, Role.RESEARCHER),
        "ana": make_user("ana-h", project, Role.REVIEWER),
    }
    return project, people


def import_release(root: Path, user="admin-h") -> str:
    out = io.StringIO()
    call_command("import_weblinx", str(root), "--project", "recurate", "--user", user, stdout=out)
    return out.getvalue()


def edit(client, demo, revision, **body):
    answer = client.post(
        f"/review/{demo.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    return answer


def changes_of(out: Path) -> dict:
    return {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}


# --- Finding 1 --------------------------------------------------------------------------------------------------
# Was: the exporter names an imported demo by its release id (folder_name) and a platform demo by its name, both
# 7 lowercase letters in WebLINX; the import never checks a release id against the project's demo names, so a release
# id equal to a recorded demo's name makes check_demo raise "appears twice" and the whole export job fails.
# Now: the import skips, with why, a release id equal (in any case) to a demo name of the project.


def test_a_release_id_equal_to_a_recorded_demos_name_does_not_break_the_projects_exports(team, tmp_path, client):
    project, people = team
    recorded = start_demo(people["admin"], project, status=DemoStatus.VALIDATED)
    root = tmp_path / "release"
    write_demo(root, recorded.name)
    write_demo(root, "other")
    write_json(root / "splits.json", {"train": [recorded.name, "other"]})
    report = import_release(root)
    assert f"the project has a demo named {recorded.name} already" in report

    researcher = token_client(people["researcher"])
    job = start_export(researcher, "recurate")

    assert job.status == JobStatus.DONE, job.error
    out = download(researcher, job, tmp_path)
    assert sorted(path.name for path in (out / "demonstrations").iterdir()) == sorted([recorded.name, "other"])


# --- Finding 2 --------------------------------------------------------------------------------------------------
# Was: an imported demo is "recorded" with a recording end and no review edit, so check_late_turns lets its
# navigator (the importer) or any project admin add turns through POST /api/recordings/<name>/turns/; turn_changes
# knows no "added" change, so changes.json calls the demo unchanged (its original files are exported and the new
# turn silently dropped) or, once it is edited, lists the edit only while the regenerated replay.json carries the
# extra turn.
# Now: an imported demo takes no late turns or video (409), so its exported turns are the release's and its edits'.


def late_chat(client, demo, client_id="late-1"):
    turn = {"client_id": client_id, "type": "chat", "timestamp": 30.0, "speaker": "navigator", "utterance": "Added"}
    return client.post(f"/api/recordings/{demo.name}/turns/", {"turns": [turn]}, format="json")


def test_a_turn_added_to_an_imported_demo_is_never_hidden_by_changes_json(team, tmp_path, client):
    project, people = team
    root = tmp_path / "release"
    write_demo(root, "alpha")
    write_demo(root, "bravo")
    write_json(root / "splits.json", {"train": ["alpha", "bravo"]})
    import_release(root)
    alpha = Demonstration.objects.get(project=project, source_id="alpha")
    bravo = Demonstration.objects.get(project=project, source_id="bravo")
    admin = token_client(people["admin"])  # the importer: the imported demos' navigator

    added = {demo.source_id: late_chat(admin, demo).status_code for demo in (alpha, bravo)}
    assert added == {"alpha": 409, "bravo": 409}  # an imported demo takes no late turns
    client.force_login(people["ana"])
    if added["bravo"] in (200, 201):
        first = Turn.objects.get(demonstration=bravo, client_id="0")
        edit(client, bravo, 0, op="edit_text", turn=first.pk, text="Find the cheapest train")

    researcher = token_client(people["researcher"])
    out = download(researcher, start_export(researcher, "recurate"), tmp_path)
    changes = changes_of(out)
    for name, demo in (("alpha", alpha), ("bravo", bravo)):
        replay = json.loads((out / "demonstrations" / name / "replay.json").read_text())
        stored = Turn.objects.filter(demonstration=demo).count()
        assert len(replay["data"]) == stored, (
            f"{name}: the platform has {stored} turns, the export {len(replay['data'])}"
        )
        if added[name] in (200, 201):
            assert changes[name]["status"] == "changed", changes[name]
            assert any(entry["change"] == "added" for entry in changes[name]["turns"]), changes[name]["turns"]


# --- Finding 3 --------------------------------------------------------------------------------------------------
# Was: the platform orders an imported demo's turns by (timestamp, seq), not by their place in the release's
# replay.json; a release whose timestamps are not increasing is exported byte for byte while unchanged, but once one
# text is edited it is regenerated in timestamp order: turns nobody moved change places and changes.json lists the
# text edit only (its "index" values no longer match the written positions).
# Now: a demo whose turns go back in time is skipped at import, with why, rather than exported in another order.


def test_a_release_whose_timestamps_go_back_is_skipped_with_why_rather_than_reordered(team, tmp_path):
    project, people = team
    root = tmp_path / "release"
    folder = write_demo(root, "alpha")
    replay = json.loads((folder / "replay.json").read_text())
    replay["data"][3]["timestamp"] = 1.5  # the navigator's "Done." written last but stamped before the click
    write_json(folder / "replay.json", replay)
    write_demo(root, "bravo")
    write_json(root / "splits.json", {"train": ["alpha", "bravo"]})

    report = import_release(root)

    assert "replay.json: turn 3's timestamp 1.5 is before turn 2's" in report
    assert list(Demonstration.objects.filter(project=project).values_list("source_id", flat=True)) == ["bravo"]


# --- Finding 4 --------------------------------------------------------------------------------------------------
# Was: release_archive.check_members checks paths for "..", absolute and backslashes but not that each name fits
# the file system (a component over 255 bytes) nor that a member is not both a file and a folder; extractall then
# raises OSError naming the job's work folder, which run_job stores as the job's error ("OSError: [Errno 36] File
# name too long: '/…/importjob-1-…/release/…'"), shown by GET /api/imports/<id>/.
# Now: such archives are refused at upload (400 naming the member); an unpack error is said without paths.


def tar_of(members: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("hostile", "why"),
    [
        ({f"r/demonstrations/{'a' * 300}/replay.json": b"{}"}, "over 255 bytes"),  # a name no file system takes
        ({"r/demonstrations/x": b"a file", "r/demonstrations/x/replay.json": b"{}"}, "both a file and a folder"),
    ],
    ids=["name-too-long", "file-and-folder"],
)
def test_an_archive_that_cannot_be_unpacked_is_a_400_naming_the_member_without_a_server_path(
    team, settings, hostile, why
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    project, people = team
    admin = token_client(people["admin"])
    release = tar_of({"r/splits.json": b'{"train": []}', **hostile})
    answer = admin.post("/api/projects/recurate/imports/", {"file": SimpleUploadedFile("r.tar.gz", release)})
    assert answer.status_code == 400, answer.content
    assert why in answer.json()["detail"]
    assert str(settings.EXPORT_TMP_DIR) not in answer.content.decode()
    assert "Errno" not in answer.content.decode()


# --- Finding 5 --------------------------------------------------------------------------------------------------
# Was: the import masks secret URL parameters and password values in the turns it stores (mask_secret_parameters,
# mask_password_values: docs/recorder-privacy.md), but keeps replay.json byte for byte as a blob
# (do_store_parsed_json) and exports an unchanged demo from it: the corrected release carries the clear secret the
# platform masked, changes.json calls the demo "unchanged", and whether the secret leaves depends on whether anyone
# happened to edit the demo.
# Now: a demo whose turns the import masked is not exported from its replay.json; changes.json says "masked".


def test_a_secret_the_import_masked_is_not_exported_from_the_kept_replay(team, tmp_path):
    project, people = team
    root = tmp_path / "release"
    folder = write_demo(root, "alpha")
    replay = json.loads((folder / "replay.json").read_text())
    replay["data"][1]["action"]["arguments"]["metadata"]["url"] = "https://shop.example/cart?token=SECRET-TOKEN-123"
    write_json(folder / "replay.json", replay)
    write_json(root / "splits.json", {"train": ["alpha"]})
    import_release(root)
    alpha = Demonstration.objects.get(project=project, source_id="alpha")
    stored = Turn.objects.get(demonstration=alpha, client_id="1")
    assert "SECRET-TOKEN-123" not in json.dumps(stored.arguments)  # the platform masked it

    researcher = token_client(people["researcher"])
    out = download(researcher, start_export(researcher, "recurate"), tmp_path)

    exported = b"".join(path.read_bytes() for path in (out / "demonstrations" / "alpha").rglob("*") if path.is_file())
    assert b"SECRET-TOKEN-123" not in exported
    assert changes_of(out)["alpha"]["status"] != "unchanged"  # what was exported is not the release's bytes


# --- Finding 6 --------------------------------------------------------------------------------------------------
# Was: DEMO_ID takes upper and lower case and the (project, source_id) constraint and the exporter's "seen" check
# compare exactly, so a release (or two releases) with "Charlie" and "charlie" exports two folders whose names differ
# only in case: unpacked on macOS or Windows one demo's files silently overwrite the other's.
# Now: a release id differing only in case from another (in the release or the project) is skipped, with why.


def test_release_ids_differing_only_in_case_are_not_exported_as_two_folders(team, tmp_path):
    project, people = team
    root = tmp_path / "release"
    write_demo(root, "charlie", colour=1)
    write_demo(root, "Charlie", colour=2)
    write_json(root / "splits.json", {"train": ["charlie", "Charlie"]})
    import_release(root)

    researcher = token_client(people["researcher"])
    out = download(researcher, start_export(researcher, "recurate"), tmp_path)

    folders = [path.name for path in (out / "demonstrations").iterdir()]
    assert len({name.casefold() for name in folders}) == len(folders), folders


# --- Finding 7 --------------------------------------------------------------------------------------------------
# Was: releases.moment accepts any recordingStart/End below 2**53 ms, but datetime stops at year 9999 (about
# 2.5e14 ms): 1970 + timedelta raises OverflowError in write_demo, after the checks, which do_import_weblinx does not
# catch (only IntegrityError and ActionError); the import stops half-way (the demos before it are kept, the ones
# after it never imported) and the job fails with "OverflowError: date value out of range". Likewise an ISO time of
# year 1 with a positive offset is before year 1 in UTC: PostgreSQL refuses it (DataError), same outcome.
# Now: times outside 1970–9998 UTC are not taken (the recording's start falls back as for a missing one).


@pytest.mark.parametrize(
    "metadata",
    [
        {"recordingStart": 2**52, "recordingEnd": 2**52 + 1000},  # OverflowError: date value out of range
        {"recordingStartISO": "0001-01-01T00:00:00+14:00"},  # DataError: timestamp too small (before year 1)
    ],
    ids=["epoch-after-9999", "iso-before-year-1"],
)
def test_a_recording_time_out_of_range_skips_that_demo_and_imports_the_others(team, tmp_path, metadata):
    from annotation.actions.exports.releases import do_import_weblinx

    project, people = team
    root = tmp_path / "release"
    hostile = write_demo(root, "alpha")
    write_json(hostile / "metadata.json", metadata)
    write_demo(root, "bravo")
    write_json(root / "splits.json", {"train": ["alpha", "bravo"]})

    report = do_import_weblinx(root, project, people["admin"]).as_dict()

    assert [item["item"] for item in report["imported"]] in (["bravo"], ["alpha", "bravo"])


# --- Finding 8 --------------------------------------------------------------------------------------------------
# Was: write_demo starts each demo through do_start_recording with the guessable client id
# "import:<project pk>:<release id>", which is idempotent: a recording its navigator started before with that id (an
# admin through POST /api/recordings/) is reused as it is, with its own task, instructor and turns, and the release's
# turns are added to it. The imported demo is then not the release's demo (extra turn, other task) while
# changes.json calls it unchanged and the export writes the release's files.
# Now: the import's client id is random: a recording started before is never taken over.


def test_a_recording_started_before_with_the_imports_client_id_is_not_taken_over(team, tmp_path):
    from annotation.actions.exports.releases import do_import_weblinx

    project, people = team
    admin = token_client(people["admin"])
    started = admin.post(
        "/api/recordings/",
        {"project": "recurate", "client_id": f"import:{project.pk}:alpha", "task_description": "Attacker's task"},
        format="json",
    )
    assert started.status_code == 201, started.content
    name = started.json()["name"]
    turn = {"client_id": "99", "type": "chat", "timestamp": 0.1, "speaker": "navigator", "utterance": "Planted"}
    assert admin.post(f"/api/recordings/{name}/turns/", {"turns": [turn]}, format="json").status_code == 201
    root = tmp_path / "release"
    write_demo(root, "alpha")
    write_json(root / "splits.json", {"train": ["alpha"]})

    report = do_import_weblinx(root, project, people["admin"]).as_dict()

    imported = Demonstration.objects.filter(project=project, source_id="alpha").first()
    if imported is not None:  # imported: as the release has it, not the planted recording
        assert imported.name != name, report
        assert imported.task_description == "Find the cheapest flight"
        assert not Turn.objects.filter(demonstration=imported, utterance="Planted").exists()
