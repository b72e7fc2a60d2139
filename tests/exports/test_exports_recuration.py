"""A corrected release: a WebLINX release imported, edited in review by two reviewers, exported through the API and
read as a user does (the downloaded archive, loaded by the official ``weblinx`` package); ``changes.json`` names
exactly the edits and who made them, and demos nobody changed are the release's own bytes."""

import io
import json
from pathlib import Path

import pytest
import weblinx
from django.core.management import call_command

from annotation.models import Demonstration, Project, Role, Turn
from tests.support.actors import make_user, token_client
from tests.support.weblinx_release import download, start_export, write_release
from workers.exports.jobs import run_evaluation


@pytest.fixture
def world(db, media_storage, tmp_path):
    """The release imported into project ``recurate``: an admin who imports, a researcher who exports, two
    reviewers. The release had rejected delta (its ``invalid.json``)."""
    project = Project.objects.create(name="recurate", title="Re-curation")
    people = {
        "admin": make_user("admin-c", project, Role.ADMIN),
        "researcher": make_user("researcher-c", project, Role.RESEARCHER),
        "ana": make_user("ana", project, Role.REVIEWER),
        "ben": make_user("ben", project, Role.REVIEWER),
    }
    release = write_release(tmp_path / "release")
    (release / "demonstrations/delta/invalid.json").write_text('{"reason": "wrong site"}')  # the release rejected it
    call_command("import_weblinx", str(release), "--project", "recurate", "--user", "admin-c", stdout=io.StringIO())
    return project, people, release


def edit(client, demo, revision, **body):
    answer = client.post(
        f"/review/{demo.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    return answer


def turn(demo, n) -> Turn:
    return Turn.objects.get(demonstration=demo, client_id=str(n))


def export(client, tmp_path) -> Path:
    """An export started, run as the worker runs it, downloaded and unpacked; its folder."""
    return download(client, start_export(client, "recurate"), tmp_path)


def folder_bytes(folder: Path) -> dict:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def loaded(base: Path, name: str) -> list:
    """The demo's turns as the official package reads them: type, speaker, utterance, intent, text."""
    demo = weblinx.Demonstration(name, base_dir=str(base / "demonstrations"))
    return [
        (turn.type, turn.get("speaker"), turn.get("utterance"), turn.intent, (turn.args or {}).get("text"))
        for turn in weblinx.Replay.from_demonstration(demo)
    ]


def test_a_corrected_release_names_exactly_the_edits_and_keeps_unchanged_demos_byte_identical(world, client, tmp_path):
    project, people, release = world
    charlie = Demonstration.objects.get(project=project, source_id="charlie")
    client.force_login(people["ana"])
    edit(client, charlie, 0, op="edit_text", turn=turn(charlie, 0).pk, text="Find the cheapest train")
    edit(client, charlie, 1, op="delete", turn=turn(charlie, 3).pk)
    client.force_login(people["ben"])
    edit(client, charlie, 2, op="move", turn=turn(charlie, 2).pk, to_index=1)
    edit(client, charlie, 3, op="edit_metadata", fields={"category": "Travel"})
    delta = Demonstration.objects.get(project=project, source_id="delta")
    marked = token_client(people["ben"]).post(
        f"/api/review/{delta.name}/problems/",
        {"kind": "wrong_value", "turn": turn(delta, 2).pk, "note": "typed the wrong city"},
        format="json",
    )
    assert marked.status_code == 201, marked.content

    out = export(token_client(people["researcher"]), tmp_path)

    names = ["alpha", "bravo", "charlie", "delta"]  # echo's broken JSON kept it out of the import
    assert sorted(path.name for path in (out / "demonstrations").iterdir()) == names
    splits = json.loads((out / "splits.json").read_text())
    assert {split: members for split, members in splits.items() if members} == {
        "train": ["alpha", "bravo"],
        "valid": ["charlie"],
        "test_geo": ["delta"],
    }
    for name in ("alpha", "bravo", "delta"):  # nobody changed them (a problem marked is no change)
        assert folder_bytes(out / "demonstrations" / name) == folder_bytes(release / "demonstrations" / name)
        assert loaded(out, name) == loaded(release, name)
    assert loaded(out, "charlie") == [
        ("chat", "instructor", "Find the cheapest train", None, None),
        ("browser", None, None, "textInput", "Find the cheapest flight"),
        ("browser", None, None, "click", None),
    ]

    changes = {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}
    assert sorted(changes) == names
    assert {name: entry["status"] for name, entry in changes.items()} == {
        "alpha": "unchanged",
        "bravo": "unchanged",
        "charlie": "changed",
        "delta": "unchanged",
    }
    assert changes["charlie"]["turns"] == [
        {
            "index": 0,
            "change": "text",
            "from": "Find the cheapest flight",
            "to": "Find the cheapest train",
            "by": "ana",
        },
        {"index": 2, "change": "moved", "from": 2, "to": 1, "by": "ben"},
        {"index": 3, "change": "deleted", "by": "ana"},
    ]
    assert changes["charlie"]["task"] == [
        {"change": "task", "field": "category", "from": "Shopping", "to": "Travel", "by": "ben"}
    ]
    assert all(not entry["turns"] and not entry["task"] for name, entry in changes.items() if name != "charlie")
    assert changes["delta"]["problems"] == [
        {"kind": "wrong_value", "label": "Wrong value", "turn": 2, "by": "ben", "note": "typed the wrong city"}
    ]
    assert all(not entry["problems"] for name, entry in changes.items() if name != "delta")
    assert all(entry["agreement"] is None for entry in changes.values())  # no second review asked for


def test_an_undone_edit_or_a_validation_changes_nothing_a_second_review_is_the_agreement_a_rejection_drops(
    world, client, tmp_path
):
    project, people, release = world
    alpha = Demonstration.objects.get(project=project, source_id="alpha")
    bravo = Demonstration.objects.get(project=project, source_id="bravo")
    client.force_login(people["ana"])
    edited = edit(client, alpha, 0, op="edit_text", turn=turn(alpha, 0).pk, text="Something else").json()
    edit(client, alpha, 1, op="undo", edit=edited["id"])
    Project.objects.filter(pk=project.pk).update(second_review_percent=100)
    client.force_login(people["ben"])
    edit(client, alpha, 2, op="transition", action="validate")  # sent to ana, the other reviewer
    second = token_client(people["ana"]).post(
        f"/api/quality/second-reviews/{alpha.name}/",
        {"decision": "accept", "invalid_turns": [turn(alpha, 1).pk]},
        format="json",
    )
    assert second.status_code == 200, second.content
    edit(client, bravo, 0, op="transition", action="reject")
    delta = Demonstration.objects.get(project=project, source_id="delta")
    edit(client, delta, 0, op="transition", action="reopen")

    out = export(token_client(people["researcher"]), tmp_path)

    assert folder_bytes(out / "demonstrations" / "alpha") == folder_bytes(release / "demonstrations" / "alpha")
    changes = {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}
    assert (changes["alpha"]["status"], changes["alpha"]["turns"]) == ("unchanged", [])
    assert changes["alpha"]["agreement"] == {
        "first": {"reviewer": "ben", "decision": "accept"},
        "second": {"reviewer": "ana", "decision": "accept"},
        "turns_agreeing": 3,
        "turns": 4,
    }
    assert (changes["bravo"]["status"], changes["bravo"]["by"]) == ("dropped", "ben")
    assert weblinx.Demonstration("bravo", base_dir=str(out / "demonstrations")).is_valid() is False  # invalid.json
    assert (changes["delta"]["status"], changes["delta"]["task"]) == (
        "changed",
        [{"change": "status", "field": "status", "from": "invalid", "to": "in_review", "by": "ben"}],
    )
    assert weblinx.Demonstration("delta", base_dir=str(out / "demonstrations")).is_valid() is True


def test_an_evaluation_of_the_imported_release_names_its_demos_by_their_release_ids(world, client):
    """Scoring runs on the same export: predictions name a demo as the release did (``charlie``), never by its
    platform name, and a prediction of the release's own click scores as the release's action."""
    project, people, _ = world
    charlie = Demonstration.objects.get(project=project, source_id="charlie")
    client.force_login(people["ana"])
    edit(client, charlie, 0, op="transition", action="validate")  # evaluations score validated demos
    researcher = token_client(people["researcher"])
    body = {"project": "recurate", "format": "weblinx", "split": "valid"}
    predictions = {
        "release id": [{"demo_name": "charlie", "turn_index": 1, "output_predicted": 'click(uid="a1b2c3")'}],
        "platform name": [{"demo_name": charlie.name, "turn_index": 1, "output_predicted": 'click(uid="a1b2c3")'}],
    }
    results = {}
    for named, listed in predictions.items():
        created = researcher.post("/api/evaluations/", {**body, "predictions": listed}, format="json")
        assert created.status_code == 202, created.content
        run_evaluation(created.json()["id"])
        results[named] = researcher.get(f"/api/evaluations/{created.json()['id']}/").json()

    assert results["release id"]["status"] == "done", results["release id"]["error"]
    assert results["release id"]["results"]["aggregate"]["intent_match"] == 1.0
    assert [row["demo_name"] for row in results["release id"]["results"]["per_turn"]] == ["charlie"]
    assert results["platform name"]["status"] == "failed"
    assert charlie.name in results["platform name"]["error"]
