"""Synthetic WebLINX demonstrations: chat and browser turns with their pages, bboxes and screenshots (pure).

Nothing here touches the database. ``generate_corpus`` yields ``DemoSpec`` objects holding what a recorder would
upload for one demonstration: the fields that start the recording, the blobs (PNG screenshots, page HTML, bboxes
JSON) and the turns in the submitted shape that ``annotation.lib.schema`` validates. The ``synth_demos`` command and
``bench.ingest`` feed them through the real ingest path (``annotation.actions`` or the HTTP API).

Realism that matters downstream: every element of a page carries a unique ``data-webtasks-id``; the bboxes file
has exactly the page's uids as keys; an acted element's uid and box are those of its page and bboxes; uids of a
URL are stable within a demo while its pages change a little from turn to turn (a live ticker, typed values,
scrolling), so blobs deduplicate only as much as in real recordings. Same seed, same turns and bytes.

Modules: ``sites`` (what demos are about), ``pages`` (elements, HTML, boxes, screenshots), ``session`` (a navigator
acting in tabs while chatting with an instructor); this one schedules turns and assembles demos.
"""

import datetime as dt
import random
import uuid
from dataclasses import dataclass, field

from .pages import VIEWPORT, Page, PageBuilder, screenshot
from .session import Session
from .sites import SITES, TIMEZONES, USER_AGENTS, Site

__all__ = [
    "SITES",
    "VIEWPORT",
    "DemoSpec",
    "Page",
    "PageBuilder",
    "Session",
    "Site",
    "generate_corpus",
    "generate_demo",
    "screenshot",
]
MIN_ELEMENTS = 16  # enough for the fixed header, which holds an element of every kind an intent needs
# One pass through every intent in an order a navigator could perform them; ``play`` schedules it first, so a
# demo of FULL_CYCLE_TURNS turns or more contains every intent.
INTENT_CYCLE = (
    "load",
    "scroll",
    "hover",
    "click",
    "textInput",
    "change",
    "submit",
    "copy",
    "paste",
    "tabcreate",
    "load",
    "tabswitch",
    "tabremove",
)
FULL_CYCLE_TURNS = 20
RANDOM_INTENTS = {
    "click": 30,
    "scroll": 12,
    "textInput": 10,
    "load": 8,
    "hover": 8,
    "change": 5,
    "submit": 4,
    "copy": 3,
    "paste": 3,
    "tabcreate": 2,
    "tabswitch": 2,
    "tabremove": 2,
}
TAB_INTENTS = ("tabcreate", "tabswitch", "tabremove")


@dataclass
class DemoSpec:
    """What a recorder uploads for one demonstration.

    ``fields`` are the keyword arguments of ``actions.do_start_recording`` (``recording_start`` a datetime);
    ``blobs`` are ``(bytes, media_type)`` pairs, each once, in the order turns first use them; ``turns`` are in
    the submitted shape, referring to blobs by sha256.
    """

    client_id: str
    fields: dict
    recording_end: dt.datetime
    blobs: list = field(default_factory=list)
    turns: list = field(default_factory=list)

    @property
    def browser_turns(self) -> int:
        return sum(turn["type"] == "browser" for turn in self.turns)

    @property
    def blob_bytes(self) -> int:
        return sum(len(data) for data, _ in self.blobs)

    def start_body(self, project: str, instructor: str | None = None) -> dict:
        """The JSON body of ``POST /api/recordings/`` that starts this demonstration."""
        body = {**self.fields, "project": project, "client_id": self.client_id}
        body["recording_start"] = self.fields["recording_start"].isoformat()
        return {**body, "instructor": instructor} if instructor else body


def random_intent(rng: random.Random, tabs: bool) -> str:
    names = [name for name in RANDOM_INTENTS if tabs or name not in TAB_INTENTS]
    return rng.choices(names, weights=[RANDOM_INTENTS[name] for name in names])[0]


def play(session: Session, turns: int, plan: list) -> None:
    """Fill ``turns`` slots: greetings, then browser actions (the plan first, as slots allow) and some chat."""
    rng = session.rng
    for slot in range(turns):
        if slot < 2:
            session.chat(*(("instructor", f"Hi! {session.site.task}"), ("navigator", "Sure, let me open it."))[slot])
        elif plan and (len(plan) >= turns - slot or rng.random() < 0.6):
            if session.browser(plan[0]) == plan[0]:
                plan.pop(0)
        elif rng.random() < 0.25:
            session.chat(rng.choice(("instructor", "navigator")))
        else:
            session.browser(random_intent(rng, tabs=not plan))


EPOCH = dt.datetime(2024, 1, 8, 9, tzinfo=dt.UTC)  # the corpus's recordings fall in the 200 days from here
SPREAD_DAYS = 200


def recent_epoch(now: dt.datetime, days: int = SPREAD_DAYS) -> dt.datetime:
    """An ``epoch`` whose ``days`` days of recordings all end before ``now``: they start in the ``days`` days before
    yesterday's midnight (a recording lasts far less than a day), and the same all day long for a given seed."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight - dt.timedelta(days=days + 1)


def generate_demo(
    seed: int,
    index: int,
    turns: int,
    elements: int,
    frames: bool = False,
    epoch: dt.datetime | None = None,
    spread_days: int = SPREAD_DAYS,
) -> DemoSpec:
    """Demo ``index`` of the corpus of ``seed``: same arguments, same turns and bytes. ``frames``: each captured
    action also has two other frames of its tab (a moment before and after), the candidates review's re-alignment
    offers; ``epoch``: the recordings fall in the ``spread_days`` days from there instead (the sample data takes
    ``recent_epoch``: every recording in the past). Neither changes anything else of the demo."""
    if elements < MIN_ELEMENTS:
        raise ValueError(f"pages need at least {MIN_ELEMENTS} elements, got {elements}")
    rng = random.Random(f"weblinx-synth/{seed}/{turns}/{elements}/{index}")
    site = SITES[(random.Random(f"weblinx-synth/{seed}").randrange(len(SITES)) + index) % len(SITES)]
    start = (epoch or EPOCH) + dt.timedelta(seconds=rng.randrange(spread_days * 86400))
    client_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    fields = {
        "mode": "chat",
        "task_description": site.task,
        "category": site.category,
        "subcategory": site.subcategory,
        "region": site.region,
        "instructor_sees_screen": index % 3 != 1,
        "recording_start": start,
        "timezone_offset_minutes": TIMEZONES[site.region],
        "user_agent": rng.choice(USER_AGENTS),
        "recorder_version": "1.0.0",
    }
    # Below FULL_CYCLE_TURNS a demo cannot hold every intent; rotating the plan per demo spreads them over the corpus.
    offset = 0 if turns >= FULL_CYCLE_TURNS else (5 * index) % len(INTENT_CYCLE)
    session = Session(rng, site, elements, start, frames=frames)
    play(session, turns, list(INTENT_CYCLE[offset:] + INTENT_CYCLE[:offset]))
    fields["websites"] = session.websites or [site.domain]
    end = start + dt.timedelta(seconds=(session.clock or 0.0) + 2.0)
    return DemoSpec(client_id, fields, end, list(session.blobs.values()), session.turns)


def generate_corpus(demos: int, turns: int, elements: int, seed: int = 0, frames: bool = False, epoch=None):
    """Yield ``demos`` DemoSpecs of ``turns`` turns on pages of ``elements`` elements, one at a time."""
    for index in range(demos):
        yield generate_demo(seed, index, turns, elements, frames, epoch)
