"""Distributed work (batches → tasks → assignments), for every kind of batch: access, the queue, statistics.

``access``: who may work on, manage or see a batch. ``queue``: what a worker gets next and the life of an
assignment (accept, submit, skip, return, expire). ``stats``: progress and work time. What a task *is* (a form,
later other kinds) is not decided here: ``annotation.actions.forms`` renders and imports form batches.
"""

from .access import (
    MANAGE_ROLES,
    STATS_ROLES,
    WORK_ROLES,
    can_manage,
    can_see_stats,
    can_work_on,
    check_batch_for_work,
    check_batch_manageable,
    check_batch_stats,
    check_project_for_batches,
    check_task_previewable,
    managed_projects,
    open_for_work,
    visible_batch,
    workable_batches,
)
from .queue import (
    AssignmentExpired,
    available_counts,
    check_assignment_of,
    check_batch_accept,
    do_accept_next,
    do_accept_task,
    do_expire,
    do_expire_due,
    do_return,
    do_skip,
    do_submit,
    do_update_batch_settings,
)
from .stats import batch_stats
