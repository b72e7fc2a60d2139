"""Demos for the review tests: a synthetic recording (real ingest path) with frames added around browser turns, one
with a turn whose recorded target is not on its page; review edits through the review page's endpoint."""

import io
import json
import os

import av
from PIL import Image, ImageDraw

from annotation import synth
from annotation.lib.shapes import element_of
from annotation.models import Demonstration, DemoReview, DemoStatus, Turn, TurnType
from tests.support.corpus import ingest_corpus
from workers.management.commands.synth_demos import ensure_actors, ingest_demo


def recorded_demo(project="alpha", turns=24, seed=7) -> Demonstration:
    """One recorded synthetic demo whose last browser turn has two extra frames (other turns' screenshots)."""
    demo = ingest_corpus(project=project, demos=1, turns=turns, elements=40, seed=seed, status=DemoStatus.RECORDED)[0]
    add_framed_turn(demo)
    return demo


def uid_missing_demo() -> tuple[Demonstration, Turn]:
    """A recorded synthetic demo of project alpha and its first browser turn with a page and an element, whose
    recorded uid is not on that page (``not-on-the-page``): the turn fails uid_missing until it is retargeted."""
    project, navigator, instructor = ensure_actors("alpha")
    spec = next(synth.generate_corpus(1, 24, 40, seed=11))
    broken = next(t for t in spec.turns if t["type"] == "browser" and t.get("page") and element_of(t["arguments"]))
    broken["arguments"]["element"]["attributes"]["data-webtasks-id"] = "not-on-the-page"
    demo, _, _ = ingest_demo(spec, navigator, project, instructor)
    Demonstration.objects.filter(pk=demo.pk).update(status=DemoStatus.RECORDED)
    return demo, Turn.objects.get(demonstration=demo, client_id=broken["client_id"])


def acting(demo) -> list:
    """The demo's browser turns with a recorded element and a page."""
    turns = Turn.objects.filter(demonstration=demo, type="browser").exclude(page=None).order_by("seq")
    return [turn for turn in turns if turn.element_uid]


def post_edit(client, demo, **body):
    """One review edit (``op`` and its fields) through the review page's endpoint, at the demo's current revision."""
    revision = DemoReview.objects.filter(demonstration=demo).values_list("revision", flat=True).first() or 0
    return client.post(
        f"/review/{demo.name}/edit", json.dumps({"revision": revision, **body}), content_type="application/json"
    )


def add_framed_turn(demo) -> Turn:
    """A browser turn at the end of the demo with its own screenshot and two frames captured before it.

    Raw turns are immutable once stored, so the frames come with a new turn, created as ingest creates turns."""
    shots = list(
        Turn.objects.filter(demonstration=demo, screenshot__isnull=False)
        .order_by("seq")
        .values_list("screenshot_id", flat=True)
        .distinct()
    )
    last = Turn.objects.filter(demonstration=demo).order_by("-seq").first()
    return Turn.objects.create(
        demonstration=demo,
        client_id="framed-turn",
        seq=last.seq + 1,
        type=TurnType.BROWSER,
        timestamp=last.timestamp + 1,
        intent="click",
        arguments={"metadata": {"url": last.url}},
        url=last.url,
        viewport_width=last.viewport_width,
        viewport_height=last.viewport_height,
        screenshot_id=shots[-1],
        frames=[
            {"screenshot": shots[0], "timestamp": last.timestamp + 0.2, "label": "before"},
            {"screenshot": shots[1], "timestamp": last.timestamp + 0.6, "label": "before"},
        ],
        content_sha256="0" * 64,
    )


SIZE = (160, 90)


FPS = 10


def picture(color, n=0) -> Image.Image:
    """A page-like picture: a coloured background with a moving box and some noise, so frames carry data."""
    image = Image.new("RGB", SIZE, color)
    draw = ImageDraw.Draw(image)
    draw.rectangle((5 + (n * 3) % 120, 60, 25 + (n * 3) % 120, 80), fill=(250, 250, 250))
    noise = Image.frombytes("L", (40, 20), os.urandom(800)).convert("RGB")
    image.paste(noise, (110, 5))
    return image


def mediarecorder_webm(colors, codec="libvpx", seconds_each=1.0) -> bytes:
    """A WebM as MediaRecorder writes it: live (no duration, no seek index), rare key frames, time from 0."""
    out = io.BytesIO()
    with av.open(out, "w", format="webm", options={"live": "1"}) as container:
        stream = container.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = *SIZE, "yuv420p"
        stream.options = {"g": "1000", "deadline": "realtime", "cpu-used": "8"}
        n = 0
        for color in colors:
            for _ in range(int(FPS * seconds_each)):
                for packet in stream.encode(av.VideoFrame.from_image(picture(color, n))):
                    container.mux(packet)
                n += 1
        for packet in stream.encode():
            container.mux(packet)
    return out.getvalue()
