"""Form tasks and the queue they share with Mind2Web's batches (batches → tasks → assignments).

The queue, for every kind of batch: ``access`` (who may work on, manage or see a batch), ``queue`` (what a worker
gets next and the life of an assignment: accept, submit, skip, return, expire), ``stats`` (progress and work time),
``batches`` (a manager's controls: pause, resume, extend, add assignments, instructions; the task table).
Form batches (MTurk/Turkle HTML templates, TurkingBench tasks): ``parse`` (checking a template and a CSV, an upload
within its limits), ``create`` (storing a batch, TurkingBench directories and split lists), ``render`` (the task
page), ``frames`` (the capability URLs and CSP of task frames), ``results`` (the Turkle results CSV), ``splits``
(the splits of a project's form tasks, and predictions checked against them), ``gold`` (gold tasks scored on
submission, blocking, qualifications the queue checks), ``figures`` (the inputs of a batch's quality figures: the
version every change bumps, the one reader of a worker's gold accuracy, gold scores computed again).
"""

from .access import (
    MANAGE_ROLES,
    STATS_ROLES,
    WORK_ROLES,
    can_manage,
    can_preview,
    can_see_stats,
    can_work_on,
    check_batch_for_work,
    check_batch_manageable,
    check_batch_stats,
    check_grant,
    check_project_for_batches,
    check_task_previewable,
    managed_projects,
    open_for_work,
    visible_batch,
    workable_batches,
)
from .create import (
    BatchSettings,
    do_create_form_batch,
    do_create_form_batches,
    do_store_split_lists,
    read_split_lists,
    read_task_dir,
    warnings_for,
)
from .figures import figures_changed, rescore_batch, rescore_tasks, worker_gold
from .frames import (
    app_page_csp,
    check_preview_token,
    check_view_token,
    check_work_token,
    frame_csp,
    frame_headers,
    preview_token,
    preview_url,
    view_url,
    work_frame_url,
    work_url,
)
from .gold import block_reason, blocks_of, check_may_take, serves_gold, unblocks_of
from .parse import ParsedBatch, TemplateInfo, analyse_template, check_batch_name, parse_batch, parse_upload, read_upload
from .queue import (
    AccessEnded,
    AssignmentExpired,
    available_counts,
    check_assignment_of,
    check_batch_accept,
    do_accept_next,
    do_accept_task,
    do_end_without_access,
    do_expire,
    do_expire_due,
    do_return,
    do_skip,
    do_submit,
    do_submit_recording,
    do_update_batch_settings,
    next_task,
    why_no_more,
)
from .render import answers_from_json, answers_from_request, check_answers, fill_template, result_page, task_page
from .results import results_csv, results_csv_lines, results_download, results_filename
from .splits import check_turkingbench_predictions, split_names, split_tasks
from .stats import batch_stats
