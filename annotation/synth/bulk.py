"""Bulk-inserted corpora: many demonstrations and turns written with ``bulk_create``, without the ingest path.
``bulk_corpus``: without pages or screenshots, for the statistics benchmark and query-count tests (a
WebLINX-sized project, 2,337 demos and 100,000 turns, is stored in seconds); deterministic for a seed.
``bulk_copies``: copies of ingested demos, each turn with blob files of its own, for the full-size export
benchmark.

The turns have what the statistics read (type, speaker, utterance, intent, the acted element's tag and type);
the demos vary category, subcategory, region, websites, status and whether the instructor saw the screen.
"""

import datetime as dt
import hashlib
import random
import string
import struct
import zlib
from pathlib import Path

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


# --- Full-size export corpora ----------------------------------------------------------------------------------


def variant(data: bytes, media_type: str, copy: int) -> bytes:
    """Other bytes with the same meaning, distinct per ``copy``: a comment after an HTML page, a zero box under an
    unused key in a bboxes blob, a ``tEXt`` chunk after a PNG's header (its pixels untouched)."""
    mark = f"copy-{copy}"
    if media_type == "image/png" and data[12:16] == b"IHDR":
        end = 8 + 25  # signature, then IHDR: length, type, 13 bytes, CRC
        body = b"tEXt" + b"synth\x00" + mark.encode()
        chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
        return data[:end] + chunk + data[end:]
    if media_type == "application/json" and data.startswith(b"{") and len(data) > 2:
        return b'{"%s":{"x":0,"y":0,"width":0,"height":0},' % mark.encode() + data[1:]
    if media_type.startswith("text/"):
        return data + f"\n<!-- {mark} -->\n".encode()
    return data + mark.encode()  # other kinds are never referenced by the synthetic turns


def bulk_copies(project, demos: int, turns: int, status: str = DemoStatus.VALIDATED) -> int:
    """Grow ``project`` to ``demos`` more demonstrations and ``turns`` more turns in all by copying the demos it has
    (stored through the ingest path, e.g. by ``synth_demos``): copy ``n`` of a template takes its fields and its
    first turns, each with its own blobs (``variant`` bytes, written into local storage, ``Blob`` and
    ``ProjectBlob`` rows), so the copies' files are as many and as large as real recordings'. Bulk inserts, a
    chunk of demos per transaction. Returns the number of blob files written. Local storage only."""
    from django.core.files.storage import default_storage

    from ..models import Blob, ProjectBlob, sha256_path

    templates = list(Demonstration.objects.filter(project=project).order_by("pk"))
    rows = {t.pk: list(Turn.objects.filter(demonstration=t).order_by("seq")) for t in templates}
    media = dict(Blob.objects.filter(rights__project=project).values_list("sha256", "media_type"))
    demo_fields = [f.attname for f in Demonstration._meta.concrete_fields if f.attname not in ("id", "name")]
    turn_fields = [f.attname for f in Turn._meta.concrete_fields if f.attname not in ("id", "demonstration_id")]
    per_demo, extra = divmod(turns, max(demos, 1))
    written, known, originals = 0, set(media), {}
    for first in range(0, demos, 100):
        with transaction.atomic():
            made, pending, blobs = [], [], []
            for copy in range(first, min(first + 100, demos)):
                template = templates[copy % len(templates)]
                demo = Demonstration(**{name: getattr(template, name) for name in demo_fields})
                demo.client_id, demo.status = f"copy-{copy}", status  # a name of its own by default
                made.append((demo, template, copy, per_demo + (copy < extra)))
            Demonstration.objects.bulk_create([demo for demo, _, _, _ in made])
            for demo, template, copy, count in made:
                source = rows[template.pk]
                for seq in range(count):
                    turn = Turn(**{name: getattr(source[seq % len(source)], name) for name in turn_fields})
                    turn.demonstration, turn.seq = demo, seq
                    turn.client_id = f"{turn.client_id}-{seq // len(source)}" if seq >= len(source) else turn.client_id
                    for field in ("page_id", "bboxes_id", "screenshot_id"):
                        original = getattr(turn, field)
                        if original:
                            if original not in originals:  # the templates' blobs: a few thousand, read once
                                originals[original] = Path(default_storage.path(sha256_path(original))).read_bytes()
                            data = originals[original]
                            copied = variant(data, media[original], copy)
                            sha = hashlib.sha256(copied).hexdigest()
                            if sha not in known:
                                path = Path(default_storage.path(sha256_path(sha)))
                                path.parent.mkdir(parents=True, exist_ok=True)
                                path.write_bytes(copied)
                                blobs.append(
                                    Blob(
                                        sha256=sha, size=len(copied), media_type=media[original], file=sha256_path(sha)
                                    )
                                )
                                known.add(sha)
                                written += 1
                            setattr(turn, field, sha)
                    pending.append(turn)
            Blob.objects.bulk_create(blobs, batch_size=BATCH)
            ProjectBlob.objects.bulk_create(
                [ProjectBlob(project=project, blob_id=b.sha256) for b in blobs], batch_size=BATCH
            )
            Turn.objects.bulk_create(pending, batch_size=BATCH)
    return written
