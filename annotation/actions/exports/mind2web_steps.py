"""The Mind2Web export's processed steps (``Mind2WebStep``): what the worker made of a validated demo's step pages,
stored so that the export only assembles them (``workers/exports/mind2web_steps.py``)."""

from django.db import transaction

from ...models import Mind2WebStep

FIELDS = ("op", "original_op", "value", "action_repr", "action")


def do_store_mind2web_steps(demo, keys, fresh: dict) -> int:
    """Keep the demo's steps whose key is in ``keys`` (its steps now) and add ``fresh`` (``{key: {field: value}}``,
    None for a step the export skips); a key stored already is left as it is. Returns how many were added."""
    rows = [
        Mind2WebStep(
            demonstration=demo,
            key=key,
            skipped=fields is None,
            **{name: (fields or {}).get(name, "") for name in FIELDS},
        )
        for key, fields in fresh.items()
    ]
    with transaction.atomic():
        Mind2WebStep.objects.filter(demonstration=demo).exclude(key__in=list(keys)).delete()
        Mind2WebStep.objects.bulk_create(rows, batch_size=50, ignore_conflicts=True)
    return len(rows)
