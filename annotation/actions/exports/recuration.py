"""Re-curation of a release (docs/recuration.md): what review changed in each demo imported from a release, the one
computation behind ``changes.json`` (the WebLINX export), the project's re-curation page and its API.

An imported demo keeps its release id (``source_id``) and every file it came with (``source["files"]``: path in its
folder → sha256). The WebLINX export writes it under its release id; when nothing changed it is written from those
files, byte for byte, else regenerated from the curated turns. ``changes.json`` lists, per imported demo exported,
each change against the release with who made it, the problems marked on it and its second review.

"Changed" is read from the curated state, not from the edit log: an edit undone, or one putting back what the
release had, changes nothing. The log only says who made each change that stands (the latest standing edit of its
kind on the turn: "accept all suggestions" chooses the screenshot of each turn it names; an undo leaves a change to
whoever made what it put back).

The page and the API read the same entries (``changes_of``), counted (``summary``) and turn by turn beside the raw
turns (``item_of``), so they never disagree with ``changes.json``.
"""

from django.db.models import Prefetch
from django.db.models.fields.json import KT

from ...lib.shapes import UID_ATTRIBUTE, uid_of
from ...models import (
    Demonstration,
    DemoReview,
    DemoStatus,
    Edit,
    EditKind,
    ProblemMark,
    Project,
    SecondReview,
    Turn,
    TurnCuration,
    TurnType,
    curated_turns,
)
from ..errors import NotFound, invalid
from ..manage.access import check_project_role
from ..review import VIEW_ALL_ROLES, kinds_of, marks_of
from .splits import split_of

STATUSES = ("unchanged", "changed", "dropped")
REVIEW_ROWS = (Edit, TurnCuration, ProblemMark)  # what review writes about a demo
TURN_CHANGES = ("deleted", "moved", "text", "value", "target", "invalid", "screenshot")
CHANGE_KINDS = (*TURN_CHANGES, "task", "status")  # task: a task field; status: a release's invalid demo taken back
CHANGE_LABELS = {
    "deleted": "Turns deleted",
    "moved": "Turns moved",
    "text": "Texts edited",
    "value": "Values edited",
    "target": "Targets changed",
    "invalid": "Turns marked invalid",
    "screenshot": "Screenshots chosen",
    "task": "Task fields changed",
    "status": "Release rejections taken back",
}
# Edits that set one or more turns' state: the turn is the edit's, or (accept all suggestions) each one it names.
TURN_EDITS = (
    EditKind.DELETE,
    EditKind.RESTORE,
    EditKind.EDIT_TEXT,
    EditKind.SET_VALIDITY,
    EditKind.CHOOSE_SCREENSHOT,
    EditKind.ACCEPT_SUGGESTIONS,
    EditKind.RETARGET,
)
SAME_AS = {EditKind.ACCEPT_SUGGESTIONS: EditKind.CHOOSE_SCREENSHOT}  # accepting a suggestion chooses a screenshot
RECURATION_CANNOT = "see the re-curation of imported demos (needs reviewer, researcher or admin)"


# --- Who may see it --------------------------------------------------------------------------------------------


def check_project_for_recuration(user, name: str) -> Project:
    """The project's re-curation page and API: those who see its curation and quality data (reviewers, researchers
    and admins, as the reviewers' κ page); 403 for annotators, 404 outside the project."""
    return check_project_role(user, name, VIEW_ALL_ROLES, RECURATION_CANNOT)


def sees_notes(user, project) -> bool:
    """Problem notes are shown as review shows them: to whoever may open the demo in review (every demo of the
    project for its reviewers, researchers and admins; ``changes.json`` goes to researchers and admins)."""
    return project.has_role(user, VIEW_ALL_ROLES)


RELEASE_FORMATS = ("weblinx", "mind2web")

# --- The demos -------------------------------------------------------------------------------------------------


def is_imported(demo) -> bool:
    """Imported from a WebLINX or Mind2Web release with its files kept (imports before the files were kept:
    regenerated)."""
    source = demo.source if isinstance(demo.source, dict) else {}
    return bool(demo.source_id) and source.get("format") in RELEASE_FORMATS and isinstance(source.get("files"), dict)


def imported_demos(project):
    """The project's demos imported from a release (``is_imported`` may still leave one out), by release id."""
    demos = Demonstration.objects.filter(project=project, source__format__in=RELEASE_FORMATS, source__has_key="files")
    return demos.exclude(source_id="").exclude(status=DemoStatus.RECORDING).order_by("source_id")


def split_by_release(project):
    """A function demo → its split under the scheme of the release it came from (a Mind2Web task's is fixed at
    import: train, test_task, test_website or test_domain)."""
    schemes = {scheme: split_of(project, scheme) for scheme in RELEASE_FORMATS}
    return lambda demo: schemes[demo.source["format"]](demo)


def has_imports(project) -> bool:
    return imported_demos(project).exists()


def with_history(demos, touched: set | None = None):
    """The demos with everything ``changes_of`` reads, a few queries for them all. ``touched``: for the list of a
    whole release, the ids of the demos review touched (``touched_ids``), whose turns alone are read (without an
    edit, a turn's curation or a problem mark no turn has a change or a mark, so ``changes_of`` reads none), and
    without their arguments (its element and page facts, most of a turn's bytes): only the typed text it compares."""
    turns = Turn.objects.order_by("timestamp", "seq")
    if touched is not None:
        turns = turns.filter(demonstration_id__in=sorted(touched)).defer("arguments")
        turns = turns.annotate(
            typed_text=KT("arguments__text"),
            typed_value=KT("arguments__value"),
            recorded_target=KT(f"arguments__element__attributes__{UID_ATTRIBUTE}"),
        )
    return demos.select_related(
        "project", "review", "second_review__first_reviewer", "second_review__reviewer"
    ).prefetch_related(
        Prefetch("turns", queryset=turns),
        "turn_curations",
        Prefetch("edits", queryset=Edit.objects.select_related("author")),
        Prefetch("problem_marks", queryset=ProblemMark.objects.select_related("reviewer")),
    )


def touched_ids(demos) -> set:
    """The ids of ``demos`` that review wrote about: an edit, a turn's curation or a problem mark."""
    ids = demos.values("pk")
    found = set()
    for model in REVIEW_ROWS:
        found.update(model.objects.filter(demonstration__in=ids).values_list("demonstration_id", flat=True).distinct())
    return found


def prefetched(demo, name: str):
    """The demo's related rows ``name`` when ``with_history`` read them already, else None."""
    cache = getattr(demo, "_prefetched_objects_cache", {})
    return list(cache[name]) if name in cache else None


def review_order(demo) -> list:
    """The curated order (turn ids; empty: as captured)."""
    try:
        return demo.review.order
    except DemoReview.DoesNotExist:
        return []


def edits_of(demo) -> list:
    """The demo's edits, oldest first, with their authors."""
    edits = prefetched(demo, "edits")
    if edits is None:
        edits = list(Edit.objects.filter(demonstration=demo).select_related("author"))
    return sorted(edits, key=lambda edit: (edit.created_at, edit.pk))


def standing_edits(edits: list) -> list:
    """The edits whose change stands as their author's: not undone, and not an undo putting back what an earlier
    edit had made (that stays the earlier edit's author's); an undo of an undo makes its change again, as its
    author's, and an undo of that puts back again. (An undo is an edit of the kind it undoes, with ``undoes`` set:
    in a chain of undos from an edit, the odd ones put back, the even ones redo.)"""
    by_pk = {edit.pk: edit for edit in edits}
    undone = {edit.undoes_id for edit in edits if edit.undoes_id}

    def restores(edit) -> bool:
        depth = 0
        while edit is not None and edit.undoes_id is not None:
            depth, edit = depth + 1, by_pk.get(edit.undoes_id)
        return depth % 2 == 1

    return [edit for edit in edits if edit.pk not in undone and edit.kind != EditKind.UNDO and not restores(edit)]


# --- The entries of changes.json -----------------------------------------------------------------------------------


def original_files(demo, changes: dict) -> tuple:
    """``((path, sha256), ...)`` to write the demo from when it is unchanged, else ``()`` (regenerated)."""
    if not is_imported(demo) or changes["status"] != "unchanged" or demo.source.get("masked"):
        return ()
    return tuple(sorted(demo.source["files"].items()))


def live_authors(edits: list) -> dict:
    """``{(kind, turn id or None): username}`` of the latest standing edit of each kind on each turn. "Accept all
    suggestions" is one edit of no turn over several turns: it counts as a screenshot chosen on each of them."""
    authors = {}
    for edit in standing_edits(edits):
        kind = SAME_AS.get(edit.kind, edit.kind)
        if edit.turn_id is None and edit.kind in TURN_EDITS:
            turns = [int(key) for key in (edit.after or {}) if str(key).isdecimal()]
        else:
            turns = [edit.turn_id]
        for turn in turns:
            authors[(kind, turn)] = edit.author.username
    return authors


def original_index(demo, turn, position: int) -> int:
    """The turn's index in the release's replay.json (the WebLINX import gave each turn its position as client id)
    or in the Mind2Web task's actions (its position: one turn per action, in order; its client id is the action's
    ``action_uid``, which may be a number that is not its place)."""
    weblinx = demo.source.get("format") == "weblinx"
    return int(turn.client_id) if weblinx and turn.client_id.isdecimal() else position


def turn_key(turn):
    return (turn.timestamp, turn.seq)


def turn_text(turn):
    """The text review may edit: a chat turn's utterance, a textInput's typed text, a change turn's value (None for
    other turns)."""
    if turn.type == TurnType.CHAT:
        return turn.utterance
    name = "value" if turn.intent == "change" else "text"
    if "arguments" in turn.get_deferred_fields():  # read for the list (``with_history``): the text alone
        return getattr(turn, f"typed_{name}")
    return (turn.arguments or {}).get(name)


def recorded_target(turn):
    """The uid of the element the turn acted on as recorded (None without one)."""
    if "arguments" in turn.get_deferred_fields():  # read for the list (``with_history``): the uid alone
        return turn.recorded_target or None
    return turn.element_uid


def curated_target(turn, curation):
    """The uid of the turn's target after review: the chosen element's, else the recorded one's."""
    return uid_of(curation.element) if curation and curation.element else recorded_target(turn)


def curation_state(demo, order: list) -> tuple:
    """``(turns in release order, {turn id: curation}, {turn id: place after review})``; deleted turns have no
    place."""
    turns = sorted(demo.turns.all(), key=turn_key)
    curations = {curation.turn_id: curation for curation in demo.turn_curations.all()}
    curated = curated_turns(turns, curations, order)
    kept = [turn.pk for turn, curation in curated if not (curation and curation.deleted)]
    return turns, curations, {pk: n for n, pk in enumerate(kept)}


def turn_changes(demo, order: list, authors: dict) -> list:
    """Each change of a turn against the release, in the release's turn order."""
    turns, curations, kept_at = curation_state(demo, order)
    captured_at = {pk: n for n, pk in enumerate(turn.pk for turn in turns if turn.pk in kept_at)}  # place as captured
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
        text = turn_text(turn)
        if curation.text is not None and curation.text != text:
            edited = {"from": text, "to": curation.text, "by": by(EditKind.EDIT_TEXT)}
            changes.append({"index": index, "change": "value" if turn.intent == "change" else "text", **edited})
        target = curated_target(turn, curation)
        if target != recorded_target(turn):
            retargeted = {"from": recorded_target(turn), "to": target, "by": by(EditKind.RETARGET)}
            changes.append({"index": index, "change": "target", **retargeted})
        if not curation.valid:
            changes.append({"index": index, "change": "invalid", "by": by(EditKind.SET_VALIDITY)})
        if curation.screenshot and curation.screenshot != turn.screenshot_id:
            chosen = {"from": turn.screenshot_id, "to": curation.screenshot, "by": by(EditKind.CHOOSE_SCREENSHOT)}
            changes.append({"index": index, "change": "screenshot", **chosen})
    return changes


def second_review_of(demo):
    """The demo's second review, or None (read with the demo by ``with_history``)."""
    if Demonstration.second_review.is_cached(demo):
        return getattr(demo, "second_review", None)
    return SecondReview.objects.filter(demonstration=demo).select_related("first_reviewer", "reviewer").first()


def agreement(demo) -> dict | None:
    """The demo's second review once decided: both decisions and how many turn judgements agree."""
    second = second_review_of(demo)
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


def changes_of(demo, order: list | None = None, kinds: list | None = None) -> dict:
    """The demo's entry in ``changes.json`` (docs/recuration.md). ``order``: its curated order, ``kinds``: its
    project's problem kinds, when read already."""
    order = review_order(demo) if order is None else order
    edits = edits_of(demo)
    authors = live_authors(edits)
    turns = turn_changes(demo, order, authors)
    dropped = demo.status == DemoStatus.REJECTED and "invalid" not in demo.source
    dropped = dropped or (demo.discarded and demo.source.get("format") == "mind2web")  # Mind2Web leaves it out
    task = task_changes(edits)
    if "invalid" in demo.source and demo.status != DemoStatus.REJECTED:  # the release's invalid.json, taken back
        by = authors.get((EditKind.SET_STATUS, None))
        task.append({"change": "status", "field": "status", "from": "invalid", "to": demo.status, "by": by})
    masked = bool(demo.source.get("masked"))  # the import masked secrets: the release's replay.json is not exported
    status = "dropped" if dropped else ("changed" if turns or task or masked else "unchanged")
    marks = marks_of(demo, kinds, marks=prefetched(demo, "problem_marks"))
    problems = [problem(mark, None) for mark in marks["task"]]
    index = {turn.pk: original_index(demo, turn, n) for n, turn in enumerate(sorted(demo.turns.all(), key=turn_key))}
    problems += [problem(mark, index.get(pk)) for pk, items in marks["turns"].items() for mark in items]
    entry = {"demo": demo.source_id, "status": status, "turns": turns, "task": task, "problems": problems}
    if masked:
        entry["masked"] = True
    if dropped:
        rejected = demo.status == DemoStatus.REJECTED
        entry["by"] = authors.get((EditKind.SET_STATUS, None)) if rejected else discarded_by(edits)
    entry["agreement"] = agreement(demo)
    return entry


def discarded_by(edits: list):
    """Who discarded the task: the author of the latest standing edit setting ``discarded`` (not of any later
    edit of another task field)."""
    setting = [e for e in standing_edits(edits) if e.kind == EditKind.EDIT_METADATA and "discarded" in (e.after or {})]
    return setting[-1].author.username if setting else None


def problem(mark: dict, index) -> dict:
    return {"kind": mark["kind"], "label": mark["label"], "turn": index, "by": mark["reviewer"], "note": mark["note"]}


def task_changes(edits: list) -> list:
    """Each task field (description, website, category...) that standing edits left other than it was before them:
    ``[{"change": "task", "field", "from", "to", "by"}]``."""
    first, last = {}, {}
    for edit in standing_edits(edits):
        if edit.kind != EditKind.EDIT_METADATA:
            continue
        for name, value in (edit.after or {}).items():
            first.setdefault(name, (edit.before or {}).get(name))
            last[name] = (value, edit.author.username)
    return [
        {"change": "task", "field": name, "from": first[name], "to": value, "by": by}
        for name, (value, by) in sorted(last.items())
        if value != first[name]
    ]


# --- The page and the API: the entries counted, and one item turn by turn -------------------------------------------


def change_counts(entry: dict) -> dict:
    """``{change kind: how many}`` of an entry, every kind listed."""
    counts = dict.fromkeys(CHANGE_KINDS, 0)
    for change in (*entry["turns"], *entry["task"]):
        counts[change["change"]] += 1
    return counts


def problem_counts(entry: dict) -> dict:
    """``{kind: marks}`` of an entry, the kinds marked only."""
    counts = {}
    for mark in entry["problems"]:
        counts[mark["kind"]] = counts.get(mark["kind"], 0) + 1
    return counts


def row_of(demo, split: str, entry: dict) -> dict:
    """An item of the list: the entry's figures beside the demo's name, split and review status."""
    return {
        "demo": entry["demo"],
        "name": demo.name,
        "split": split,
        "status": entry["status"],
        "review_status": demo.status,
        "changes": change_counts(entry),
        "problems": problem_counts(entry),
        "agreement": entry["agreement"],
    }


def kind_row(key: str, label: str, level: str) -> dict:
    return {"key": key, "label": label, "level": level, "turn_marks": 0, "task_marks": 0, "marks": 0, "items": 0}


def summary(entries: list, kinds: list) -> dict:
    """The counts over ``entries``: items by status, changes by kind, problem marks by kind (on turns, on the task,
    and the items marked), and the second reviews decided and agreeing."""
    by_kind = {kind["key"]: kind_row(kind["key"], kind["label"], kind["level"]) for kind in kinds}  # then others
    statuses, changes = dict.fromkeys(STATUSES, 0), dict.fromkeys(CHANGE_KINDS, 0)
    decided = same = 0
    for entry in entries:
        statuses[entry["status"]] += 1
        for kind, count in change_counts(entry).items():
            changes[kind] += count
        for mark in entry["problems"]:
            row = by_kind.setdefault(mark["kind"], kind_row(mark["kind"], mark["label"], ""))
            row["turn_marks" if mark["turn"] is not None else "task_marks"] += 1
            row["marks"] += 1
        for kind in problem_counts(entry):
            by_kind[kind]["items"] += 1
        if entry["agreement"]:
            decided += 1
            same += entry["agreement"]["first"]["decision"] == entry["agreement"]["second"]["decision"]
    return {
        "items": len(entries),
        "status": statuses,
        "changes": changes,
        "problems": list(by_kind.values()),
        "second_reviews": {"decided": decided, "same_decision": same},
    }


def check_filters(kinds: list, status, problem) -> tuple:
    """``(status or None, problem kind or None)``: a status of the list, a kind of the project's (400 naming the
    field otherwise)."""
    status, problem = status or None, problem or None
    if status is not None and status not in STATUSES:
        raise invalid("status", f"expected one of: {', '.join(STATUSES)}")
    if problem is not None and problem not in {kind["key"] for kind in kinds}:
        raise invalid("problem", "expected a problem kind of the project: " + ", ".join(k["key"] for k in kinds))
    return status, problem


def recuration_of(project, status=None, problem=None) -> dict:
    """The project's imported items: ``{"project", "filters", "counts" (every item), "items" (those the filters
    keep: ``row_of``)}``; ``status``: unchanged, changed or dropped; ``problem``: items with a mark of that kind."""
    kinds = kinds_of(project)
    split = split_by_release(project)
    rows, entries = [], []
    demos = imported_demos(project)
    for demo in with_history(demos, touched=touched_ids(demos)).iterator(chunk_size=100):
        if not is_imported(demo):
            continue
        entry = changes_of(demo, kinds=kinds)
        entries.append(entry)
        rows.append(row_of(demo, split(demo), entry))
    rows.sort(key=lambda row: row["demo"])  # as changes.json lists them (the database may collate otherwise)
    counts = summary(entries, kinds)
    status, problem = check_filters(counts["problems"], status, problem)
    kept = [row for row in rows if status in (None, row["status"]) and (problem is None or problem in row["problems"])]
    return {"project": project.name, "filters": {"status": status, "problem": problem}, "counts": counts, "items": kept}


def check_item(project, release_id) -> Demonstration:
    """The project's demo imported as ``release_id`` (404 otherwise; one with a NUL, which PostgreSQL cannot hold, is
    no release id)."""
    demo = None
    if "\x00" not in release_id:
        demo = with_history(imported_demos(project).filter(source_id=release_id)).first()
    if demo is None or not is_imported(demo):
        raise NotFound(
            f"no demo imported as {release_id!r} in {project.name}", [{"field": "release_id", "message": "not found"}]
        )
    return demo


def item_of(user, project, release_id) -> dict:
    """One imported item: ``{"item": row_of, "task_description", "changes": its changes.json entry, "turns": each
    raw turn in the release's order, the original beside the curated (None: deleted), with its changes and
    problems}``. Problem notes are None for whoever may not see them (``sees_notes``)."""
    demo = check_item(project, release_id)
    order = review_order(demo)
    entry = changes_of(demo, order)
    if not sees_notes(user, project):
        entry["problems"] = [{**mark, "note": None} for mark in entry["problems"]]
    turns, curations, kept_at = curation_state(demo, order)
    rows = []
    for position, turn in enumerate(turns):
        index, curation = original_index(demo, turn, position), curations.get(turn.pk)
        text = turn_text(turn)
        curated = None
        if turn.pk in kept_at:
            curated = {
                "position": kept_at[turn.pk],
                "text": curation.text if curation and curation.text is not None else text,
                "valid": curation.valid if curation else True,
                "target": curated_target(turn, curation),
                "screenshot": (curation.screenshot if curation and curation.screenshot else turn.screenshot_id),
            }
        rows.append(
            {
                "index": index,
                "turn": turn.pk,
                "type": turn.type,
                "speaker": turn.speaker,
                "intent": turn.intent,
                "url": turn.url,
                "original": {
                    "position": index,
                    "text": text,
                    "target": recorded_target(turn),
                    "screenshot": turn.screenshot_id,
                },
                "curated": curated,
                "changes": [change for change in entry["turns"] if change["index"] == index],
                "problems": [mark for mark in entry["problems"] if mark["turn"] == index],
            }
        )
    return {
        "project": project.name,
        "item": row_of(demo, split_by_release(project)(demo), entry),
        "task_description": demo.task_description,
        "changes": entry,
        "turns": rows,
    }
