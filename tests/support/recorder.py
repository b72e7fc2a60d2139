"""The HTTP steps the recorder extension takes, as small helpers over a DRF ``APIClient``.

They return the raw response, so tests assert status codes and bodies themselves.
"""

import json
from pathlib import Path

from annotation.models import Blob, Demonstration
from tests.support.payloads import BlobFile, state_blobs, state_refs, step_turn
from tests.support.rawdump import har, har_blob, har_entry


def recordings_url(name: str | None = None, action: str | None = None) -> str:
    url = "/api/recordings/" if name is None else f"/api/recordings/{name}/"
    return f"{url}{action}/" if action else url


def blob_url(sha256: str, project: str | None = "alpha") -> str:
    """The blob endpoint; ``HEAD`` and ``PUT`` say which project they are for (``project=None``: they do not)."""
    return f"/api/blobs/{sha256}" + (f"?project={project}" if project else "")


def start_recording(client, project: str = "alpha", client_id: str = "rec-1", **fields):
    body = {"project": project, "client_id": client_id, "task_description": "Find the weather", **fields}
    return client.post(recordings_url(), body, format="json")


def put_blob(client, blob: BlobFile, sha256: str | None = None, media_type: str | None = None, project="alpha"):
    url = blob_url(sha256 or blob.sha256, project)
    return client.put(url, blob.data, content_type=media_type or blob.media_type)


def put_raw(client, data: bytes, media_type: str, sha256: str, project="alpha"):
    return client.put(blob_url(sha256, project), data, content_type=media_type)


def upload_blobs(client, blobs, project="alpha") -> None:
    """Upload each blob the way the recorder does: HEAD (404), then PUT (201)."""
    for blob in blobs:
        assert client.head(blob_url(blob.sha256, project)).status_code == 404
        response = put_blob(client, blob, project=project)
        assert response.status_code == 201, response.content


def missing(client, shas, project="alpha"):
    """``POST /api/blobs/missing/`` for ``project``."""
    return client.post("/api/blobs/missing/", {"project": project, "sha256": shas}, format="json")


def post_turns(client, name: str, turns):
    return client.post(recordings_url(name, "turns"), {"turns": turns}, format="json")


def post_raw(client, name: str, body: bytes, content_type: str = "application/json"):
    return client.post(recordings_url(name, "turns"), body, content_type=content_type)


def finish(client, name: str, **body):
    return client.post(recordings_url(name, "finish"), body, format="json")


def start_demo(client, **fields) -> Demonstration:
    response = start_recording(client, **fields)
    assert response.status_code == 201, response.content
    return Demonstration.objects.get(name=response.json()["name"])


def stored_files(media: Path) -> list[Path]:
    """Every file written to blob storage so far."""
    return sorted(path for path in media.rglob("*") if path.is_file()) if media.exists() else []


def assert_nothing_stored(demo: Demonstration | None, media: Path, turns: int = 0, blobs: int = 0) -> None:
    """No partial write: the demo keeps ``turns`` turns, and storage keeps ``blobs`` rows and as many files."""
    if demo is not None:
        assert demo.turns.count() == turns
    assert Blob.objects.count() == blobs
    assert len(stored_files(media)) == blobs


BUNDLE = "application/x-webtasks-batch"


def frame(turns: list, blobs: list[BlobFile], sizes: dict | None = None, shas: dict | None = None) -> bytes:
    """A batch body: the manifest line, then the blobs' bytes (``sizes``/``shas``: lie about blob i)."""
    sizes, shas = sizes or {}, shas or {}
    manifest = {
        "turns": turns,
        "blobs": [
            {"sha256": shas.get(i, blob.sha256), "media_type": blob.media_type, "size": sizes.get(i, len(blob.data))}
            for i, blob in enumerate(blobs)
        ],
    }
    return json.dumps(manifest).encode() + b"\n" + b"".join(blob.data for blob in blobs)


def post_bundle(client, name: str, body: bytes, gzipped: bool = False, **headers):
    if gzipped:
        headers["HTTP_CONTENT_ENCODING"] = "gzip"
    return client.post(
        recordings_url(name, "bundle"), body, content_type=headers.pop("content_type", BUNDLE), **headers
    )


def record_step_task(client, index: int, prefix: str, traffic: bool = True) -> str:
    """A finished step-mode task through the ingest API (client id ``{prefix}-{index}``): one click whose recorded
    traffic is a request to ``/api/{index}``, or that has none without ``traffic``."""
    demo, state = start_demo(client, client_id=f"{prefix}-{index}"), state_blobs(index)
    log = har_blob(har([har_entry(f"https://www.example.com/api/{index}")]))
    turn = step_turn("s1", timestamp=1.0, **state_refs(state), **({"har": log.sha256} if traffic else {}))
    blobs = [*state.values(), *([log] if traffic else [])]
    assert post_bundle(client, demo.name, frame([turn], blobs)).status_code == 201
    assert finish(client, demo.name).status_code == 200
    return demo.name
