"""Process a validated demo's Mind2Web steps once (parse each step's page: ``exporters.mind2web.process_turn``) and
store them (``Mind2WebStep``), so a Mind2Web export only assembles them. Steps whose key is stored already are not
done again; steps the demo no longer has are dropped. A demo changed after this is exported right anyway: the
export uses a stored step only when its key, computed again, matches."""

from annotation.actions.exports.mind2web_steps import do_store_mind2web_steps
from annotation.models import Demonstration, DemoStatus

from .dataset import storage_blobs, to_export_demo
from .exporters.mind2web import PageSource, Processed, is_step, process_turn, step_key


def process_demo(demo: Demonstration) -> int:
    """Process and store the demo's steps not stored yet; how many were processed."""
    if demo.status == DemoStatus.REJECTED or demo.discarded:
        return 0
    value = to_export_demo(demo, "", "mind2web")
    if "task.json" in dict(value.original):  # an unchanged imported task is exported as the release wrote it
        return 0
    fresh, keys = {}, set()
    with storage_blobs() as blobs:
        pages = PageSource(blobs)
        for turn in value.turns:
            if not is_step(turn):
                continue
            key = step_key(value, turn)
            keys.add(key)
            if key in value.mind2web_steps or key in fresh:
                continue
            processed = process_turn(value, turn, pages)
            fresh[key] = None if processed is None else fields_of(processed)
    return do_store_mind2web_steps(demo, keys, fresh)


def fields_of(processed: Processed) -> dict:
    operation = processed.operation
    return {
        "op": operation.op,
        "original_op": operation.original_op,
        "value": operation.value,
        "action_repr": processed.repr,
        "action": processed.action,
    }
