"""Review and curation: who may see and change a demonstration in review, and every curation operation.

Each ``do_*`` write takes the demo's ``revision`` the caller saw: it locks the ``DemoReview`` row, refuses a stale
revision with a ``Conflict`` naming who changed what, applies the change to the curated state (``TurnCuration``,
``DemoReview.order``, the demo's metadata fields) and appends an ``Edit`` with the before/after state. Undo applies
an edit's before-state as a new edit, and only while what it changed is still as it left it (otherwise 409 naming
the later edit). The raw capture (``Turn`` rows) is never changed.

Modules: ``access`` (who may see and curate), ``revisions`` (the lock, the revision check, the edit log),
``curation`` (turn state, order, metadata), ``claims`` (the "Review next" queue, assignment, bulk actions),
``second`` (a share of decided demos to a second reviewer), ``targets`` (a turn's target re-picked on its page),
``problems`` (problems marked on tasks and turns), ``undo``, ``workflow`` (status, unsure mark, comments) and
``background`` (what the worker computes for review: thumbnails, screenshot suggestions, quality checks). Callers
import from here: ``from annotation.actions import review``.
"""

from .access import (
    CURATE_ROLES,
    EDITABLE_STATUSES,
    VIEW_ALL_ROLES,
    can_curate,
    check_can_curate,
    check_demo_reviewable,
    check_turn,
    review_of,
    reviewable_demos,
    reviewable_projects,
)
from .background import (
    ENQUEUE_EVERY,
    do_store_suggestions,
    enqueue_review_work,
    ensure_quality,
)
from .claims import BULK_ACTIONS, do_assign, do_bulk_return, do_claim_next, held_by, queue_for
from .curation import (
    EDITABLE_INTENTS,
    METADATA_FIELDS,
    TURN_DEFAULTS,
    apply_metadata,
    apply_turn_states,
    change_turn,
    check_metadata,
    check_text,
    chosen_screenshots,
    current_order,
    do_accept_suggestions,
    do_choose_screenshot,
    do_delete_turn,
    do_edit_metadata,
    do_edit_text,
    do_move_turn,
    do_restore_turn,
    do_set_validity,
    order_of,
    screenshot_choices,
    screenshot_edits,
    turn_state,
)
from .problems import (
    DEFAULT_KINDS,
    check_can_mark,
    check_mark,
    check_project_kinds_admin,
    check_project_kinds_reader,
    do_mark,
    do_set_kinds,
    do_unmark,
    kinds_as_text,
    kinds_from_text,
    kinds_in_use,
    kinds_of,
    mark_as_item,
    marks_of,
)
from .revisions import check_revision, locked_review, record
from .second import (
    check_second_review,
    check_second_review_percent,
    do_second_decision,
    do_send_to_second_review,
    do_set_second_review_percent,
    next_second_review,
    pending_second_reviews,
)
from .targets import check_retargetable, do_retarget, target_uid, turn_elements
from .undo import (
    FIELD_NAMES,
    UNDOABLE,
    after_value,
    apply_state,
    blocking_edit,
    changed_since,
    check_not_overwritten,
    check_undoable,
    current_value,
    describe_key,
    do_undo,
    edit_label,
    touched,
)
from .workflow import (
    TRANSITIONS,
    check_transition,
    do_comment,
    do_set_unsure,
    do_transition,
    set_status,
    start_review_if_needed,
)

__all__ = [
    "do_store_suggestions",
    # access
    "CURATE_ROLES",
    "EDITABLE_STATUSES",
    "VIEW_ALL_ROLES",
    "can_curate",
    "check_can_curate",
    "check_demo_reviewable",
    "check_turn",
    "review_of",
    "reviewable_demos",
    "reviewable_projects",
    # claims
    "BULK_ACTIONS",
    "do_assign",
    "do_bulk_return",
    "do_claim_next",
    "held_by",
    "queue_for",
    # revisions
    "check_revision",
    "locked_review",
    "record",
    # curation
    "EDITABLE_INTENTS",
    "METADATA_FIELDS",
    "TURN_DEFAULTS",
    "apply_metadata",
    "apply_turn_states",
    "change_turn",
    "check_metadata",
    "check_text",
    "chosen_screenshots",
    "current_order",
    "do_accept_suggestions",
    "do_choose_screenshot",
    "do_delete_turn",
    "do_edit_metadata",
    "do_edit_text",
    "do_move_turn",
    "do_restore_turn",
    "do_set_validity",
    "order_of",
    "screenshot_choices",
    "screenshot_edits",
    "turn_state",
    # second reviews
    "check_second_review",
    "check_second_review_percent",
    "do_second_decision",
    "do_send_to_second_review",
    "do_set_second_review_percent",
    "next_second_review",
    "pending_second_reviews",
    # problems
    "DEFAULT_KINDS",
    "check_can_mark",
    "check_mark",
    "check_project_kinds_admin",
    "check_project_kinds_reader",
    "do_mark",
    "do_set_kinds",
    "do_unmark",
    "kinds_as_text",
    "kinds_from_text",
    "kinds_in_use",
    "kinds_of",
    "mark_as_item",
    "marks_of",
    # undo
    "FIELD_NAMES",
    "UNDOABLE",
    "after_value",
    "apply_state",
    "blocking_edit",
    "changed_since",
    "check_not_overwritten",
    "check_undoable",
    "current_value",
    "describe_key",
    "do_undo",
    "edit_label",
    "touched",
    # targets
    "check_retargetable",
    "do_retarget",
    "target_uid",
    "turn_elements",
    # workflow
    "TRANSITIONS",
    "check_transition",
    "do_comment",
    "do_set_unsure",
    "do_transition",
    "set_status",
    "start_review_if_needed",
    # work
    "ENQUEUE_EVERY",
    "enqueue_review_work",
    "ensure_quality",
]
