"""Bulk-inserted statistics corpora: many demonstrations and turns written with ``bulk_create``, without pages,
screenshots or the ingest path, for the statistics benchmark and query-count tests (a WebLINX-sized project,
2,337 demos and 100,000 turns, is stored in seconds). Deterministic for a seed.

The turns have what the statistics read (type, speaker, utterance, intent, the acted element's tag and type);
the demos vary category, subcategory, region, websites, status and whether the instructor saw the screen.
"""

import datetime as dt
import random
import string

from django.db import transaction

from ..models import Demonstration, DemoStatus, Edit, EditKind, Turn, TurnType
from .sites import SITES

INTENTS = ("click", "textInput", "scroll", "load", "change", "submit", "hover", "tabcreate")
ELEMENTS = (("button", ""), ("input", "text"), ("select", ""), ("input", "checkbox"), ("a", ""))
REGIONS = ("North America", "Europe", "Asia", "Africa", "Oceania")
STATUSES = (
    DemoStatus.RECORDED,
    DemoStatus.IN_REVIEW,
    DemoStatus.VALIDATED,
    DemoStatus.VALIDATED,
    DemoStatus.REJECTED,
    DemoStatus.RETURNED,
)
BATCH = 5000


def browser_arguments(rng, intent: str) -> dict:
    if intent not in ("click", "textInput", "change", "submit", "hover"):
        return {}
    tag, input_type = rng.choice(ELEMENTS)
    attributes = {"data-webtasks-id": f"uid-{rng.randrange(10**6)}", **({"type": input_type} if input_type else {})}
    return {"element": {"tagName": tag.upper(), "attributes": attributes}, "text": "typed" * (intent == "textInput")}


def make_turn(rng, demo, seq: int) -> Turn:
    timestamp = seq * 3.0
    if seq % 3 == 0:
        speaker = "instructor" if seq % 6 == 0 else "navigator"
        words = " ".join(
            rng.choice(("find", "the", "next", "page", "please", "ok", "done")) for _ in range(rng.randrange(1, 30))
        )
        return Turn(
            demonstration=demo,
            client_id=f"t{seq}",
            seq=seq,
            type=TurnType.CHAT,
            timestamp=timestamp,
            speaker=speaker,
            utterance=words,
            content_sha256="0" * 64,
        )
    intent = rng.choice(INTENTS)
    return Turn(
        demonstration=demo,
        client_id=f"t{seq}",
        seq=seq,
        type=TurnType.BROWSER,
        timestamp=timestamp,
        intent=intent,
        arguments=browser_arguments(rng, intent),
        content_sha256="0" * 64,
    )


def make_demo(rng, project, navigator, index: int, start: dt.datetime) -> Demonstration:
    site = SITES[index % len(SITES)]
    begun = start + dt.timedelta(hours=index)
    return Demonstration(
        project=project,
        name="".join(rng.choice(string.ascii_lowercase) for _ in range(12)),
        client_id=f"bulk-{project.pk}-{index}",
        navigator=navigator,
        websites=[site.domain, *(["www.example.org"] if index % 4 == 0 else [])],
        category=site.category,
        subcategory=site.subcategory,
        region=REGIONS[index % len(REGIONS)],
        instructor_sees_screen=index % 9 != 0,
        status=STATUSES[index % len(STATUSES)],
        recording_start=begun,
        recording_end=begun + dt.timedelta(minutes=5 + index % 20),
    )


def bulk_corpus(project, navigator, demos: int, turns: int, seed: int = 0, edits_per_demo: int = 2) -> None:
    """Store ``demos`` demonstrations with ``turns`` turns in all (spread evenly) in ``project``."""
    rng = random.Random(f"{seed}:{project.pk}")
    start = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    with transaction.atomic():
        rows = Demonstration.objects.bulk_create(
            [make_demo(rng, project, navigator, index, start) for index in range(demos)], batch_size=BATCH
        )
        per_demo, extra = divmod(turns, max(demos, 1))
        pending = []
        for index, demo in enumerate(rows):
            pending.extend(make_turn(rng, demo, seq) for seq in range(per_demo + (index < extra)))
            if len(pending) >= BATCH:
                Turn.objects.bulk_create(pending)
                pending = []
        Turn.objects.bulk_create(pending)
        edits = [
            Edit(
                demonstration=demo,
                author=navigator,
                kind=EditKind.SET_VALIDITY if n else EditKind.SET_STATUS,
                revision=n + 1,
            )
            for demo in rows
            for n in range(edits_per_demo)
        ]
        Edit.objects.bulk_create(edits, batch_size=BATCH)
