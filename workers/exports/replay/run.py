"""A demonstration's offline replay: its Mind2Web steps (as the export makes them), its HAR entries in step order
and its MHTML snapshots, replayed by ``engine``; the result stored on the demonstration."""

import json

from annotation.actions.exports.replays import RUN_BUDGET, do_store_replay
from annotation.lib.shapes import as_dict, as_text, element_of, uid_of
from annotation.models import Demonstration

from ..dataset import storage_blobs, to_export_demo
from ..exporters.mind2web import PageSource, steps
from .engine import ReplayStep, replay_steps
from .har import Responder


def replay_step(step) -> ReplayStep:
    element = element_of(step.turn.arguments)
    metadata = as_dict(as_dict(step.turn.arguments).get("metadata"))
    return ReplayStep(
        action_uid=step.action_uid,
        op=step.operation.op,
        original_op=step.operation.original_op,
        value=step.operation.value,
        url=as_text(metadata.get("url")),
        tag=as_text(element.get("tagName")).lower(),
        uid=uid_of(element),
        xpath=as_text(element.get("xpath")),
        attributes=as_dict(element.get("attributes")),
        text=as_text(element.get("textContent")),
    )


def replay_demo(demo: Demonstration, run: str | None = None) -> dict:
    """Replay the task (checked to have traffic: ``annotation.actions.exports.replays.check_replay``), store and
    return the result."""
    value = to_export_demo(demo, "", "mind2web")
    with storage_blobs() as blobs:
        done = steps(value, PageSource(blobs))
        entries = []
        for turn in value.turns:
            if turn.har:
                entries += json.loads(blobs.read(turn.har))["log"]["entries"]
        responder = Responder(entries)
        for step in done:
            if step.snapshot:
                responder.add_mhtml(blobs.read(step.snapshot))
    result = replay_steps([replay_step(step) for step in done], responder, RUN_BUDGET.total_seconds())
    do_store_replay(demo, result, run)  # not stored when a newer request replaced ``run``
    return result
