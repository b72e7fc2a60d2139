"""A hand-built project for the statistics and activity tests, with every count known.

alpha: demo A (validated, bbc, news/world, Europe, owner navigating with instructor, 2026-03-02 10:00–10:30)
with 2 chat + 5 browser turns; demo B (recorded, booking then bbc, travel/hotels, Asia, instructor without
sight of the screen, owner alone, 2026-03-03 09:00–09:15) with 1 chat + 2 browser turns; demo C still
recording (left out of the tables). Reviewer edits on 2026-03-02 at 12:00, 12:05, 12:09, 13:00, 13:02.
One form batch of 3 tasks whose template has a text input, two radios, a select and a textarea; teammate
submitted two assignments (1,800 s and 900 s, on 2026-03-04, both approved) and returned one.
"""

import datetime as dt

from annotation.models import (
    Assignment,
    AssignmentStatus,
    Batch,
    Demonstration,
    DemoStatus,
    Edit,
    EditKind,
    ReviewState,
    SplitConfig,
    Task,
    Turn,
    TurnType,
)

TEMPLATE = """<p>${question}</p><input type="text" name="answer"><input type="radio" name="r" value="1">
<input type="radio" name="r" value="2"><select name="s"><option>x</option></select><textarea name="t"></textarea>
<input type="hidden" name="h"><input type="submit">"""


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 3, day, hour, minute, tzinfo=dt.UTC)


def demo(project, navigator, name, start, minutes, **facts) -> Demonstration:
    return Demonstration.objects.create(
        project=project,
        name=name,
        client_id=name,
        navigator=navigator,
        recording_start=start,
        recording_end=start + dt.timedelta(minutes=minutes) if minutes else None,
        **facts,
    )


def chat(speaker, text):
    return {"type": TurnType.CHAT, "speaker": speaker, "utterance": text}


def act(intent, tag="", input_type=""):
    element = {"tagName": tag.upper(), "attributes": {"type": input_type} if input_type else {}} if tag else None
    return {"type": TurnType.BROWSER, "intent": intent, "arguments": {"element": element} if element else {}}


def add_turns(demonstration, turns) -> None:
    Turn.objects.bulk_create(
        Turn(demonstration=demonstration, client_id=f"c{seq}", seq=seq, timestamp=seq, content_sha256="0" * 64, **turn)
        for seq, turn in enumerate(turns)
    )


def build(project, owner, instructor, reviewer, teammate) -> dict:
    SplitConfig.objects.create(project=project, held_out_websites=["www.bbc.com"], held_out_domains=["travel"])
    a = demo(
        project,
        owner,
        "demoa",
        at(2, 10),
        30,
        instructor=instructor,
        status=DemoStatus.VALIDATED,
        websites=["www.bbc.com"],
        category="news",
        subcategory="world",
        region="Europe",
    )
    add_turns(
        a,
        [
            chat("instructor", "Hello there"),
            chat("navigator", "ok"),
            act("click", "button"),
            act("textInput", "input", "text"),
            act("change", "select"),
            act("change", "input", "checkbox"),
            act("scroll"),
        ],
    )
    b = demo(
        project,
        owner,
        "demob",
        at(3, 9),
        15,
        status=DemoStatus.RECORDED,
        instructor_sees_screen=False,
        websites=["www.booking.com", "www.bbc.com"],
        category="travel",
        subcategory="hotels",
        region="Asia",
    )
    add_turns(b, [chat("instructor", "Book a room in Kyoto please"), act("click", "a"), act("load")])
    c = demo(project, owner, "democ", at(5, 9), 0, websites=["www.x.com"], category="news")
    add_turns(c, [act("click", "a")])
    for minute, kind in ((0, EditKind.SET_VALIDITY), (5, EditKind.SET_VALIDITY), (9, EditKind.DELETE)):
        edit(a, reviewer, kind, at(2, 12, minute))
    for minute in (0, 2):
        edit(b, reviewer, EditKind.COMMENT, at(2, 13, minute))
    batch = Batch.objects.create(project=project, name="b1", html_template=TEMPLATE)
    tasks = [Task.objects.create(batch=batch, index=index, inputs={"question": str(index)}) for index in range(3)]
    for task, status, seconds, accepted in (  # one after the other: 14:00–14:30, then 14:45–15:00
        (tasks[0], AssignmentStatus.SUBMITTED, 1800, at(4, 14)),
        (tasks[1], AssignmentStatus.SUBMITTED, 900, at(4, 14, 45)),
        (tasks[2], AssignmentStatus.RETURNED, None, at(4, 14)),
    ):
        submitted = accepted + dt.timedelta(seconds=seconds) if seconds else None
        Assignment.objects.create(
            task=task,
            worker=teammate,
            status=status,
            accepted_at=accepted,
            expires_at=at(5, 14),
            submitted_at=submitted,
            work_seconds=seconds,
            review=ReviewState.APPROVED if seconds else ReviewState.PENDING,
        )
    return {"a": a, "b": b, "c": c, "batch": batch}


def edit(demonstration, author, kind, when) -> None:
    made = Edit.objects.create(demonstration=demonstration, author=author, kind=kind, revision=1)
    Edit.objects.filter(pk=made.pk).update(created_at=when)  # auto_now_add: the time is set after
