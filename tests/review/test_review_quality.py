"""Automatic quality checks over a demo's turns and blobs (pure), and screenshot re-alignment (pure and stored)."""

import io
import json
from types import SimpleNamespace

import av
import pytest
from PIL import Image

from annotation.lib.quality import quality_issues, rechecked
from annotation.models import DemoReview, Turn, TurnCuration
from tests.support.review_data import recorded_demo
from workers.review import realign

PAGE = b'<html><body><a data-webtasks-id="a1">x</a></body></html>'
BOXES = json.dumps({"a1": {"x": 1, "y": 1, "width": 5, "height": 5}}).encode()
BLOBS = {"page": PAGE, "boxes": BOXES}


def turn(pk, type="browser", intent="click", timestamp=0.0, uid="a1", box=None, screenshot="s", utterance=""):
    element = {"attributes": {"data-webtasks-id": uid}, "bbox": box or {"x": 10, "y": 10, "width": 20, "height": 20}}
    return SimpleNamespace(
        pk=pk, type=type, intent=intent, timestamp=timestamp, utterance=utterance, arguments={"element": element},
        element_uid=uid, screenshot_id=screenshot, page_id="page", bboxes_id="boxes",
        viewport_width=1280, viewport_height=720,
    )  # fmt: skip


def checks(turns):
    reads = []
    issues = quality_issues(turns, lambda sha: reads.append(sha) or BLOBS[sha])
    return [(item["turn"], item["check"]) for item in issues], reads


def test_a_clean_demo_has_no_issues_and_reads_each_blob_once():
    found, reads = checks([turn(1), turn(2, timestamp=5), turn(3, type="chat", utterance="hi", timestamp=6)])
    assert found == []
    assert sorted(reads) == ["boxes", "page"]


def test_each_check_flags_its_turn():
    turns = [
        turn(1, screenshot=None),
        turn(2, uid="zz", timestamp=1),
        turn(3, box={"x": 2000, "y": 10, "width": 5, "height": 5}, timestamp=2),
        turn(4, intent="hover", timestamp=3),
        turn(5, intent="hover", timestamp=4),
        turn(6, type="chat", utterance="  ", timestamp=5),
        turn(7, timestamp=100),
    ]
    found, _ = checks(turns)
    assert found == [
        (1, "no_screenshot"),
        (2, "uid_missing"),
        (3, "box_outside"),
        (5, "duplicate_hover"),
        (6, "empty_chat"),
        (7, "long_gap"),
    ]


def test_tab_events_need_no_screenshot():
    assert checks([turn(1, intent="tabcreate", screenshot=None, uid=None)])[0] == []


def test_without_video_the_suggestion_is_the_last_frame_before_the_action():
    frames = [{"screenshot": "early", "timestamp": 1.0}, {"screenshot": "late", "timestamp": 2.0}]
    assert realign.last_before(1.5, "own", frames) == "early"
    assert realign.last_before(3.0, "own", frames) == "late"
    assert realign.last_before(0.5, "own", frames) == "own"


def solid(color, size=(64, 36)) -> Image.Image:
    return Image.new("RGB", size, color)


def webm(colors, fps=10) -> bytes:
    """A WebM (VP8) showing each colour for one second."""
    out = io.BytesIO()
    with av.open(out, "w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 36, "yuv420p"
        for color in colors:
            for _ in range(fps):
                for packet in stream.encode(av.VideoFrame.from_image(solid(color))):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return out.getvalue()


def png(color) -> bytes:
    out = io.BytesIO()
    solid(color, (128, 72)).save(out, "PNG")
    return out.getvalue()


def test_with_video_the_suggestion_is_the_frame_most_like_the_video_at_the_action():
    video = webm([(220, 30, 30), (30, 30, 220)])
    blue_grey = realign.signature(solid((30, 30, 220))).getpixel((5, 5))
    assert abs(realign.video_frame_at(video, 1.5).getpixel((5, 5)) - blue_grey) < 10
    blobs = {"red": png((220, 30, 30)), "blue": png((30, 30, 220)), "video": video}
    frames = [{"screenshot": "blue", "timestamp": 0.1}]
    late = SimpleNamespace(screenshot_id="red", frames=frames, timestamp=11.5)
    early = SimpleNamespace(screenshot_id="red", frames=frames, timestamp=10.4)
    runs = realign.video_runs([(0, "video", 10.0)])
    chosen = realign.suggestions([late, early], blobs.__getitem__, runs)
    assert chosen == [("blue", realign.VIDEO), ("red", realign.VIDEO)]  # early: not simply the last frame


@pytest.mark.django_db
def test_prepare_review_stores_suggestions_and_quality(alpha):
    demo = recorded_demo()
    realign.prepare_review(demo)
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    assert TurnCuration.objects.get(turn=framed).suggested_screenshot == framed.frames[1]["screenshot"]
    review = DemoReview.objects.get(pk=demo.pk)
    assert review.realigned
    assert review.quality is not None


def test_a_re_picked_target_is_checked_instead_of_the_recorded_one_reading_only_its_turns_blobs():
    on_page = {"attributes": {"data-webtasks-id": "a1"}, "bbox": {"x": 10, "y": 10, "width": 20, "height": 20}}
    outside = {"attributes": {"data-webtasks-id": "zz"}, "bbox": {"x": 2000, "y": 10, "width": 5, "height": 5}}
    turns = [turn(1, uid="zz"), turn(2, timestamp=1), turn(3, intent="hover", timestamp=2)]
    turns.append(turn(4, intent="hover", uid="zz", timestamp=3))
    cached = quality_issues(turns, BLOBS.get)
    assert [(item["turn"], item["check"]) for item in cached] == [(1, "uid_missing"), (4, "uid_missing")]
    reads = []
    read = lambda sha: reads.append(sha) or BLOBS[sha]  # noqa: E731
    picked = rechecked(cached, turns, read, {1: on_page, 2: outside, 4: on_page}, {1, 2, 4})
    assert [(item["turn"], item["check"]) for item in picked] == [
        (2, "uid_missing"), (2, "box_outside"), (4, "duplicate_hover"),
    ]  # fmt: skip
    assert sorted(reads) == ["boxes", "page"]  # each read once, for the changed turns only
    put_back = rechecked(picked, turns, lambda sha: BLOBS[sha], {1: on_page}, {2, 4})
    assert [(item["turn"], item["check"]) for item in put_back] == [(4, "uid_missing")]
    assert rechecked(cached, turns, lambda sha: pytest.fail(sha), {}, set()) == cached  # nothing changed: no read
