"""Form tasks: the worker's and the batch manager's pages (session, under ``/work/``), and the task frames
(token-authorised, sandboxed, under ``/forms/``)."""

from django.urls import path

from ..views.forms import batches, frames, pages

urlpatterns = [
    path("work/", pages.work_index, name="forms-index"),
    path("work/auto-accept", pages.set_auto_accept, name="forms-auto-accept"),
    path("work/batches/new/", pages.batch_new, name="forms-batch-new"),
    path("work/batches/<int:batch_id>/", batches.batch_detail, name="forms-batch"),
    path("work/batches/<int:batch_id>/publish", batches.batch_publish, name="forms-batch-publish"),
    path("work/batches/<int:batch_id>/unpublish", batches.batch_unpublish, name="forms-batch-unpublish"),
    path("work/batches/<int:batch_id>/pause", batches.batch_pause, name="forms-batch-pause"),
    path("work/batches/<int:batch_id>/resume", batches.batch_resume, name="forms-batch-resume"),
    path("work/batches/<int:batch_id>/extend", batches.batch_extend, name="forms-batch-extend"),
    path("work/batches/<int:batch_id>/add-assignments", batches.batch_add_assignments, name="forms-batch-add"),
    path("work/batches/<int:batch_id>/instructions", batches.batch_instructions, name="forms-batch-instructions"),
    path("work/batches/assignments/<int:assignment_id>/", batches.batch_assignment, name="forms-batch-assignment"),
    path("work/batches/<int:batch_id>/accept/", pages.batch_accept, name="forms-batch-accept"),
    path("work/batches/<int:batch_id>/preview/", pages.batch_preview, name="forms-batch-preview"),
    path("work/batches/<int:batch_id>/results.csv", pages.batch_results, name="forms-batch-results"),
    path("work/tasks/<int:task_id>/preview/", pages.task_preview, name="forms-task-preview"),
    path("work/tasks/<int:task_id>/accept/", pages.task_accept, name="forms-task-accept"),
    path("work/assignments/<int:assignment_id>/", pages.assignment_page, name="forms-assignment"),
    path("work/assignments/<int:assignment_id>/state", pages.assignment_state, name="forms-assignment-state"),
    path("work/assignments/<int:assignment_id>/skip", pages.assignment_skip, name="forms-assignment-skip"),
    path("work/assignments/<int:assignment_id>/return", pages.assignment_return, name="forms-assignment-return"),
    path("forms/tasks/<int:task_id>/iframe/", frames.preview_frame, name="forms-preview-frame"),
    path("forms/assignments/<int:assignment_id>/view/", frames.view_frame, name="forms-view-frame"),
    path("forms/assignments/<int:assignment_id>/<str:token>/", frames.work_frame, name="forms-work-frame"),
]
