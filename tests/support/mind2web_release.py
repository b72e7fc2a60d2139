"""A Mind2Web release written from the format doc (docs/recuration.md), for the import and re-curation tests: split
files whose tasks type, select and click on one page, a task whose second page is missing, a malformed task; the
review page's edit endpoint as a reviewer posts to it, and a Mind2Web export of project alpha."""

import io
import json
import tarfile

from annotation.models import ExportJob
from workers.exports.jobs import run_export

ODD = 'Café «naïve» 北京 🚀 <script>alert(1)</script> =HYPERLINK("http://evil.example","x")'
PAGE = (
    '<html backend_node_id="1" bounding_box_rect="0,0,1280,800"><body backend_node_id="2" '
    'bounding_box_rect="0,0,1280,792"><input backend_node_id="3" bounding_box_rect="10,10,200,40" type="search" '
    'aria_label="Search" data_pw_testid_buckeye="{uid}"></input><select backend_node_id="4" '
    'bounding_box_rect="220,10,100,40" name="size"><option backend_node_id="5" bounding_box_rect="-1,-1,-1,-1" '
    'value="s">Small</option><option backend_node_id="6" bounding_box_rect="-1,-1,-1,-1" value="m">Medium'
    '</option></select><button backend_node_id="7" bounding_box_rect="330,10,60,40" type="submit">Go</button>'
    "</body></html>"
)
MHTML = (
    b"From: <Saved by Blink>\r\nSubject: Shoes\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n"
    b'\ttype="text/html";\r\n\tboundary="----MultipartBoundary--x----"\r\n\r\n------MultipartBoundary--x----\r\n'
    b"Content-Type: text/html\r\n\r\n<html><body>Shoes</body></html>\r\n------MultipartBoundary--x------\r\n"
)
TARGETS = {"TYPE": ("input", "3"), "SELECT": ("select", "4"), "CLICK": ("button", "7")}


def action(uid: str, op: str, value: str = "", page: bool = True) -> dict:
    tag, node = TARGETS[op]
    attributes = json.dumps({"backend_node_id": node, "bounding_box_rect": "10,10,200,40"})
    candidate = {"tag": tag, "backend_node_id": node, "is_original_target": True, "is_top_level_target": True}
    return {
        "action_uid": uid,
        "operation": {"op": op, "original_op": op, "value": value},
        "raw_html": PAGE.replace("{uid}", uid) if page else "",
        "cleaned_html": "<html></html>",
        "pos_candidates": [{**candidate, "attributes": attributes}],
        "neg_candidates": [],
    }


def task(aid: str, text: str, website="shoeshop", domain="Shopping", subdomain="Shoes", **changes) -> dict:
    actions = [action(f"{aid}-1", "TYPE", text), action(f"{aid}-2", "SELECT", "Medium"), action(f"{aid}-3", "CLICK")]
    reprs = [f"[input]  Search -> TYPE: {text}", "[select]   -> SELECT: Medium", "[button]  Go -> CLICK"]
    record = {"annotation_id": aid, "website": website, "domain": domain, "subdomain": subdomain}
    return {**record, "confirmed_task": text, "action_reprs": reprs, "actions": actions, **changes}


def write_release(root):
    """Four split files: odd text, a task whose second page is missing, a malformed task, an empty split."""
    root.mkdir(parents=True, exist_ok=True)
    missing = task("t-missing", "Find boots")
    missing["actions"][1] = action("t-missing-2", "SELECT", "Medium", page=False)
    web = task("t-web", "Rent a car", website="carhire", domain="Travel", subdomain="Car")
    web["actions"][2]["pos_candidates"][0]["attributes"] = json.dumps({"title": "bell\x07 and form feed\x0c"})
    files = {
        "train.json": [task("t-odd", ODD), missing],
        "test_task.json": [task("t-plain", "Buy socks"), {"annotation_id": "t-bad", "website": "shoeshop"}],
        "test_website.json": [web],
        "test_domain.json": [],
    }
    for name, records in files.items():
        (root / name).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    snapshots = root / "task" / "t-plain" / "processed" / "snapshots"  # where the raw dump keeps them
    snapshots.mkdir(parents=True)
    (snapshots / "t-plain-1_before.mhtml").write_bytes(MHTML)
    return root


def edit(client, demo, revision, **body):
    answer = client.post(
        f"/review/{demo.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content


STATUSES = ["recorded", "in_review", "validated"]


def mind2web_export(client, tmp_path, name):
    """A Mind2Web export of project alpha through the API, run as the worker runs it, unpacked: its folder."""
    created = client.post(
        "/api/exports/", {"project": "alpha", "format": "mind2web", "statuses": STATUSES}, format="json"
    )
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(tmp_path / name, filter="data")
    return tmp_path / name / job.filename.removesuffix(".tar.gz")
