"""Rows stored before ingest validated every shape (legacy data) never break the review page, exports, quality
checks or metrics: an odd element, box, attribute list, frame or bboxes blob shows as blank, not as a 500.

Ingest now refuses these shapes (``test_recordings_validation.py``, ``test_recordings_blobs.py``); here
they are inserted directly, as rows written by an older version would be."""

import hashlib
import json

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotation.lib.quality import quality_issues
from annotation.models import Blob, DemoStatus, Turn, TurnType, sha256_path
from annotation.store.blobstore import read_blob
from tests.support.review_data import recorded_demo
from workers.exports.dataset import export_demos, export_timeline, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.metrics import weblinx as weblinx_metrics

ODD_ELEMENTS = [
    "body",  # a scroll turn's element as a string
    {"attributes": ["data-webtasks-id", "x"], "bbox": "0,0,1,1", "textContent": 7, "tagName": 3},
    {"attributes": {"data-webtasks-id": 5}, "bbox": {"x": "1", "y": None, "width": [], "height": {}}},
    {"attributes": {"data-webtasks-id": "legacy-uid"}, "bbox": {"x": 1, "y": 2}, "outerHTML": 9},
    ["not", "an", "element"],
]
ODD_BBOXES = [b"5", b"[[1, 2], [3]]", b'{"legacy-uid": "0,0,1,1"}', b'{"legacy-uid": {"x": "a"}}']


def legacy_blob(data: bytes, media_type: str) -> str:
    """A blob stored without the checks of today's ingest."""
    sha = hashlib.sha256(data).hexdigest()
    name = default_storage.save(sha256_path(sha), ContentFile(data))
    Blob.objects.get_or_create(sha256=sha, defaults={"size": len(data), "media_type": media_type, "file": name})
    return sha


def add_legacy_turns(demo) -> list[Turn]:
    page = Turn.objects.filter(demonstration=demo, page__isnull=False).values_list("page_id", flat=True).first()
    last = Turn.objects.filter(demonstration=demo).order_by("-seq").first()
    rows = []
    shapes = [(element, ODD_BBOXES[i % len(ODD_BBOXES)]) for i, element in enumerate(ODD_ELEMENTS)]
    for i, (element, bboxes) in enumerate(shapes):
        intent = "scroll" if i == 0 else ("textInput" if i == 1 else "click")
        arguments = {"metadata": {"url": last.url, "tabId": 1}, "element": element}
        if intent == "textInput":
            arguments["text"] = ["typed"]  # not a string either
        rows.append(
            Turn.objects.create(
                demonstration=demo,
                client_id=f"legacy-{i}",
                seq=last.seq + 1 + i,
                type=TurnType.BROWSER,
                timestamp=last.timestamp + 1 + i,
                intent=intent,
                arguments=arguments,
                url=last.url,
                page_id=page,
                bboxes_id=legacy_blob(bboxes, "application/json"),
                frames=["not a frame", {"timestamp": "soon"}, 5],
                content_sha256="0" * 64,
            )
        )
    rows.append(
        Turn.objects.create(
            demonstration=demo,
            client_id="legacy-arguments",
            seq=last.seq + 10,
            type=TurnType.BROWSER,
            timestamp=last.timestamp + 10,
            intent="hover",
            arguments=["arguments", "as", "a", "list"],
            content_sha256="0" * 64,
        )
    )
    return rows


@pytest.fixture
def demo(alpha):
    demo = recorded_demo()
    add_legacy_turns(demo)
    demo.status = DemoStatus.VALIDATED
    demo.save(update_fields=["status"])
    return demo


def test_the_review_page_renders_legacy_shapes_for_everyone(client, reviewer, demo):
    client.force_login(reviewer)
    response = client.get(f"/review/{demo.name}/")

    assert response.status_code == 200
    rows = {row["id"]: row for row in response.context["turns"]}
    for turn in Turn.objects.filter(demonstration=demo, client_id__startswith="legacy-"):
        assert f'data-id="{turn.pk}"' in response.text
        assert (rows[turn.pk]["box"], rows[turn.pk]["frames"]) == (None, [])
    assert client.get("/review/").status_code == 200


def test_quality_checks_read_legacy_shapes(demo):
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    issues = quality_issues(turns, read_blob)
    legacy = {turn.pk for turn in turns if turn.client_id.startswith("legacy-")}
    assert legacy & {issue["turn"] for issue in issues}  # e.g. no screenshot: they are still checked


@pytest.mark.parametrize("export_format", ["weblinx", "mind2web"])
def test_exports_write_legacy_shapes(demo, tmp_path, export_format):
    counts = get_exporter(export_format).export(export_demos(demo.project, export_format), tmp_path, storage_blobs())
    assert counts.demos == 1


def test_weblinx_metrics_read_legacy_shapes(demo, tmp_path):
    get_exporter("weblinx").export(export_demos(demo.project, "weblinx"), tmp_path, storage_blobs())
    replay = json.loads(next(tmp_path.rglob("replay.json")).read_text())
    pages = weblinx_metrics.DirectoryPages(tmp_path / "demonstrations")
    for turn in replay["data"] if isinstance(replay, dict) else replay:
        page = (turn.get("state") or {}).get("page")
        state = pages(demo.name, page) if page else weblinx_metrics.NO_PAGE
        weblinx_metrics.reference_action(turn, state)
    assert len(export_timeline(demo)) == Turn.objects.filter(demonstration=demo).count()
