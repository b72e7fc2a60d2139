"""Mind2Web's raw dump beside each task's MHTML snapshots (issue 39; docs/mind2web.md#raw-dump), from what step mode
recorded with each step:

- ``task/<annotation_id>/<annotation_id>.har``: one HAR 1.2 log, the entries of every step's traffic in step order
  (each step's HAR holds the traffic since the step before);
- ``task/<annotation_id>/processed/dom_content.json``: ``[{"action_uid", "before": <DOM snapshot>}]``, the DOM
  snapshot with layout and computed styles of the page before each step that has one (format in docs/recorder.md);
- ``task/<annotation_id>/processed/screenshots/<action_uid>_before.png``: the screenshot before each step;
- ``task/<annotation_id>/trace.json``: the interaction (``TRACE_FORMAT``): each step's time, target, operation,
  value and page, and which of the files above are its own.

A file with nothing to hold is not written (a chat-mode demo has no traffic). Blobs are read one at a time and the
HAR and DOM snapshots are written as they are read, so memory holds one step's blob, never a whole task's.
"""

import datetime as dt
import json
from pathlib import Path

from annotation.lib.shapes import as_dict, as_text, box_of, element_of, uid_of

from ...archive import DeflatedFiles
from ...jsontext import indented
from ..base import BlobSource, ExportDemo

TRACE_FORMAT = "webtasks-trace/1"
CREATOR = {"name": "webtasks-mind2web-export", "version": "1"}


def write_har(path: Path, steps: list, blobs: BlobSource) -> int:
    """The steps' HARs merged into one log at ``path`` (written only when a step has one); the entries written."""
    pages, entries = [], 0
    with_har = [step for step in steps if step.turn.har]
    if not with_har:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write('{"log": {"version": "1.2", "creator": ' + json.dumps(CREATOR) + ', "entries": [')
        for step in with_har:
            log = json.loads(blobs.read(step.turn.har))["log"]  # checked at ingest: a HAR 1.2 log
            pages += log.get("pages") or []
            for entry in log["entries"]:
                out.write(("," if entries else "") + "\n" + json.dumps(entry, ensure_ascii=False))
                entries += 1
        out.write('\n], "pages": ' + json.dumps(pages, ensure_ascii=False) + "}}\n")
    return entries


def write_dom_content(path: Path, steps: list, blobs: BlobSource) -> dict:
    """``dom_content.json``; ``{action_uid: its index there}``."""
    with_dom = [step for step in steps if step.turn.dom_snapshot]
    if not with_dom:
        return {}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for index, step in enumerate(with_dom):
            snapshot = blobs.read(step.turn.dom_snapshot).decode("utf-8")  # checked at ingest: JSON of the format
            out.write(
                ("," if index else "") + f'\n{{"action_uid": {json.dumps(step.action_uid)}, "before": {snapshot}}}'
            )
        out.write("\n]\n")
    return {step.action_uid: index for index, step in enumerate(with_dom)}


def target_of(turn) -> dict:
    """The acted element as the trace names it: its tag, ``data-webtasks-id``, XPath and box (client px)."""
    element = element_of(turn.arguments)
    box = box_of(element.get("bbox"))
    return {
        "tag": as_text(element.get("tagName")).lower(),
        "uid": uid_of(element),
        "xpath": as_text(element.get("xpath")),
        "bbox": {key: box[key] for key in ("x", "y", "width", "height")} if box else None,
    }


def page_of(turn) -> dict:
    metadata = as_dict(as_dict(turn.arguments).get("metadata"))
    return {
        "url": as_text(metadata.get("url")),
        "tab_id": metadata.get("tabId"),
        "viewport": [metadata.get("viewportWidth"), metadata.get("viewportHeight")],
    }


def write_raw_dump(
    out: Path, demo: ExportDemo, annotation: str, steps: list, blobs: BlobSource, kept: DeflatedFiles | None = None
) -> dict:
    """Write the task's raw dump; what its ``quality.json`` item names (paths relative to the export's root).
    ``kept``: where a tar.gz job keeps files out of the folder (``trace.json`` is kept there in memory)."""
    task = out / "task" / annotation
    har_name, dom_name = f"task/{annotation}/{annotation}.har", f"task/{annotation}/processed/dom_content.json"
    entries = write_har(out / har_name, steps, blobs)
    dom_index = write_dom_content(out / dom_name, steps, blobs)
    trace, screenshots, snapshots = [], 0, 0
    start = demo.recording_start
    for step in steps:
        turn, files = step.turn, {}
        if step.snapshot:
            files["snapshot"] = f"processed/snapshots/{step.action_uid}_before.mhtml"
            snapshots += 1
        if turn.screenshot:
            files["screenshot"] = f"processed/screenshots/{step.action_uid}_before.png"
            blobs.copy_to(turn.screenshot, task / files["screenshot"])
            screenshots += 1
        if step.action_uid in dom_index:
            files["dom_snapshot"] = dom_index[step.action_uid]
        trace.append(
            {
                "action_uid": step.action_uid,
                "time": turn.timestamp,
                "wall_time": (start + dt.timedelta(seconds=turn.timestamp)).isoformat() if start else None,
                "target": target_of(turn),
                "operation": step.operation.as_dict(),
                "page": page_of(turn),
                "files": files,
            }
        )
    record = {"format": TRACE_FORMAT, "annotation_id": annotation, "steps": trace}
    text = (indented(record, 2, ensure_ascii=False) + "\n").encode("utf-8")  # a step a line
    if kept is not None:
        kept.keep(task / "trace.json", text)
    else:
        task.mkdir(parents=True, exist_ok=True)
        (task / "trace.json").write_bytes(text)
    return {
        "trace": f"task/{annotation}/trace.json",
        "har": har_name if entries or any(step.turn.har for step in steps) else None,
        "har_entries": entries,
        "dom_content": dom_name if dom_index else None,
        "dom_snapshots": len(dom_index),
        "screenshots": screenshots,
        "snapshots": snapshots,
    }
