"""Automatic quality checks of a recorded demonstration, shown on its review page and counted in the list.

``quality_issues`` is pure over the turns (capture order), the targets reviewers re-picked (``TurnCuration.element``:
the checks of a turn's target read it instead of the recorded element) and a ``read(sha) -> bytes`` for page and
bboxes blobs (each blob read once); its result is cached with the review, and ``rechecked`` runs a retargeted turn's
checks again, reading only that turn's blobs. ``order_issues``
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


def target_of(turn, elements: dict) -> dict:
    """The element the turn acts on: the one a reviewer re-picked (``elements``: ``{turn id: element}``), else the
    recorded one."""
    return shapes.as_dict(elements.get(turn.pk)) or shapes.element_of(turn.arguments)


def outside(box: dict, width, height) -> bool:
    """True when the box does not overlap the viewport at all."""
    if not width or not height:
        return False
    left, top = box["x"], box["y"]
    return left + box["width"] <= 0 or top + box["height"] <= 0 or left >= width or top >= height


class BlobCache:
    """Reads each blob once: page HTML as text, bboxes as their set of uids. A blob gone from the store reads as
    empty (its uid is missing, as from a page that does not hold it): a check never fails a page view or an edit."""

    def __init__(self, read):
        self.reader, self.pages, self.boxes = read, {}, {}

    def read(self, sha: str) -> bytes:
        try:
            return self.reader(sha)
        except OSError:  # FileNotFoundError from the file system, as django-storages' S3 backend raises it
            return b""

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


def uid_problem(turn, uid, blobs: BlobCache) -> str:
    if not uid:
        return ""
    if turn.page_id and f'data-webtasks-id="{uid}"' not in blobs.page(turn.page_id):
        return f"{uid} not in the page HTML"
    if turn.bboxes_id and uid not in blobs.box_uids(turn.bboxes_id):
        return f"{uid} not in the bboxes"
    return ""


def uid_issue(turn, target: dict, blobs: BlobCache, known: dict) -> dict | None:
    """The turn's ``uid_missing`` issue, or None: from ``known`` (``{turn id: issue or None}``, kept from the cache)
    without reading its blobs when there."""
    if turn.pk in known:
        return known[turn.pk]
    problem = uid_problem(turn, shapes.uid_of(target), blobs)
    return issue(turn, "uid_missing", problem) if problem else None


def browser_issues(turn, target: dict, blobs: BlobCache, known: dict) -> list:
    found = []
    if not turn.screenshot_id and turn.intent not in NO_SCREENSHOT_INTENTS:
        found.append(issue(turn, "no_screenshot", turn.intent))
    if missing := uid_issue(turn, target, blobs, known):
        found.append(missing)
    box = shapes.box_of(target.get("bbox"))
    if box and outside(box, turn.viewport_width, turn.viewport_height):
        found.append(issue(turn, "box_outside"))
    return found


def pair_issues(previous, turn, uids: tuple) -> list:
    """Issues of ``turn`` against the turn before it (``uids``: the two turns' target uids)."""
    found = []
    if previous is None:
        return found
    gap = turn.timestamp - previous.timestamp
    if gap > LONG_GAP_SECONDS:
        found.append(issue(turn, "long_gap", f"{gap:.0f} s"))
    hovers = previous.intent == turn.intent == "hover"
    if hovers and uids[0] and uids[0] == uids[1]:
        found.append(issue(turn, "duplicate_hover", uids[1]))
    return found


def quality_issues(turns, read, elements=None, known=None) -> list[dict]:
    """Every issue of the demo's ``turns`` (in capture order), their targets as curated (``elements``: ``{turn id:
    element}`` re-picked in review); ``known``: ``uid_missing`` results kept (``rechecked``)."""
    blobs, found, previous, uid = BlobCache(read), [], None, None
    elements, known = elements or {}, known or {}
    for turn in turns:
        target = target_of(turn, elements)
        if turn.type == "chat" and not (turn.utterance or "").strip():
            found.append(issue(turn, "empty_chat"))
        elif turn.type == "browser":
            found.extend(browser_issues(turn, target, blobs, known))
        found.extend(pair_issues(previous, turn, (uid, shapes.uid_of(target))))
        previous, uid = turn, shapes.uid_of(target)
    return found


def rechecked(cached: list, turns, read, elements: dict, changed: set) -> list[dict]:
    """The cached issues after the targets of the ``changed`` turns (ids) were re-picked or put back: every check
    computed again from the turns (pure), the page and bboxes blobs read for the changed turns only (the other
    turns' ``uid_missing`` results are kept)."""
    known = {turn.pk: None for turn in turns if turn.pk not in changed}
    known.update({i["turn"]: i for i in cached if i["check"] == "uid_missing" and i["turn"] in known})
    return quality_issues(turns, read, elements, known)


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
