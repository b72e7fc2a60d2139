"""Late captures: turns and video of a finished recording that were captured before its end but uploaded after."""

from ...lib import schema
from ...models import Demonstration, DemoReview, DemoStatus
from ..errors import Conflict
from .background import enqueue_after_recording

LATE_TURN_TOLERANCE_SECONDS = 2.0  # a capture in flight when the recording was ended


def recording_end_seconds(demo: Demonstration) -> float:
    """The recording's end on the recording clock (seconds since ``recording_start``)."""
    return (demo.recording_end - demo.recording_start).total_seconds()


def check_late_turns(demo: Demonstration, turns: list, stored: dict) -> None:
    """New turns for a finished recording: the recorder's captures from before the end that were not uploaded yet
    (the instructor may end the demonstration while the navigator's recorder still has a queue). Accepted while the
    demonstration is ``recorded`` and nobody has edited it in review; each must be timestamped no later than the end
    (plus ``LATE_TURN_TOLERANCE_SECONDS``). Otherwise a conflict naming each late turn, and nothing is stored."""
    end = check_takes_late_capture(demo, "turns")
    errors = [
        schema.FieldError(f"turns[{i}].timestamp", f"{turn['timestamp']} s is after the recording's end at {end:.3f} s")
        for i, turn in enumerate(turns)
        if turn["client_id"] not in stored and float(turn["timestamp"]) > end + LATE_TURN_TOLERANCE_SECONDS
    ]
    if errors:
        raise Conflict(
            f"recording {demo.name} ended at {end:.3f} s on the recording clock; turns after its end are refused "
            "and nothing of this batch was stored",
            errors,
        )


def check_takes_late_capture(demo: Demonstration, what: str) -> float:
    """A finished recording takes late captures (turns, video) only while it is ``recorded`` and unedited in
    review; returns its end on the recording clock."""
    refused = f"recording {demo.name} is {demo.status}; it takes no new {what}"
    if demo.source_id:
        raise Conflict(f"demonstration {demo.name} was imported from a release; it takes no new {what}")
    if demo.status != DemoStatus.RECORDED or demo.recording_end is None:
        raise Conflict(refused)
    if DemoReview.objects.filter(demonstration=demo, revision__gt=0).exists():
        raise Conflict(f"{refused} (it has been edited in review)")
    return recording_end_seconds(demo)


def check_late_video_chunk(demo: Demonstration, started_at: float) -> None:
    """A video chunk for a finished recording: as for turns, one that started before the end is still taken."""
    end = check_takes_late_capture(demo, "video")
    if started_at > end + LATE_TURN_TOLERANCE_SECONDS:
        raise Conflict(
            f"recording {demo.name} ended at {end:.3f} s on the recording clock; video after its end is refused",
            [{"field": "started_at", "message": f"{started_at} s is after the recording's end at {end:.3f} s"}],
        )


def forget_review_caches(demo: Demonstration) -> None:
    """Late turns or video change the raw capture: screenshot suggestions and quality checks are computed again,
    by the worker (after commit)."""
    DemoReview.objects.filter(demonstration=demo).update(quality=None, realigned=False)
    enqueue_after_recording(demo)
