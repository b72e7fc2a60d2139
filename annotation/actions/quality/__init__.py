"""Quality control of form work: ``decisions`` (requester review: approve, reject, reopen, by filter, by the
results CSV uploaded back, automatic approval), ``trail`` (every decision recorded, and undone within a window),
``gold`` (a batch's quality settings and its gold tasks),
``blocks`` (unblocking a worker a batch's gold blocked),
``qualifications`` (named scores per worker, granted and revoked). Scoring gold answers, blocking and onboarding
happen in the queue on submission (``annotation.actions.forms.gold``)."""

from .blocks import check_unblock, do_unblock
from .decisions import (
    check_decision,
    check_reviewable,
    check_selection,
    check_unit_ratio,
    do_apply_decisions_csv,
    do_auto_approve_due,
    do_decide,
    do_decide_filtered,
    do_reopen,
    filtered,
    pending_selection,
    review_counts,
    review_queryset,
    review_rows,
    reviewable_by,
    with_worker_gold,
)
from .gold import (
    check_gold_request,
    check_quality_settings,
    do_mark_gold,
    do_update_quality_settings,
    quality_settings,
)
from .qualifications import (
    check_new_name,
    check_project_qualifications,
    check_qualification,
    check_worker,
    do_create_qualification,
    do_grant,
    do_revoke,
)
from .trail import check_reason, check_undo_target, do_undo, trail_of, trail_rows, undo_window
