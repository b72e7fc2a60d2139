"""A WebLINX release written file by file, as the format's documentation describes it (shared/specs/weblinx-format.md),
for the import tests: demos of chat and browser turns with screenshots, pages and boxes, odd text, missing files."""

import io
import json
import tarfile
from pathlib import Path

from PIL import Image

from annotation.models import DemoReview, ExportJob, JobStatus
from tests.support.actors import signed_in
from workers.exports.jobs import run_export

UID = "a1b2c3"
BOX = {"x": 10, "y": 20, "width": 200, "height": 30, "top": 20, "right": 210, "bottom": 50, "left": 10}
ODD = "Café «naïve» \"quoted\" 'single' =cmd|' /C calc'!A0 <script>alert(1)</script> 北京 🚀"


def png(colour=(40, 90, 160)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(buffer, "PNG")
    return buffer.getvalue()


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")


def browser_turn(n: int, intent="click", url="https://shop.example/", **arguments) -> dict:
    element = {
        "attributes": {"data-webtasks-id": UID, "class": "btn"},
        "bbox": BOX,
        "tagName": "BUTTON",
        "textContent": "Go",
        "outerHTML": f'<button data-webtasks-id="{UID}">Go</button>',
        "xpath": "/html/body/button",
    }
    args = {"metadata": {"url": url, "tabId": 1, "viewportWidth": 1280, "viewportHeight": 720}, **arguments}
    if intent in ("click", "textInput", "change", "submit"):
        args["element"] = element
    state = {"screenshot": f"screenshot-{n}-0.png", "page": f"page-{n}-0.html", "screenshot_status": "good"}
    return {"type": "browser", "timestamp": 1.0 + n, "action": {"intent": intent, "arguments": args}, "state": state}


def write_demo(root: Path, name: str, utterance="Find the cheapest flight", missing_screenshot=False, colour=1):
    """A demo of a chat turn, a click and a textInput, each browser turn with screenshot, page and bboxes."""
    folder = root / "demonstrations" / name
    turns = [
        {"type": "chat", "timestamp": 0.5, "speaker": "instructor", "utterance": utterance},
        browser_turn(1),
        browser_turn(2, "textInput", text=utterance),
        {"type": "chat", "timestamp": 4.0, "speaker": "navigator", "utterance": "Done."},
    ]
    write_json(folder / "replay.json", {"version": "1.0.0", "created": 1700000000, "data": turns})
    write_json(
        folder / "metadata.json",
        {"recordingStart": 1700000000000, "recordingEnd": 1700000060000, "userAgent": "Chrome", "version": "1.0.0"},
    )
    write_json(
        folder / "form.json",
        {"description": utterance, "shortcode": name, "website": "shop.example", "category": "Shopping"},
    )
    for n in (1, 2):
        if not (missing_screenshot and n == 2):
            (folder / "screenshots").mkdir(parents=True, exist_ok=True)
            (folder / "screenshots" / f"screenshot-{n}-0.png").write_bytes(png((colour, n, 100)))
        page = f'<html><body><button data-webtasks-id="{UID}">Go</button></body></html>'
        (folder / "pages").mkdir(exist_ok=True)
        (folder / "pages" / f"page-{n}-0.html").write_text(page, encoding="utf-8")
        write_json(folder / "bboxes" / f"bboxes-{n}.json", {UID: BOX})
    return folder


def write_release(root: Path) -> Path:
    """Five demos over three splits: odd characters, a missing screenshot, and one with broken replay JSON."""
    write_demo(root, "alpha", utterance=ODD, colour=1)
    write_demo(root, "bravo", missing_screenshot=True, colour=2)
    write_demo(root, "charlie", colour=3)
    write_demo(root, "delta", colour=4)
    broken = write_demo(root, "echo", colour=5)
    (broken / "replay.json").write_text('{"version": "1.0.0", "data": [', encoding="utf-8")
    splits = {"train": ["alpha", "bravo"], "valid": ["charlie"], "test_geo": ["delta", "echo"], "test_vis": []}
    write_json(root / "splits.json", splits)
    return root


EVERY_STATUS = ["recorded", "in_review", "validated", "rejected"]


def start_export(client, project: str) -> ExportJob:
    """A WebLINX export of every status started through the API and run as the worker runs it."""
    body = {"project": project, "format": "weblinx", "statuses": EVERY_STATUS}
    created = client.post("/api/exports/", body, format="json")
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    return ExportJob.objects.get(pk=created.json()["id"])


def download(client, job: ExportJob, into: Path) -> Path:
    """The finished export downloaded through the API and unpacked under ``into``; its folder."""
    assert job.status == JobStatus.DONE, job.error
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into / "download", filter="data")
    return into / "download" / job.filename.removesuffix(".tar.gz")


def review_edit(user, item, **body) -> dict:
    """One review edit by ``user`` through the review page's endpoint, at the demo's current revision."""
    revision = DemoReview.objects.filter(demonstration=item).values_list("revision", flat=True).first() or 0
    answer = signed_in(user).post(
        f"/review/{item.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    return answer.json()
