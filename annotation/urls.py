"""Pages of the web app."""

from django.urls import path

from . import frame_views, review_views, session_views, views, work_views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("review/", review_views.review_list, name="review-list"),
    path("review/thumbs/<str:sha256>", review_views.review_thumbnail, name="review-thumbnail"),
    path("review/next", review_views.review_next, name="review-next"),
    path("review/bulk", review_views.review_bulk, name="review-bulk"),
    path("review/live", review_views.review_list_live, name="review-list-live"),
    path("review/<str:name>/", review_views.review_demo, name="review-demo"),
    path("review/<str:name>/edit", review_views.review_edit, name="review-edit"),
    path("review/<str:name>/revision", review_views.review_revision, name="review-revision"),
    path("review/<str:name>/live", review_views.review_live, name="review-live"),
    path("review/<str:name>/turns/<int:turn_id>/page", review_views.review_turn_page, name="review-turn-page"),
    # Form tasks: the worker's and manager's pages (session), and the task frames (token-authorised, sandboxed).
    path("work/", work_views.work_index, name="work-index"),
    path("work/auto-accept", work_views.set_auto_accept, name="work-auto-accept"),
    path("work/batches/new/", work_views.batch_new, name="work-batch-new"),
    path("work/batches/<int:batch_id>/", work_views.batch_detail, name="work-batch"),
    path("work/batches/<int:batch_id>/accept/", work_views.batch_accept, name="work-batch-accept"),
    path("work/batches/<int:batch_id>/preview/", work_views.batch_preview, name="work-batch-preview"),
    path("work/batches/<int:batch_id>/results.csv", work_views.batch_results, name="work-batch-results"),
    path("work/tasks/<int:task_id>/preview/", work_views.task_preview, name="work-task-preview"),
    path("work/tasks/<int:task_id>/accept/", work_views.task_accept, name="work-task-accept"),
    path("work/assignments/<int:assignment_id>/", work_views.assignment_page, name="work-assignment"),
    path("work/assignments/<int:assignment_id>/state", work_views.assignment_state, name="work-assignment-state"),
    path("work/assignments/<int:assignment_id>/skip", work_views.assignment_skip, name="work-assignment-skip"),
    path("work/assignments/<int:assignment_id>/return", work_views.assignment_return, name="work-assignment-return"),
    path("forms/tasks/<int:task_id>/iframe/", frame_views.preview_frame, name="form-preview-frame"),
    path("forms/assignments/<int:assignment_id>/view/", frame_views.view_frame, name="form-view-frame"),
    path("forms/assignments/<int:assignment_id>/<str:token>/", frame_views.work_frame, name="form-work-frame"),
    path("sessions/join/<str:code>", session_views.join, name="session-join"),
    path("sessions/<slug:name>/instruct", session_views.instruct, name="session-instruct"),
    path("sessions/<slug:name>/navigate", session_views.navigate, name="session-navigate"),
    path("sessions/<slug:name>/invitation/revoke", session_views.revoke_invitation, name="session-revoke-invitation"),
    path("sessions/<slug:name>/screenshots/<str:sha256>", session_views.screenshot, name="session-screenshot"),
]
