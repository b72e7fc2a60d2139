"""A corrected release (docs/recuration.md): what review changed in each demo imported from a release.

An imported demo keeps its release id (``source_id``) and every file it came with (``source["files"]``: path in its
folder → sha256). The WebLINX export writes it under its release id; when nothing changed it is written from those
files, byte for byte, else regenerated from the curated turns. ``changes.json`` lists, per imported demo exported,
each change against the release with who made it, the problems marked on it and its second review.

"Changed" is read from the curated state, not from the edit log: an edit undone, or one putting back what the
release had, changes nothing. The log only says who made each change that stands (the latest live edit of its kind).
"""

from annotation.actions.review.problems import marks_of
from annotation.models import DemoStatus, EditKind, SecondReview, curated_turns

STATUSES = ("unchanged", "changed", "dropped")


def is_imported(demo) -> bool:
    """Imported from a WebLINX or Mind2Web release with its files kept (imports before the files were kept:
    regenerated)."""
    source = demo.source if isinstance(demo.source, dict) else {}
    formats = ("weblinx", "mind2web")
    return bool(demo.source_id) and source.get("format") in formats and isinstance(source.get("files"), dict)


def original_files(demo, changes: dict) -> tuple:
    """``((path, sha256), ...)`` to write the demo from when it is unchanged, else ``()`` (regenerated)."""
    if not is_imported(demo) or changes["status"] != "unchanged" or demo.source.get("masked"):
        return ()
    return tuple(sorted(demo.source["files"].items()))


def live_authors(demo) -> dict:
    """``{(kind, turn id or None): username}`` of the latest edit of each kind on each turn that was not undone."""
    authors = {}
    edits = demo.edits.filter(undone_by__isnull=True).exclude(kind=EditKind.UNDO).select_related("author")
    for edit in edits.order_by("created_at", "id"):
        authors[(edit.kind, edit.turn_id)] = edit.author.username
    return authors


def original_index(demo, turn, position: int) -> int:
    """The turn's index in the release's replay.json (the import gave each turn its position as client id) or in
    the Mind2Web task's actions (its position: one turn per action, in order; its client id is the action_uid,
    which may be all digits too)."""
    weblinx = demo.source.get("format") == "weblinx"
    return int(turn.client_id) if weblinx and turn.client_id.isdecimal() else position


def turn_changes(demo, review_order: list) -> list:
    """Each change of a turn against the release, in the release's turn order."""
    turns = sorted(demo.turns.all(), key=lambda t: (t.timestamp, t.seq))
    curations = {curation.turn_id: curation for curation in demo.turn_curations.all()}
    curated = curated_turns(turns, curations, review_order)
    kept = [turn.pk for turn, curation in curated if not (curation and curation.deleted)]
    alive = set(kept)
    kept_at = {pk: n for n, pk in enumerate(kept)}  # place after review
    captured_at = {pk: n for n, pk in enumerate(turn.pk for turn in turns if turn.pk in alive)}  # place as captured
    authors = live_authors(demo)
    changes = []
    for position, turn in enumerate(turns):
        index, curation = original_index(demo, turn, position), curations.get(turn.pk)
        by = lambda kind, pk=turn.pk: authors.get((kind, pk))  # noqa: E731
        if curation and curation.deleted:
            changes.append({"index": index, "change": "deleted", "by": by(EditKind.DELETE)})
            continue
        if kept_at[turn.pk] != captured_at[turn.pk] and (EditKind.REORDER, turn.pk) in authors:
            moved = {"from": index, "to": kept_at[turn.pk], "by": by(EditKind.REORDER)}
            changes.append({"index": index, "change": "moved", **moved})
        if curation is None:
            continue
        text = turn.utterance if turn.type == "chat" else (turn.arguments or {}).get("text")
        if curation.text is not None and curation.text != text:
            changes.append({"index": index, "change": "text", "from": text, "to": curation.text, "by": by("edit_text")})
        if not curation.valid:
            changes.append({"index": index, "change": "invalid", "by": by(EditKind.SET_VALIDITY)})
        if curation.screenshot and curation.screenshot != turn.screenshot_id:
            chosen = {"from": turn.screenshot_id, "to": curation.screenshot, "by": by(EditKind.CHOOSE_SCREENSHOT)}
            changes.append({"index": index, "change": "screenshot", **chosen})
    return changes


def agreement(demo) -> dict | None:
    """The demo's second review once decided: both decisions and how many turn judgements agree."""
    second = SecondReview.objects.filter(demonstration=demo).select_related("first_reviewer", "reviewer").first()
    if second is None or not second.decision:
        return None
    turns = second.turns or {}
    same = sum(1 for pk, valid in turns.items() if second.first_turns.get(pk) == valid)
    return {
        "first": {"reviewer": second.first_reviewer.username, "decision": second.first_decision},
        "second": {"reviewer": second.reviewer.username, "decision": second.decision},
        "turns_agreeing": same,
        "turns": len(turns),
    }


def changes_of(demo, review_order: list) -> dict:
    """The demo's entry in ``changes.json`` (docs/recuration.md)."""
    authors = live_authors(demo)
    turns = turn_changes(demo, review_order)
    dropped = demo.status == DemoStatus.REJECTED and "invalid" not in demo.source
    dropped = dropped or (demo.discarded and demo.source.get("format") == "mind2web")  # Mind2Web leaves it out
    task = task_changes(demo)
    if "invalid" in demo.source and demo.status != DemoStatus.REJECTED:  # the release's invalid.json, taken back
        by = authors.get((EditKind.SET_STATUS, None))
        task.append({"change": "status", "field": "status", "from": "invalid", "to": demo.status, "by": by})
    masked = bool(demo.source.get("masked"))  # the import masked secrets: the release's replay.json is not exported
    status = "dropped" if dropped else ("changed" if turns or task or masked else "unchanged")
    marks = marks_of(demo)
    problems = [problem(mark, None) for mark in marks["task"]]
    turns_in_order = enumerate(sorted(demo.turns.all(), key=turn_key))
    index = {turn.pk: original_index(demo, turn, n) for n, turn in turns_in_order}
    problems += [problem(mark, index.get(pk)) for pk, items in marks["turns"].items() for mark in items]
    entry = {"demo": demo.source_id, "status": status, "turns": turns, "task": task, "problems": problems}
    if masked:
        entry["masked"] = True
    if dropped and demo.status == DemoStatus.REJECTED:
        entry["by"] = authors.get((EditKind.SET_STATUS, None))
    elif dropped:  # discarded: who set that field, not whoever edited the task's fields last
        entry["by"] = next((change["by"] for change in task if change["field"] == "discarded"), None)
    entry["agreement"] = agreement(demo)
    return entry


def turn_key(turn):
    return (turn.timestamp, turn.seq)


def problem(mark: dict, index) -> dict:
    return {"kind": mark["kind"], "label": mark["label"], "turn": index, "by": mark["reviewer"], "note": mark["note"]}


def task_changes(demo) -> list:
    """Each task field (description, website, category...) that edits not undone left other than it was before them:
    ``[{"change": "task", "field", "from", "to", "by"}]``."""
    first, last = {}, {}
    edits = demo.edits.filter(kind=EditKind.EDIT_METADATA, undone_by__isnull=True).select_related("author")
    for edit in edits.order_by("created_at", "id"):
        for name, value in (edit.after or {}).items():
            first.setdefault(name, (edit.before or {}).get(name))
            last[name] = (value, edit.author.username)
    return [
        {"change": "task", "field": name, "from": first[name], "to": value, "by": by}
        for name, (value, by) in sorted(last.items())
        if value != first[name]
    ]
