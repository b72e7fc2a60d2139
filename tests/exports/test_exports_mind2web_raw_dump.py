"""The Mind2Web export's raw dump (issue 39) through the export API on the real worker: per task the merged HAR,
``processed/dom_content.json``, the screenshots and ``trace.json`` beside the MHTML snapshots, all named in
``manifest.json`` and in the task's ``quality.json`` item."""

import io
import json
import tarfile

import pytest

from tests.support.jobs import poll_job
from tests.support.payloads import MHTML, BlobFile, state_blobs, state_refs, step_turn
from tests.support.rawdump import dom_blob, dom_snapshot, har, har_blob, har_entry
from tests.support.recorder import finish, frame, post_bundle, start_demo

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
EXPORTS = "/api/exports/"


def record_steps(client, index: int) -> str:
    """A recording of two steps: the first with its MHTML, traffic (two requests) and DOM snapshot, the second with
    traffic only; finished. Its name."""
    demo, first, second = start_demo(client, client_id=f"rec-{index}"), state_blobs(index), state_blobs(index + 100)
    mhtml = BlobFile(MHTML, "multipart/related")
    traffic = har_blob(har([har_entry(f"https://www.example.com/api/{index}"), har_entry(status=302)]))
    later = har_blob(har([har_entry(f"https://www.example.com/done/{index}")]))
    snapshot = dom_blob(dom_snapshot(f"https://www.example.com/search?task={index}"))
    properties = {"mhtml": mhtml.sha256}
    turns = [
        step_turn("s1", timestamp=1.0, **state_refs(first), har=traffic.sha256, dom_snapshot=snapshot.sha256),
        step_turn("s2", timestamp=2.5, **state_refs(second), har=later.sha256),
    ]
    turns[0]["arguments"]["properties"] |= properties
    blobs = list(
        {blob.sha256: blob for blob in (*first.values(), *second.values(), mhtml, traffic, later, snapshot)}.values()
    )
    assert post_bundle(client, demo.name, frame(turns, blobs)).status_code == 201
    assert finish(client, demo.name).status_code == 200
    return demo.name


def exported(client, job_id) -> dict:
    final = poll_job(client, f"{EXPORTS}{job_id}/")[-1]
    assert final["status"] == "done", final["error"]
    data = b"".join(client.get(final["download_url"]).streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() or m.islnk()}
    top = f"alpha-mind2web-{job_id}/"
    return {name.removeprefix(top): content for name, content in files.items()}


def test_each_task_of_the_export_holds_its_raw_dump(owner, researcher, api_for, worker, alpha):
    recorder = api_for(owner)
    names = [record_steps(recorder, index) for index in range(3)]  # three flows in one project

    client = api_for(researcher)
    job = client.post(EXPORTS, {"project": "alpha", "format": "mind2web", "statuses": ["recorded"]}, format="json")
    assert job.status_code == 202, job.content
    files = exported(client, job.json()["id"])

    manifest = json.loads(files["manifest.json"])["files"]
    quality = {item["id"]: item for item in json.loads(files["quality.json"])["items"]}
    records = [
        record
        for split in ("train", "test_task", "test_website", "test_domain")
        for record in json.loads(files[f"{split}.json"])
    ]
    assert len(records) == len(names) == len(quality)
    for record in records:
        task = f"task/{record['annotation_id']}"
        first, second = (action["action_uid"] for action in record["actions"])
        raw = quality[record["annotation_id"]]["raw_dump"]
        assert raw == {
            "trace": f"{task}/trace.json",
            "har": f"{task}/{record['annotation_id']}.har",
            "har_entries": 3,
            "dom_content": f"{task}/processed/dom_content.json",
            "dom_snapshots": 1,
            "screenshots": 2,
            "snapshots": 1,
        }
        for name in (raw["trace"], raw["har"], raw["dom_content"], f"{task}/processed/snapshots/{first}_before.mhtml"):
            assert name in manifest
            assert name in files

        log = json.loads(files[raw["har"]])["log"]
        assert log["version"] == "1.2"
        assert [entry["response"]["status"] for entry in log["entries"]] == [200, 302, 200]
        assert log["entries"][2]["request"]["url"].startswith("https://www.example.com/done/")

        dom = json.loads(files[raw["dom_content"]])
        assert [item["action_uid"] for item in dom] == [first]
        assert dom[0]["before"]["format"] == "webtasks-dom-snapshot/1"

        for uid in (first, second):
            assert files[f"{task}/processed/screenshots/{uid}_before.png"].startswith(b"\x89PNG")

        trace = json.loads(files[raw["trace"]])
        assert trace["format"] == "webtasks-trace/1"
        steps = trace["steps"]
        assert [(step["action_uid"], step["time"]) for step in steps] == [(first, 1.0), (second, 2.5)]
        assert steps[0]["operation"] == {"op": "CLICK", "original_op": "CLICK", "value": ""}
        assert steps[0]["target"]["uid"]
        assert steps[0]["page"]["url"].startswith("https://")
        assert steps[0]["files"] == {
            "snapshot": f"processed/snapshots/{first}_before.mhtml",
            "screenshot": f"processed/screenshots/{first}_before.png",
            "dom_snapshot": 0,
        }
        assert steps[1]["files"] == {"screenshot": f"processed/screenshots/{second}_before.png"}
