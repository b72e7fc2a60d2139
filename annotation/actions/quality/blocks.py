"""Lifting a worker's block from a batch (the block itself comes from their gold accuracy, on submission:
``annotation.actions.forms.gold``). A manager of the batch (researcher, admin) unblocks with a reason the worker
reads on their work page; the block row keeps who lifted it, when and why. After a lift, the blocking rule applies
again once the worker has given the batch's ``gold_min_answers`` more gold answers."""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from ...models import Batch, BatchBlock
from ..errors import Conflict, invalid

MAX_REASON = 500


def check_unblock(batch: Batch, username, reason) -> tuple:
    """``(worker, reason)`` for an unblock: a known username and a reason (1 to 500 characters), else a 400 naming
    the field."""
    if not isinstance(username, str) or not username.strip():
        raise invalid("worker", "give the username of the blocked worker")
    worker = get_user_model().objects.filter(username=username.strip()).first()
    if worker is None:
        raise invalid("worker", f"no user {username.strip()[:150]!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise invalid("reason", "say why (the worker reads it)")
    reason = reason.strip()
    if len(reason) > MAX_REASON or "\x00" in reason:
        raise invalid("reason", f"must be at most {MAX_REASON} characters of text")
    return worker, reason


def do_unblock(by, batch: Batch, worker, reason: str) -> BatchBlock:
    """Lift ``worker``'s block from ``batch``: they see the batch and get its tasks again. 409 when they are not
    blocked from it."""
    with transaction.atomic():
        block = (
            BatchBlock.objects.select_for_update().filter(batch=batch, worker=worker, lifted_at__isnull=True).first()
        )
        if block is None:
            raise Conflict(f"{worker.username} is not blocked from batch {batch.name!r}")
        block.lifted_at, block.lifted_by, block.lift_reason = timezone.now(), by, reason
        block.save(update_fields=["lifted_at", "lifted_by", "lift_reason"])
    return block
