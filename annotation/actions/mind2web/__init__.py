"""Mind2Web collection: websites and seed tasks, task proposal and its review, demonstrating accepted tasks, and
the verification counts. See docs/mind2web.md."""

from .demonstrations import (
    assigned_demonstrations,
    check_demonstration_of,
    check_project_for_demonstrating,
    do_start_demonstration,
    do_take_from_pool,
)
from .proposals import (
    MAX_PROPOSALS,
    SEEDS_SHOWN,
    check_can_propose,
    check_can_screen,
    check_proposal_screenable,
    check_round_of,
    do_screen,
    do_start_round,
    do_submit_round,
    draw_seeds,
    mind2web_batch,
    near_copies,
    offered_websites,
    screening_queue,
)
from .seeds import (
    TASK_MAX_CHARS,
    UpstreamFailed,
    check_task_texts,
    do_add_seed_tasks,
    do_generate_seed_tasks,
    seed_texts_of_file,
)
from .verification import verification_counts
from .websites import (
    check_project_for_websites,
    do_create_website,
    do_import_websites,
    do_update_website,
    managed_website,
    visible_website,
)

__all__ = [
    "MAX_PROPOSALS",
    "SEEDS_SHOWN",
    "TASK_MAX_CHARS",
    "UpstreamFailed",
    "assigned_demonstrations",
    "check_can_propose",
    "check_can_screen",
    "check_demonstration_of",
    "check_project_for_demonstrating",
    "check_project_for_websites",
    "check_proposal_screenable",
    "check_round_of",
    "check_task_texts",
    "do_add_seed_tasks",
    "do_create_website",
    "do_generate_seed_tasks",
    "do_import_websites",
    "do_screen",
    "do_start_demonstration",
    "do_start_round",
    "do_submit_round",
    "do_take_from_pool",
    "do_update_website",
    "draw_seeds",
    "managed_website",
    "mind2web_batch",
    "offered_websites",
    "screening_queue",
    "near_copies",
    "seed_texts_of_file",
    "verification_counts",
    "visible_website",
]
