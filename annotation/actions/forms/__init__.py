"""Form batches (MTurk/Turkle HTML templates, TurkingBench tasks): reading uploads, storing them, serving the task
frames securely and writing the Turkle results CSV. The queue they use is ``annotation.actions.work``.

``parse``: checking a template and a CSV. ``create``: storing a batch, TurkingBench directories and split lists.
``render``: the task page. ``frames``: the capability URLs and CSP of task frames. ``results``: the results CSV.
"""

from .create import (
    BatchSettings,
    do_create_form_batch,
    do_create_form_batches,
    do_store_split_lists,
    read_split_lists,
    read_task_dir,
    warnings_for,
)
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
from .parse import ParsedBatch, TemplateInfo, analyse_template, check_batch_name, parse_batch
from .render import answers_from_request, check_answers, fill_template, result_page, task_page
from .results import results_csv, results_csv_lines, results_filename
