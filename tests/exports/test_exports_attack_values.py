"""Attacks on re-curation's imports and value edits (issue 40): an archive of more members than allowed is refused
before the rest is read, a damaged zip is a 400, a release folder's links out of it are left out; a team of five
imports a release with a hostile value and page, edits, undoes and second-reviews it, exports it, and every link each
of them sees answers without a server error."""

import html
import io
import json
import re
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotation.lib import release_archive
from annotation.models import Demonstration, ImportJob, Project, Role
from tests.support.actors import make_user, signed_in, token_client
from tests.support.mind2web_release import MHTML as M2W_MHTML
from tests.support.mind2web_release import write_release as write_m2w_release
from tests.support.weblinx_release import (
    browser_turn,
    download,
    review_edit,
    start_export,
    write_demo,
    write_json,
    write_release,
)
from workers.exports.imports import run_import

URL = "/api/projects/alpha/imports/"


def many_members(count: int) -> bytes:
    """A .tar.gz of ``count`` empty files whose compressed stream is cut short at its end: read to the end, it is
    damaged; read only to a member limit, it is not."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for n in range(count):
            archive.addfile(tarfile.TarInfo(f"weblinx/demonstrations/d{n}/replay.json"), io.BytesIO(b""))
    return buffer.getvalue()[:-64]


@pytest.mark.django_db
def test_an_archive_of_too_many_members_is_refused_without_reading_them_all(
    api_for, researcher, alpha, media_storage, monkeypatch
):
    monkeypatch.setattr(release_archive, "MAX_MEMBERS", 50)  # the limit of 500,000, smaller for a test's archive
    answer = api_for(researcher).post(URL, {"file": SimpleUploadedFile("r.tar.gz", many_members(5_000))})
    assert answer.status_code == 413, answer.content
    assert answer.json()["errors"] == [{"field": "file", "message": "file: more than 50 members"}]
    assert not ImportJob.objects.exists()


def many_zip_members(count: int) -> bytes:
    """A zip of ``count`` empty files whose directory is damaged at its last entry: read whole, it is refused as
    damaged; counted only to a member limit, it is not."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in range(count):
            archive.writestr(f"weblinx/demonstrations/d{n}/replay.json", "")
    data = buffer.getvalue()
    last = data.rfind(b"PK\x01\x02")
    return data[:last] + b"XX" + data[last + 2 :]


@pytest.mark.django_db
def test_a_zip_of_too_many_members_is_refused_without_reading_its_whole_directory(
    api_for, researcher, alpha, media_storage, monkeypatch
):
    monkeypatch.setattr(release_archive, "MAX_MEMBERS", 50)
    client = api_for(researcher)
    answer = client.post(URL, {"file": SimpleUploadedFile("r.zip", many_zip_members(5_000))})
    assert answer.status_code == 413, answer.content
    assert answer.json()["errors"] == [{"field": "file", "message": "file: more than 50 members"}]
    fifty = client.post(URL, {"file": SimpleUploadedFile("r.zip", many_zip_members(50))})  # at the limit: read whole
    assert fifty.status_code == 400, fifty.content
    assert not ImportJob.objects.exists()


def damaged_zip() -> bytes:
    """A zip whose end record is sound (``zipfile.is_zipfile`` says yes) but whose central directory is not."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("weblinx/splits.json", "{}")
        archive.writestr("weblinx/demonstrations/a/replay.json", "{}")
    return buffer.getvalue().replace(b"PK\x01\x02", b"XX\x01\x02", 1)


@pytest.mark.django_db
def test_a_zip_whose_directory_is_damaged_is_a_400_naming_the_file(api_for, researcher, alpha, media_storage):
    answer = api_for(researcher).post(URL, {"file": SimpleUploadedFile("r.zip", damaged_zip())})
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"] == [{"field": "file", "message": "file: not a .zip or .tar.gz archive"}]
    assert not ImportJob.objects.exists()


def patched_zip(flags: int = 0, method: int | None = None) -> bytes:
    """A zip whose central directory says its second member is encrypted (``flags``) or compressed by ``method``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("weblinx/splits.json", "{}")
        archive.writestr("weblinx/demonstrations/a/replay.json", "{}")
    data = bytearray(buffer.getvalue())
    entry = data.rfind(b"PK\x01\x02")
    data[entry + 8 : entry + 10] = (int.from_bytes(data[entry + 8 : entry + 10], "little") | flags).to_bytes(
        2, "little"
    )
    if method is not None:
        data[entry + 10 : entry + 12] = method.to_bytes(2, "little")
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (patched_zip(flags=1), "encrypted: a release is unpacked without a password"),
        (patched_zip(method=99), "compressed with a method other than stored, deflate, bzip2 or lzma"),
    ],
)
@pytest.mark.django_db
def test_an_encrypted_or_strangely_compressed_zip_is_a_400_naming_the_member(
    api_for, researcher, alpha, media_storage, data, message
):
    answer = api_for(researcher).post(URL, {"file": SimpleUploadedFile("r.zip", data)})
    assert answer.status_code == 400, answer.content
    member = "weblinx/demonstrations/a/replay.json"
    assert answer.json()["errors"] == [{"field": "file", "message": f"{member}: {message}"}]
    assert not ImportJob.objects.exists()


# --- A team of five: import, review with value edits and a second review, export, changes.json, every link -------

HOSTILE = '"><script>alert(1)</script> =HYPERLINK("http://evil.example","x") \u202e'
HOSTILE_PAGE = "<html><body><script>parent.document.title='pwned'</script><select><option>Medium</option></body></html>"
SKIP = ("/logout", "/accounts/logout", "/admin/", "/static/", "/media/")


def team_release(root):
    """The small WebLINX release plus ``golf``: a chat turn and a change turn (chose "Medium") on a hostile page."""
    write_release(root)
    folder = write_demo(root, "golf", utterance=HOSTILE, colour=7)
    turns = [
        {"type": "chat", "timestamp": 0.5, "speaker": "instructor", "utterance": HOSTILE},
        browser_turn(1, "change", value="Medium"),
    ]
    write_json(folder / "replay.json", {"version": "1.0.0", "created": 1700000000, "data": turns})
    (folder / "pages" / "page-1-0.html").write_text(HOSTILE_PAGE, encoding="utf-8")
    write_json(root / "splits.json", {"train": ["alpha", "bravo", "golf"], "valid": ["charlie"], "test_geo": ["delta"]})
    return root


def crawl(user, starts, limit=300) -> dict:
    """Every page and API answer reachable from ``starts`` through links ``user`` sees: ``{path: status}``."""
    client = signed_in(user)
    client.raise_request_exception = False
    seen, queue = {}, list(starts)
    while queue and len(seen) < limit:
        path = queue.pop(0)
        if path in seen or path.startswith(SKIP):
            continue
        answer = client.get(path)
        seen[path] = answer.status_code
        kind = answer.get("Content-Type", "")
        if not kind.startswith("text/html") or getattr(answer, "streaming", False):
            continue
        text = answer.content.decode()
        if "<script>alert(1)" in text or "parent.document" in text:  # a hostile text unescaped: only a sandboxed page
            assert "sandbox" in answer.get("Content-Security-Policy", ""), path
        for link in re.findall(r'href="(/[^"#]*)', text):
            queue.append(html.unescape(link))
    return seen


@pytest.mark.django_db
def test_a_team_of_five_imports_reviews_exports_and_every_link_answers(tmp_path, media_storage, settings):
    project = Project.objects.create(name="team", title="Team", second_review_percent=100)
    admin, ana, ben = (
        make_user(n, project, r) for n, r in (("tadmin", Role.ADMIN), ("tana", Role.REVIEWER), ("tben", Role.REVIEWER))
    )
    rita, anna = make_user("trita", project, Role.RESEARCHER), make_user("tanna", project, Role.ANNOTATOR)

    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(team_release(tmp_path / "release"), arcname="weblinx")
    created = token_client(admin).post(
        "/api/projects/team/imports/", {"file": SimpleUploadedFile("r.tar.gz", archive.getvalue())}
    )
    assert created.status_code == 202, created.content
    run_import(created.json()["id"])
    job = token_client(admin).get(f"/api/imports/{created.json()['id']}/").json()
    assert job["status"] == "done", job
    golf = Demonstration.objects.get(project=project, source_id="golf")
    select = golf.turns.get(intent="change")

    review_edit(ana, golf, op="edit_text", turn=select.pk, text=HOSTILE)
    made = review_edit(ben, golf, op="edit_text", turn=select.pk, text="Small")
    review_edit(ana, golf, op="undo", edit=made["id"])  # HOSTILE again, by ana's undo
    review_edit(ana, golf, op="transition", action="validate")
    second = token_client(ben).post(f"/api/quality/second-reviews/{golf.name}/", {"decision": "accept"}, format="json")
    assert second.status_code in (200, 201), second.content

    folder = download(token_client(rita), start_export(token_client(rita), "team"), tmp_path)
    replay = json.loads((folder / "demonstrations" / "golf" / "replay.json").read_text())
    exported = [
        t["action"]["arguments"]["value"] for t in replay["data"] if t.get("action", {}).get("intent") == "change"
    ]
    assert exported == [HOSTILE]
    changes = {e["demo"]: e for e in json.loads((folder / "changes.json").read_text())["demos"]}
    entry = token_client(rita).get("/api/projects/team/recuration/golf/").json()
    assert changes["golf"]["turns"] == entry["changes"]["turns"]
    assert [(t["change"], t["to"]) for t in entry["changes"]["turns"]] == [("value", HOSTILE)]

    starts = [
        "/",
        "/review/",
        f"/review/{golf.name}/",
        "/projects/team/recuration/",
        "/projects/team/recuration/golf/",
        "/projects/team/exports/",
        "/quality/second-reviews/",
        "/api/projects/team/recuration/",
        "/api/projects/team/imports/",
        f"/api/imports/{job['id']}/",
    ]
    for user in (admin, ana, ben, rita, anna):
        statuses = crawl(user, starts)
        broken = {path: status for path, status in statuses.items() if status >= 500}
        assert not broken, (user.username, broken)


# --- A release folder on the server (manage.py import_weblinx / import_mind2web) with links out of it -------------

SERVER_SECRET = "SECRET_KEY=server-only-0123456789"


def stored_bytes(media_storage) -> bytes:
    return b"".join(path.read_bytes() for path in media_storage.rglob("*") if path.is_file())


@pytest.mark.django_db
def test_a_release_folders_links_to_server_files_are_not_imported(alpha, researcher, tmp_path, media_storage):
    """A release unpacked by hand keeps its links (``tar x`` does): one to a server file (a page, a replay.json)
    would be imported as the release's and shown to every reviewer. A link out of the release is left out."""
    secret = tmp_path / "server" / ".env"
    secret.parent.mkdir()
    secret.write_text(f"<html><body>{SERVER_SECRET}</body></html>", encoding="utf-8")
    root = tmp_path / "release"
    write_release(root)
    page = root / "demonstrations" / "alpha" / "pages" / "page-1-0.html"
    page.unlink()
    page.symlink_to(secret)
    linked = write_demo(root, "golf")
    (linked / "form.json").unlink()
    (linked / "form.json").symlink_to(secret)
    inside = root / "demonstrations" / "bravo" / "pages" / "page-1-0.html"  # a link within the release is its file
    inside.unlink()
    inside.symlink_to(root / "demonstrations" / "charlie" / "pages" / "page-1-0.html")
    write_json(root / "splits.json", {"train": ["alpha", "bravo", "golf"], "valid": ["charlie"]})
    out = io.StringIO()
    call_command("import_weblinx", str(root), "--project", "alpha", "--user", "researcher", stdout=out)
    assert "skipped golf: form.json: a link out of the release" in out.getvalue()
    assert "turn 1: pages/page-1-0.html is a link out of the release; imported without it" in out.getvalue()
    assert SERVER_SECRET.encode() not in stored_bytes(media_storage)
    bravo = Demonstration.objects.get(project=alpha, source_id="bravo")
    assert bravo.turns.exclude(page=None).exists()

    # A Mind2Web raw dump's MHTML snapshot: the same.
    folder = write_m2w_release(tmp_path / "m2w")
    snapshot = folder / "task" / "t-plain" / "processed" / "snapshots" / "t-plain-1_before.mhtml"
    snapshot.unlink()
    secret.write_bytes(M2W_MHTML.replace(b"Shoes</body>", SERVER_SECRET.encode() + b"</body>"))
    snapshot.symlink_to(secret)
    out = io.StringIO()
    call_command(
        "import_mind2web", str(folder / "test_task.json"), "--project", "alpha", "--user", "researcher", stdout=out
    )
    assert Demonstration.objects.filter(project=alpha, source_id="t-plain").exists()
    assert SERVER_SECRET.encode() not in stored_bytes(media_storage)
