"""Pages of the web app."""

from django.urls import path, re_path

from . import frame_views, mind2web_views, review_views, session_views, stats_views, views, work_views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("review/", review_views.review_list, name="review-list"),
    path("review/thumbs/<str:sha256>", review_views.review_thumbnail, name="review-thumbnail"),
    path("review/<str:name>/", review_views.review_demo, name="review-demo"),
    path("review/<str:name>/edit", review_views.review_edit, name="review-edit"),
    path("review/<str:name>/revision", review_views.review_revision, name="review-revision"),
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
    # Statistics, activity and pay of a project (docs/stats.md).
    path("projects/<slug:name>/stats/", stats_views.stats_page, name="project-stats"),
    path("projects/<slug:name>/stats.json", stats_views.stats_all, name="project-stats-all"),
    re_path(
        r"^projects/(?P<name>[-\w]+)/stats/(?P<key>\w+)\.(?P<fmt>csv|json)$",
        stats_views.stats_table,
        name="project-stats-table",
    ),  # fmt: skip
    path("projects/<slug:name>/activity/", stats_views.activity_page, name="project-activity"),
    path("projects/<slug:name>/activity.csv", stats_views.activity_csv, name="project-activity-csv"),
    path("projects/<slug:name>/pay.csv", stats_views.pay_csv, name="project-pay-csv"),
    path("projects/<slug:name>/pay/rates/", stats_views.pay_rates, name="project-pay-rates"),
    # Mind2Web collection: websites and seed tasks, proposing, the proposal review queue.
    path("mind2web/", mind2web_views.index, name="mind2web-index"),
    path("mind2web/projects/<slug:project>/", mind2web_views.project_page, name="mind2web-project"),
    path("mind2web/projects/<slug:project>/websites/add", mind2web_views.website_add, name="mind2web-website-add"),
    path(
        "mind2web/projects/<slug:project>/websites/import",
        mind2web_views.website_import,
        name="mind2web-website-import",
    ),
    path("mind2web/projects/<slug:project>/review/", mind2web_views.review_queue, name="mind2web-review"),
    path("mind2web/websites/<int:website_id>/seeds", mind2web_views.seeds_import, name="mind2web-seeds"),
    path("mind2web/websites/<int:website_id>/propose", mind2web_views.round_start, name="mind2web-propose"),
    path("mind2web/rounds/<int:round_id>/", mind2web_views.round_page, name="mind2web-round"),
    path(
        "mind2web/proposals/<int:proposal_id>/review", mind2web_views.proposal_review, name="mind2web-proposal-review"
    ),
    path("sessions/join/<str:code>", session_views.join, name="session-join"),
    path("sessions/<slug:name>/instruct", session_views.instruct, name="session-instruct"),
    path("sessions/<slug:name>/navigate", session_views.navigate, name="session-navigate"),
    path("sessions/<slug:name>/invitation/revoke", session_views.revoke_invitation, name="session-revoke-invitation"),
    path("sessions/<slug:name>/screenshots/<str:sha256>", session_views.screenshot, name="session-screenshot"),
]
