"""Automatic quality checks of a recorded demonstration, shown on its review page and counted in the list.

``quality_issues`` is pure over the turns (capture order) and a ``read(sha) -> bytes`` for page and bboxes blobs
(each blob read once); its result is cached with the review, since the raw capture never changes. ``order_issues``
checks the curated order (it changes with every reorder, so it is computed when the page is shown), and
``alignment_issues`` the curated screenshots against the realign worker's suggestions from the tab video.
An issue is ``{"turn": turn id or None, "check": code, "message": text}``.
"""

import json

from . import shapes

LONG_GAP_SECONDS = 60.0
NO_SCREENSHOT_INTENTS = {"tabcreate", "tabremove", "tabswitch"}  # tab events have no page to capture

CHECKS = {
    "no_screenshot": "browser turn without screenshot",
    "uid_missing": "element uid missing from its page or bboxes",
    "box_outside": "element box outside the viewport",
    "duplicate_hover": "consecutive duplicate hover",
    "empty_chat": "chat turn with empty text",
    "long_gap": "long gap before this turn",
    "time_order": "out of time order",
}
# On the curated screenshots (computed when shown or exported, like time_order), not a check of the raw capture.
ALIGNMENT = "screenshot_alignment"
LABELS = {**CHECKS, ALIGNMENT: "screenshot is not the frame the tab video shows at the action"}
FROM_VIDEO = "video"  # the realign worker's suggestion came from the tab video (``workers/review/realign.py``)


def issue(turn, check: str, detail: str = "") -> dict:
    return {"turn": turn.pk, "check": check, "message": LABELS[check] + (f": {detail}" if detail else "")}


def box_of(turn) -> dict | None:
    return shapes.box_of(shapes.element_of(turn.arguments).get("bbox"))


def outside(box: dict, width, height) -> bool:
    """True when the box does not overlap the viewport at all."""
    if not width or not height:
        return False
    left, top = box["x"], box["y"]
    return left + box["width"] <= 0 or top + box["height"] <= 0 or left >= width or top >= height


class BlobCache:
    """Reads each blob once: page HTML as text, bboxes as their set of uids."""

    def __init__(self, read):
        self.read, self.pages, self.boxes = read, {}, {}

    def page(self, sha: str) -> str:
        if sha not in self.pages:
            self.pages[sha] = self.read(sha).decode("utf-8", "replace")
        return self.pages[sha]

    def box_uids(self, sha: str) -> set:
        if sha not in self.boxes:
            try:
                self.boxes[sha] = shapes.box_uids(json.loads(self.read(sha)))
            except (ValueError, RecursionError):  # a legacy blob that is not JSON: no uid is in it
                self.boxes[sha] = set()
        return self.boxes[sha]


def uid_problem(turn, blobs: BlobCache) -> str:
    uid = turn.element_uid
    if not uid:
        return ""
    if turn.page_id and f'data-webtasks-id="{uid}"' not in blobs.page(turn.page_id):
        return f"{uid} not in the page HTML"
    if turn.bboxes_id and uid not in blobs.box_uids(turn.bboxes_id):
        return f"{uid} not in the bboxes"
    return ""


def browser_issues(turn, blobs: BlobCache) -> list:
    found = []
    if not turn.screenshot_id and turn.intent not in NO_SCREENSHOT_INTENTS:
        found.append(issue(turn, "no_screenshot", turn.intent))
    if problem := uid_problem(turn, blobs):
        found.append(issue(turn, "uid_missing", problem))
    box = box_of(turn)
    if box and outside(box, turn.viewport_width, turn.viewport_height):
        found.append(issue(turn, "box_outside"))
    return found


def pair_issues(previous, turn) -> list:
    found = []
    if previous is None:
        return found
    gap = turn.timestamp - previous.timestamp
    if gap > LONG_GAP_SECONDS:
        found.append(issue(turn, "long_gap", f"{gap:.0f} s"))
    hovers = previous.intent == turn.intent == "hover"
    if hovers and previous.element_uid and previous.element_uid == turn.element_uid:
        found.append(issue(turn, "duplicate_hover", turn.element_uid))
    return found


def quality_issues(turns, read) -> list[dict]:
    """Every issue of the demo's ``turns`` (in capture order)."""
    blobs, found, previous = BlobCache(read), [], None
    for turn in turns:
        if turn.type == "chat" and not (turn.utterance or "").strip():
            found.append(issue(turn, "empty_chat"))
        elif turn.type == "browser":
            found.extend(browser_issues(turn, blobs))
        found.extend(pair_issues(previous, turn))
        previous = turn
    return found


def order_issues(ordered, deleted: set) -> list[dict]:
    """Turns the curated order puts against time order (``ordered``: the turns in curated order; deleted turns are
    left out of the export, so not checked): both turns of each inversion with an earlier-recorded turn below a
    later one are flagged, since an export keeps this order."""
    kept = [turn for turn in ordered if turn.pk not in deleted]
    found = []
    for up, down in zip(kept, kept[1:], strict=False):
        if down.timestamp < up.timestamp:
            found.append(issue(up, "time_order", f"recorded at {up.timestamp:.1f} s, after turn {down.seq} below"))
            found.append(issue(down, "time_order", f"recorded at {down.timestamp:.1f} s, before turn {up.seq} above"))
    return found


def alignment_issues(turns, curations: dict, chosen: set) -> list[dict]:
    """Kept turns whose exported screenshot is not the frame the tab video shows at the action, and that no reviewer
    chose (``chosen``: turn ids whose current screenshot a reviewer picked). Only a suggestion made from the video
    is evidence: without video the worker's suggestion (the last frame before the action) is a candidate offered
    on the review page, not a verdict on the turn's own screenshot, which the recorder takes at the action."""
    found = []
    for turn in turns:
        curation = curations.get(turn.pk)
        if curation is None or curation.deleted or curation.suggested_from != FROM_VIDEO or turn.pk in chosen:
            continue
        shown = curation.screenshot or turn.screenshot_id
        if curation.suggested_screenshot and shown != curation.suggested_screenshot:
            found.append(issue(turn, ALIGNMENT, "use the suggested frame (a) or choose the right one"))
    return found
