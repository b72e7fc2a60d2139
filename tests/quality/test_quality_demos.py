"""Quality of demonstrations (docs/quality.md): a share of reviewed demos goes to a second reviewer, reviewers'
agreement as Cohen's κ per pair, annotators' records from real curation, and ``quality.json`` in every export.

One project with three reviewers, an admin, a researcher and three annotators; every step through the review page's
edit endpoint, the quality pages or the API, as the person whose work it is; figures read back as a user reads them
(API, page, the downloaded export)."""

import hashlib
import io
import json
import tarfile
import uuid
from pathlib import Path

import pytest
import weblinx
from django.test import Client

from annotation import synth
from annotation.lib.quality import CHECKS
from annotation.models import Demonstration, DemoStatus, ExportJob, JobStatus, Role, Turn, TurnType
from tests.support.actors import make_user, token_client
from workers.exports.exporters.mind2web import NAMESPACE
from workers.exports.jobs import run_export
from workers.management.commands.synth_demos import ingest_demo
from workers.tasks import realign_demo

SHARE = 50
REVIEWERS = ("rae", "rob", "roz")
ANNOTATORS = ("ana", "ben", "cat")


def picked(demo, percent=SHARE) -> bool:
    """The documented choice (docs/quality.md): sha256 of ``second-review:<demo id>``, first 12 hex digits as a
    fraction of 16**12, times 100, below the percentage."""
    digest = hashlib.sha256(f"second-review:{demo.pk}".encode()).hexdigest()
    return int(digest[:12], 16) / 16**12 * 100 < percent


def kappa(first: list, second: list) -> float:
    """Cohen's κ by its definition: (observed - expected) / (1 - expected)."""
    n = len(first)
    labels = set(first) | set(second)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    expected = sum((first.count(label) / n) * (second.count(label) / n) for label in labels)
    return (observed - expected) / (1 - expected)


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


class Team:
    def __init__(self, alpha, beta):
        self.project = alpha
        self.reviewers = [make_user(name, alpha, Role.REVIEWER) for name in REVIEWERS]
        self.annotators = [make_user(name, alpha, Role.ANNOTATOR) for name in ANNOTATORS]
        self.admin = make_user("ada", alpha, Role.ADMIN)
        self.researcher = make_user("res", alpha, Role.RESEARCHER)
        self.outsider = make_user("otto", beta, Role.ANNOTATOR)
        self.everyone = [*self.reviewers, *self.annotators, self.admin, self.researcher, self.outsider]
        self.api = {user.username: token_client(user) for user in self.everyone}
        self.pages = {user.username: page_client(user) for user in self.everyone}

    def by_name(self, username):
        return next(user for user in self.everyone if user.username == username)


@pytest.fixture
def team(alpha, beta):
    return Team(alpha, beta)


def record_demos(team, count=18, turns=8) -> list:
    """``count`` synthetic chat demos stored as the recorder stores them, navigated by the three annotators in
    turn, then finished (recorded)."""
    demos = []
    for index, spec in enumerate(synth.generate_corpus(count, turns, 20, seed=5)):
        navigator = team.annotators[index % len(team.annotators)]
        demo, _, _ = ingest_demo(spec, navigator, team.project)
        demos.append(demo)
    Demonstration.objects.filter(pk__in=[d.pk for d in demos]).update(status=DemoStatus.RECORDED)
    return list(Demonstration.objects.filter(pk__in=[d.pk for d in demos]).order_by("pk"))


def edit(client, demo, op, **fields) -> dict:
    revision = client.get(f"/review/{demo.name}/revision").json()["revision"]
    response = client.post(
        f"/review/{demo.name}/edit", {"op": op, "revision": revision, **fields}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def turns_of(demo) -> list:
    return list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))


def set_share(team, value):
    return team.api["ada"].patch(
        f"/api/quality/demos/{team.project.name}/", {"second_review_percent": value}, format="json"
    )


# --- The setting ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [101, -1, "half", True, None, 12.5])
def test_a_share_out_of_range_is_400_naming_the_field_and_nothing_changes(team, value):
    assert set_share(team, 20).status_code == 200
    response = set_share(team, value)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "second_review_percent"
    assert team.api["rae"].get("/api/quality/demos/alpha/").json()["second_review_percent"] == 20


def test_only_admins_set_the_share_and_outsiders_do_not_see_the_project(team):
    assert (
        team.api["rae"].patch("/api/quality/demos/alpha/", {"second_review_percent": 5}, format="json").status_code
        == 403
    )
    assert (
        team.api["otto"].patch("/api/quality/demos/alpha/", {"second_review_percent": 5}, format="json").status_code
        == 404
    )
    page = team.pages["ada"].post("/projects/alpha/quality/reviewers/", {"second_review_percent": "150"})
    assert page.status_code == 400
    assert b"second_review_percent" in page.content
    page = team.pages["ada"].post("/projects/alpha/quality/reviewers/", {"second_review_percent": "30"})
    assert page.status_code == 302
    assert team.api["res"].get("/api/quality/demos/alpha/").json()["second_review_percent"] == 30
    assert (
        team.pages["rob"].post("/projects/alpha/quality/reviewers/", {"second_review_percent": "1"}).status_code == 403
    )


# --- Second reviews, agreement, records ---------------------------------------------------------------------------


def first_reviews(team, demos) -> dict:
    """Each demo decided by one reviewer in turn, through the review page, with curation first: what each did."""
    done = {}
    for index, demo in enumerate(demos):
        reviewer = team.reviewers[index % 3]
        client = team.pages[reviewer.username]
        turns = turns_of(demo)
        chat = [t for t in turns if t.type == TurnType.CHAT and t.utterance]
        browser = [t for t in turns if t.type == TurnType.BROWSER]
        deleted, rewritten, invalid = [], [], []
        if index % 2 == 0:
            edit(client, demo, "delete", turn=browser[0].pk)
            deleted.append(browser[0].pk)
        if index % 3 == 0 and chat:
            edit(client, demo, "edit_text", turn=chat[0].pk, text="rewritten by a reviewer")
            rewritten.append(chat[0].pk)
        if index % 4 == 1:
            edit(client, demo, "set_validity", turn=browser[-1].pk, valid=False)
            invalid.append(browser[-1].pk)
        action = ("validate", "validate", "return", "reject")[index % 4]
        discarded = index % 8 == 4  # a Mind2Web verification: the task is discarded (left out of that export)
        if discarded:
            edit(client, demo, "edit_metadata", fields={"discarded": True})
        edit(client, demo, "transition", action=action, comment="please fix" if action == "return" else "")
        done[demo.name] = {
            "reviewer": reviewer.username,
            "action": action,
            "deleted": deleted,
            "rewritten": rewritten,
            "invalid": invalid,
            "navigator": demo.navigator.username,
            "discarded": discarded,
        }
    return done


DECISION_OF = {"validate": "accept", "return": "return", "reject": "reject"}


def second_decision(index: int, first: str) -> str:
    """Agree on most, differ on some, in a pattern the test knows."""
    if index % 3 == 2:
        return {"accept": "return", "return": "accept", "reject": "accept"}[first]
    return first


def test_second_reviews_go_to_another_reviewer_keep_the_first_decision_and_give_kappa_per_pair(team, tmp_path):
    assert set_share(team, SHARE).status_code == 200
    demos = record_demos(team)
    for demo in demos[:12]:  # what the worker does after each recording: suggestions and the quality checks
        realign_demo(demo.pk)
    done = first_reviews(team, demos)
    expected = sorted(demo.name for demo in demos if picked(demo))
    assert 3 <= len(expected) < len(demos)  # the share applied across many demos: some, not all

    # Each picked demo went to a reviewer (not the first one, not an admin, not its annotator): their list has it.
    sent = {}
    for reviewer in REVIEWERS:
        listed = team.api[reviewer].get("/api/quality/second-reviews/").json()["pending"]
        for item in listed:
            assert item["reviewer"] == reviewer != done[item["demo"]]["reviewer"]
            assert item["first_decision"] is None  # the second reviewer decides unprompted
            sent[item["demo"]] = reviewer
    assert sorted(sent) == expected
    assert len(set(sent.values())) >= 2  # the work is spread over the reviewers (the third one too)
    assert team.api["ada"].get("/api/quality/second-reviews/").json()["pending"] == []  # admins are not drawn

    statuses_before = {d.name: team.pages["ada"].get(f"/review/{d.name}/revision").json()["status"] for d in demos}

    # "Review next" gives a reviewer their second review first; their review list says how many wait.
    some_reviewer = sent[expected[0]]
    assert b"second-reviews-link" in team.pages[some_reviewer].get("/review/").content
    nxt = team.pages[some_reviewer].post("/review/next")
    assert nxt.status_code == 302
    assert nxt["Location"].startswith("/quality/second-reviews/")

    # Someone else cannot decide it; a bad decision is 400 naming the field; an unknown turn is 400.
    name = expected[0]
    other = next(r for r in REVIEWERS if r != sent[name])
    assert (
        team.api[other].post(f"/api/quality/second-reviews/{name}/", {"decision": "accept"}, format="json").status_code
        == 403
    )
    bad = team.api[sent[name]].post(f"/api/quality/second-reviews/{name}/", {"decision": "maybe"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "decision"
    bad = team.api[sent[name]].post(
        f"/api/quality/second-reviews/{name}/", {"decision": "accept", "invalid_turns": [10**9]}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "invalid_turns"
    not_sent = next(d.name for d in demos if d.name not in sent)
    refused = team.api["rae"].post(f"/api/quality/second-reviews/{not_sent}/", {"decision": "accept"}, format="json")
    assert refused.status_code == 409
    assert team.api["ana"].get(f"/api/quality/second-reviews/{name}/").status_code in (403, 404)
    assert team.api["otto"].get(f"/api/quality/second-reviews/{name}/").status_code == 404

    # The second reviewers decide: some through the page's form, the others through the API.
    index_of = {d.name: i for i, d in enumerate(demos)}
    pairs = {}
    for position, name in enumerate(expected):
        info = done[name]
        first = DECISION_OF[info["action"]]
        decision = second_decision(index_of[name], first)
        demo = next(d for d in demos if d.name == name)
        turns = turns_of(demo)
        browser = [t for t in turns if t.type == TurnType.BROWSER]
        invalid = [browser[1].pk] if position % 2 == 0 else list(info["deleted"]) + list(info["invalid"])
        reviewer = sent[name]
        if position % 2:
            response = team.api[reviewer].post(
                f"/api/quality/second-reviews/{name}/", {"decision": decision, "invalid_turns": invalid}, format="json"
            )
            assert response.status_code == 200, response.json()
            assert response.json()["second_review"]["first_decision"] == first  # shown once decided
        else:
            response = team.pages[reviewer].post(
                f"/quality/second-reviews/{name}/", {"decision": decision, "invalid_turns": [str(i) for i in invalid]}
            )
            assert response.status_code == 302
        again = team.api[reviewer].post(f"/api/quality/second-reviews/{name}/", {"decision": "accept"}, format="json")
        assert again.status_code == 409
        key = tuple(sorted((info["reviewer"], reviewer)))
        entry = pairs.setdefault(key, {"decisions": ([], []), "turns": ([], [])})
        firsts_turns = {t.pk: t.pk not in info["deleted"] and t.pk not in info["invalid"] for t in turns}
        seconds_turns = {t.pk: t.pk not in invalid for t in turns}
        ordered = (info["reviewer"], reviewer) == key
        a, b = (first, decision) if ordered else (decision, first)
        entry["decisions"][0].append(a)
        entry["decisions"][1].append(b)
        for turn_id in sorted(firsts_turns, key=str):
            x, y = firsts_turns[turn_id], seconds_turns[turn_id]
            entry["turns"][0].append(x if ordered else y)
            entry["turns"][1].append(y if ordered else x)

    # The first decision stands: no demo's status changed.
    assert {
        d.name: team.pages["ada"].get(f"/review/{d.name}/revision").json()["status"] for d in demos
    } == statuses_before

    # κ per pair, as reviewers, researchers and admins read it, against the definition computed here.
    figures = team.api["res"].get("/api/quality/demos/alpha/").json()
    assert figures["second_reviews"]["sent"] == figures["second_reviews"]["decided"] == len(expected)
    got = {tuple(pair["reviewers"]): pair for pair in figures["pairs"]}
    assert set(got) == set(pairs)
    for key, entry in pairs.items():
        for what in ("decisions", "turns"):
            first_labels, second_labels = entry[what]
            reported = got[key][what]
            assert reported["items"] == len(first_labels)
            if len(first_labels) < 2 or len(set(first_labels) | set(second_labels)) < 2:
                assert reported["kappa"] is None
                assert reported["undefined"]
            else:
                assert reported["kappa"] == pytest.approx(kappa(first_labels, second_labels), abs=1e-6)
                assert reported["undefined"] is None
    page = team.pages["rob"].get("/projects/alpha/quality/reviewers/")
    assert page.status_code == 200
    for key in pairs:
        assert f'data-pair="{key[0]}|{key[1]}"'.encode() in page.content

    # Annotators' records, from the curation above.
    records = {r["user"]: r for r in team.api["rae"].get("/api/quality/demos/alpha/records/").json()["records"]}
    for annotator in ANNOTATORS:
        mine = [info for info in done.values() if info["navigator"] == annotator]
        record = records[annotator]
        assert record["demos"] == len(mine)
        assert record["returned"] == sum(info["action"] == "return" for info in mine)
        assert record["turns_deleted"] == sum(len(info["deleted"]) for info in mine)
        assert record["turns_rewritten"] == sum(len(info["rewritten"]) for info in mine)
        assert record["by_status"].get("returned", 0) == record["returned"]
        worked = [d for d in demos[:12] if d.navigator.username == annotator]
        assert record["demos_unchecked"] == len(mine) - len(worked)
    own = team.api["ben"].get("/api/quality/demos/alpha/records/").json()["records"]
    assert [r["user"] for r in own] == ["ben"]
    ben, cat = team.by_name("ben"), team.by_name("cat")
    assert team.api["ben"].get(f"/api/quality/demos/alpha/records/{ben.pk}/").status_code == 200
    assert team.api["ben"].get(f"/api/quality/demos/alpha/records/{cat.pk}/").status_code == 403
    assert team.api["otto"].get(f"/api/quality/demos/alpha/records/{cat.pk}/").status_code == 404
    assert team.api["rae"].get(f"/api/quality/demos/alpha/records/{team.outsider.pk}/").status_code == 404
    record_page = team.pages["ben"].get(f"/projects/alpha/quality/records/{ben.pk}/")
    assert record_page.status_code == 200
    assert f'data-field="turns_deleted">{records["ben"]["turns_deleted"]}<'.encode() in record_page.content

    # Every export holds quality.json naming each exported demo, read through the API's download.
    check_exports(team, demos, done, sent, figures, tmp_path)


def download(team, **fields) -> tuple[ExportJob, dict]:
    created = team.api["res"].post("/api/exports/", {"project": "alpha", **fields}, format="json")
    assert created.status_code == 202, created.json()
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert job.status == JobStatus.DONE, job.error
    data = b"".join(team.api["res"].get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        files = {member.name: tar.extractfile(member).read() for member in tar.getmembers() if member.isfile()}
    return job, files


def check_exports(team, demos, done, sent, figures, tmp_path):
    statuses = ["recorded", "in_review", "returned", "validated", "rejected"]
    job, files = download(team, format="weblinx", statuses=statuses)
    top = f"alpha-weblinx-{job.pk}"
    report = json.loads(files[f"{top}/quality.json"])
    splits = json.loads(files[f"{top}/splits.json"])
    exported = sorted(name for names in splits.values() for name in names)
    assert sorted(item["id"] for item in report["items"]) == exported == sorted(d.name for d in demos)
    assert report["format"] == "weblinx"
    assert report["totals"]["items"] == len(demos)
    for item in report["items"]:
        info = done[item["id"]]
        assert item["kind"] == "demo"
        assert item["status"] == {"validate": "validated", "return": "returned", "reject": "rejected"}[info["action"]]
        assert info["reviewer"] in item["reviewers"]
        assert item["turns_deleted"] == len(info["deleted"])
        assert item["turns_rewritten"] == len(info["rewritten"])
        assert item["turns"] == len(turns_of(Demonstration.objects.get(name=item["id"]))) - len(info["deleted"])
        checks = item["checks"]
        assert set(checks) == {*CHECKS, "screenshot_alignment"}
        assert isinstance(checks["time_order"], int)
        worked = item["id"] in {d.name for d in demos[:12]}  # checked by the worker; the others not yet: null
        assert all(isinstance(n, int) if worked else n is None for c, n in checks.items() if c != "time_order")
        if item["id"] in sent:
            assert item["second_review"]["reviewer"] == sent[item["id"]] in item["reviewers"]
            assert item["second_review"]["first_decision"] == DECISION_OF[info["action"]]
        else:
            assert item["second_review"] is None
    assert report["totals"]["agreement"] == figures["pairs"]
    assert report["totals"]["second_reviews"]["decided"] == len(sent)
    assert ExportJob.objects.get(pk=job.pk).counts["quality"] == report["totals"]
    page = team.pages["res"].get(f"/projects/alpha/exports/{job.pk}/")
    assert b'id="quality-summary"' in page.content
    assert f"{len(demos)}".encode() in page.content

    # The official weblinx package still loads the export with quality.json at its top.
    root = written_out(files, tmp_path, top)
    for name in exported[:3]:
        replay = weblinx.Replay.from_demonstration(weblinx.Demonstration(name, str(root / "demonstrations")))
        assert replay.validate_turns()

    # Mind2Web: rejected and discarded tasks are left out, and so from quality.json; items named by annotation_id.
    job, files = download(team, format="mind2web", statuses=statuses)
    top = f"alpha-mind2web-{job.pk}"
    report = json.loads(files[f"{top}/quality.json"])
    records = [
        record
        for split in ("train", "test_task", "test_website", "test_domain")
        for record in json.loads(files[f"{top}/{split}.json"])
    ]
    assert sorted(item["id"] for item in report["items"]) == sorted(r["annotation_id"] for r in records)
    kept = [name for name, info in done.items() if info["action"] != "reject" and not info["discarded"]]
    assert any(info["discarded"] for info in done.values())
    assert len(report["items"]) == len(kept)
    assert sorted(item["id"] for item in report["items"]) == sorted(str(uuid.uuid5(NAMESPACE, name)) for name in kept)
    assert report["totals"]["by_status"].get("rejected") is None


def written_out(files: dict, folder: Path, top: str) -> Path:
    """The downloaded archive's files written out (the weblinx package reads a folder)."""
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder / top


# --- Pages and API as every role ----------------------------------------------------------------------------------


def test_pages_and_api_as_every_role(team):
    assert set_share(team, 100).status_code == 200
    demos = record_demos(team, count=3, turns=6)
    edit(team.pages["rae"], demos[0], "transition", action="validate")
    ana = team.by_name("ana")
    expected = {  # path → {username: status}
        "/projects/alpha/quality/reviewers/": {"rae": 200, "ada": 200, "res": 200, "ana": 403, "otto": 404},
        "/projects/alpha/quality/records/": {"rae": 200, "ada": 200, "res": 200, "ana": 200, "otto": 404},
        f"/projects/alpha/quality/records/{ana.pk}/": {"rae": 200, "res": 200, "ana": 200, "ben": 200, "otto": 404},
        "/quality/second-reviews/": {"rae": 200, "rob": 200, "ana": 200, "otto": 200},
        f"/quality/second-reviews/{demos[0].name}/": {"rae": 200, "rob": 200, "ada": 200, "res": 403, "otto": 404},
        "/api/quality/demos/alpha/": {"rae": 200, "ada": 200, "res": 200, "ana": 403, "otto": 404},
        "/api/quality/demos/alpha/records/": {"rae": 200, "ana": 200, "otto": 404},
        f"/api/quality/demos/alpha/records/{ana.pk}/": {"ana": 200, "ben": 403, "otto": 404, "ada": 200},
        "/api/quality/second-reviews/": {"rae": 200, "ana": 200, "otto": 200},
        f"/api/quality/second-reviews/{demos[0].name}/": {"rob": 200, "res": 403, "ana": 403, "otto": 404},
    }
    expected[f"/projects/alpha/quality/records/{ana.pk}/"]["ben"] = 403
    for path, answers in expected.items():
        for username, status in answers.items():
            client = team.api[username] if path.startswith("/api/") else team.pages[username]
            response = client.get(path)
            assert response.status_code == status, (path, username, response.status_code)
    # Annotators see their record and no agreement link; the project's tabs lead to the records.
    page = team.pages["ana"].get("/projects/alpha/quality/records/").content.decode()
    assert 'data-user="ana"' in page
    assert 'data-user="ben"' not in page
    assert "quality/reviewers" not in page
    assert "quality/reviewers" in team.pages["res"].get("/projects/alpha/quality/records/").content.decode()
    # At 100 % every decided demo goes to a second review, to a reviewer who is not the first.
    second = team.api["rae"].get(f"/api/quality/second-reviews/{demos[0].name}/").json()["second_review"]
    assert second["reviewer"] in ("rob", "roz")
    assert second["first_reviewer"] == "rae"
    # κ of a single item is undefined, never 0 or 1.
    team.api[second["reviewer"]].post(
        f"/api/quality/second-reviews/{demos[0].name}/", {"decision": "accept"}, format="json"
    )
    pair = team.api["ada"].get("/api/quality/demos/alpha/").json()["pairs"][0]
    assert pair["decisions"]["kappa"] is None
    assert pair["decisions"]["undefined"] == "fewer than 2 items"


def test_at_zero_percent_no_demo_is_sent_and_the_command_export_writes_quality_json(team, tmp_path):
    from django.core.management import call_command

    demos = record_demos(team, count=4, turns=6)
    for index, demo in enumerate(demos):
        edit(team.pages[REVIEWERS[index % 3]], demo, "transition", action=("validate", "reject")[index % 2])
    for demo in demos:
        got = team.api["ada"].get(f"/api/quality/second-reviews/{demo.name}/").json()
        assert got["second_review"] is None
    assert team.api["ada"].get("/api/quality/demos/alpha/").json()["second_reviews"]["sent"] == 0

    out = tmp_path / "weblinx"
    call_command("export_dataset", "--format", "weblinx", "--out", str(out), "--project", "alpha", "--status", "all")
    report = json.loads((out / "quality.json").read_text())
    assert sorted(item["id"] for item in report["items"]) == sorted(d.name for d in demos)
    assert report["totals"]["by_status"] == {"rejected": 2, "validated": 2}
    assert all(item["second_review"] is None for item in report["items"])
    assert report["totals"]["agreement"] == []
