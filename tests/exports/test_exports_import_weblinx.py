"""`manage.py import_weblinx`: a WebLINX release into a project, read back through the API and the review page, and
the round trip (export → import into a new project → export) checked with the official ``weblinx`` package."""

import io
import json
from pathlib import Path

import pytest
import weblinx
from django.core.management import CommandError, call_command

from annotation.models import Demonstration, DemoStatus, Membership, Project, Role, Turn
from tests.support.actors import make_user, token_client
from tests.support.corpus import ingest_corpus
from tests.support.weblinx_release import ODD, write_demo, write_json, write_release


@pytest.fixture
def team(db):
    """A project with an admin, a researcher and a reviewer; the admin imports."""
    project = Project.objects.create(name="recurate", title="Re-curation")
    people = {role: make_user(f"{role}-r", project, role) for role in (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)}
    return project, people


@pytest.fixture
def release(tmp_path):
    """Five demos over three splits: odd characters, a missing screenshot, and one with broken replay JSON."""
    return write_release(tmp_path / "release")


def run(directory, project="recurate", user="admin-r") -> str:
    out = io.StringIO()
    call_command("import_weblinx", str(directory), "--project", project, "--user", user, stdout=out)
    return out.getvalue()


def listed(client, project="recurate") -> dict:
    """The demos list API: ``{source_id: row}``."""
    answer = client.get("/api/demonstrations/", {"project__name": project, "page_size": 100})
    assert answer.status_code == 200, answer.content
    return {row["source_id"]: row for row in answer.json()["results"]}


def test_release_imports_each_demo_with_its_split_and_skips_the_broken_one(team, release):
    project, people = team
    output = run(release)

    assert "Imported 4 demos (16 turns, 7 screenshots, 8 pages)" in output
    assert "skipped echo: replay.json: not valid JSON" in output
    assert "note: bravo: turn 2: screenshots/screenshot-2-0.png is missing; imported without it" in output
    rows = listed(token_client(people[Role.RESEARCHER]))
    assert sorted(rows) == ["alpha", "bravo", "charlie", "delta"]
    assert {sid: row["split"] for sid, row in rows.items()} == {
        "alpha": "train",
        "bravo": "train",
        "charlie": "valid",
        "delta": "test_geo",
    }
    assert all(row["turn_count"] == 4 and row["status"] == "recorded" for row in rows.values())
    assert rows["alpha"]["task_description"] == ODD
    assert not Demonstration.objects.filter(project=project, source_id="echo").exists()


def test_odd_text_is_stored_as_given_and_escaped_on_the_review_page(team, release, client):
    project, people = team
    run(release)
    demo = Demonstration.objects.get(project=project, source_id="alpha")
    turns = list(Turn.objects.filter(demonstration=demo).order_by("seq"))
    assert turns[0].utterance == ODD
    assert turns[2].arguments["text"] == ODD
    assert [turn.screenshot_id is not None for turn in turns] == [False, True, True, False]

    client.force_login(people[Role.ADMIN])
    page = client.get(f"/review/{demo.name}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "\\u003Cscript\\u003E" in html


def test_the_same_release_twice_is_refused_and_nothing_is_duplicated(team, release):
    project, people = team
    run(release)
    before = Demonstration.objects.filter(project=project).count()
    with pytest.raises(
        CommandError, match="no demo of this release is left to import: 4 in project 'recurate' already"
    ):
        run(release, user="researcher-r")
    assert Demonstration.objects.filter(project=project).count() == before == 4

    write_demo(release, "foxtrot", colour=6)  # a later version of the release with one more demo
    output = run(release, user="researcher-r")
    assert "Imported 1 demos" in output
    assert "skipped alpha: already imported into this project as demo" in output
    assert sorted(listed(token_client(people[Role.ADMIN]))) == ["alpha", "bravo", "charlie", "delta", "foxtrot"]


def test_a_directory_that_is_not_a_release_names_the_missing_part_and_imports_nothing(team, tmp_path, release):
    project, _ = team
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match="not a WebLINX release: splits.json: missing"):
        run(tmp_path / "empty")
    write_json(tmp_path / "half" / "splits.json", {"train": []})
    with pytest.raises(CommandError, match="demonstrations/: missing"):
        run(tmp_path / "half")
    write_json(release / "splits.json", {"train": ["alpha"], "dev": ["bravo"]})
    with pytest.raises(CommandError, match="splits.json.dev: unknown split"):
        run(release)
    assert not Demonstration.objects.filter(project=project).exists()


def test_a_demo_failing_the_ingest_checks_is_listed_with_its_field(team, tmp_path):
    root = tmp_path / "release"
    for name in ("good", "badintent", "badpng"):
        write_demo(root, name)
    replay = json.loads((root / "demonstrations/badintent/replay.json").read_text())
    replay["data"][1]["action"]["intent"] = "teleport"
    write_json(root / "demonstrations/badintent/replay.json", replay)
    (root / "demonstrations/badpng/screenshots/screenshot-1-0.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    write_json(root / "splits.json", {"train": ["good", "badintent", "badpng"]})

    output = run(root)
    assert "Imported 1 demos" in output
    assert "skipped badintent: replay.json.data[1].action.intent: unknown intent 'teleport'" in output
    assert "skipped badpng: screenshots/screenshot-1-0.png: body is not a decodable image" in output


def test_only_researchers_and_admins_import_and_nothing_imported_exits_non_zero(team, tmp_path, release):
    project, _ = team
    with pytest.raises(CommandError, match="cannot import a release"):
        run(release, user="reviewer-r")
    outsider = make_user("outsider-r")
    assert outsider.pk
    with pytest.raises(CommandError, match="no project 'recurate' among yours"):
        run(release, user="outsider-r")
    root = tmp_path / "allbad"
    write_demo(root, "solo")
    (root / "demonstrations/solo/form.json").unlink()
    write_json(root / "splits.json", {"train": ["solo"]})
    with pytest.raises(CommandError, match="nothing was imported"):
        run(root)
    assert not Demonstration.objects.filter(project=project).exists()


# The round trip: the platform's own demos exported, imported into a new project, exported again.


def official_turns(base: Path, name: str) -> list:
    """What the official package reads of a demo: each turn's type, speaker, utterance, intent, arguments, bytes."""
    demo = weblinx.Demonstration(name, base_dir=str(base / "demonstrations"))
    assert demo.is_valid() in (True, False)
    rows = []
    for turn in weblinx.Replay.from_demonstration(demo):
        screenshot = Path(turn.get_screenshot_path()).read_bytes() if turn.has_screenshot() else None
        page = Path(turn.get_html_path()).read_bytes() if turn.has_html() else None
        action = turn.get("action") or {}
        rows.append(
            (
                turn.type,
                turn.timestamp,
                turn.get("speaker"),
                turn.get("utterance"),
                action.get("intent"),
                json.dumps(action.get("arguments"), sort_keys=True),
                screenshot,
                page,
                turn.bboxes if turn.has_bboxes() else None,
                turn.get_screenshot_status() if turn.has_screenshot() else None,
            )
        )
    return rows, demo.is_valid()


def folder_bytes(base: Path, name: str) -> dict:
    folder = base / "demonstrations" / name
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_round_trip_gives_the_same_demos_turns_and_values_to_the_official_loader(db, tmp_path):
    ingest_corpus(project="origin", demos=3, turns=24, elements=30, seed=11)
    rejected = ingest_corpus(project="origin", demos=1, turns=12, elements=20, seed=12)[0]
    Demonstration.objects.filter(pk=rejected.pk).update(status=DemoStatus.REJECTED)
    first, second = tmp_path / "first", tmp_path / "second"
    call_command("export_dataset", "--format", "weblinx", "--out", str(first), "--project", "origin", "--status", "all")

    target = Project.objects.create(name="copy", title="Copy")
    admin = make_user("copy-admin", target, Role.ADMIN)
    output = run(first, project="copy", user=admin.username)
    assert "Imported 4 demos" in output
    assert "skipped" not in output
    call_command("export_dataset", "--format", "weblinx", "--out", str(second), "--project", "copy", "--status", "all")

    imported = dict(Demonstration.objects.filter(project=target).values_list("source_id", "name"))
    originals = sorted(path.name for path in (first / "demonstrations").iterdir())
    assert sorted(imported) == originals == sorted(path.name for path in (second / "demonstrations").iterdir())
    assert len(originals) == 4
    for name in originals:  # written under its release id, from the release's own files (nothing was changed)
        assert official_turns(second, name) == official_turns(first, name)
        assert folder_bytes(second, name) == folder_bytes(first, name)
    assert official_turns(second, rejected.name)[1] is False  # invalid.json kept
    assert json.loads((second / "splits.json").read_text()) == json.loads((first / "splits.json").read_text())
    changes = json.loads((second / "changes.json").read_text())["demos"]
    assert [(entry["demo"], entry["status"], entry["turns"]) for entry in changes] == [
        (name, "unchanged", []) for name in originals
    ]
    assert Membership.objects.filter(project=target).count() == 1


def test_review_edits_layer_over_an_imported_demo_and_reach_the_export(team, release, client, tmp_path):
    project, people = team
    run(release)
    demo = Demonstration.objects.get(project=project, source_id="charlie")
    chat = Turn.objects.get(demonstration=demo, seq=0)
    client.force_login(people[Role.REVIEWER])
    for revision, text in enumerate(("Find the cheapest train", "Find the cheapest bus")):
        body = {"op": "edit_text", "revision": revision, "turn": chat.pk, "text": text}
        answer = client.post(f"/review/{demo.name}/edit", json.dumps(body), content_type="application/json")
        assert answer.status_code == 200, answer.content

    assert Turn.objects.get(pk=chat.pk).utterance == "Find the cheapest flight"  # the release's turn, unchanged
    out = tmp_path / "out"
    call_command("export_dataset", "--format", "weblinx", "--out", str(out), "--project", "recurate", "--status", "all")
    replay = json.loads((out / "demonstrations" / "charlie" / "replay.json").read_text())
    assert replay["data"][0]["utterance"] == "Find the cheapest bus"
    assert json.loads((out / "splits.json").read_text())["valid"] == ["charlie"]
