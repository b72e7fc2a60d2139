"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path, re_path

from ..views.quality import agreement, demos, pages

urlpatterns = [
    # Review of form work (decisions, gold, settings, the results CSV back) and qualifications.
    path("work/batches/<int:batch_id>/review/", pages.review_page, name="quality-review"),
    path("work/batches/<int:batch_id>/review/decide", pages.review_decide, name="quality-review-decide"),
    path(
        "work/batches/<int:batch_id>/review/<int:assignment_id>/reopen",
        pages.review_reopen,
        name="quality-review-reopen",
    ),
    path(
        "work/batches/<int:batch_id>/review/<int:assignment_id>/",
        pages.review_assignment,
        name="quality-review-assignment",
    ),
    path(
        "work/batches/<int:batch_id>/review/<int:assignment_id>/undo",
        pages.review_undo,
        name="quality-review-undo",
    ),
    path("work/batches/<int:batch_id>/review/gold", pages.review_gold, name="quality-review-gold"),
    path("work/batches/<int:batch_id>/review/settings", pages.review_settings, name="quality-review-settings"),
    path("work/batches/<int:batch_id>/review/upload", pages.review_upload, name="quality-review-upload"),
    path("work/batches/<int:batch_id>/review/unblock", pages.review_unblock, name="quality-review-unblock"),
    path("projects/<slug:name>/qualifications/", pages.qualifications_page, name="quality-qualifications"),
    path(
        "projects/<slug:name>/qualifications/new",
        pages.qualification_create,
        name="quality-qualification-create",
    ),
    path(
        "projects/<slug:name>/qualifications/<int:qualification_id>/grant",
        pages.qualification_change,
        {"change": "grant"},
        name="quality-qualification-grant",
    ),
    path(
        "projects/<slug:name>/qualifications/<int:qualification_id>/revoke",
        pages.qualification_change,
        {"change": "revoke"},
        name="quality-qualification-revoke",
    ),
    # Agreement and aggregation of a form batch (the batch page links here).
    path("work/batches/<int:batch_id>/agreement/", agreement.agreement_page, name="quality-agreement"),
    path("work/batches/<int:batch_id>/agreement.json", agreement.agreement_json, name="quality-agreement-json"),
    re_path(
        r"^work/batches/(?P<batch_id>[0-9]+)/agreement/(?P<table>fields|workers|tasks)\.csv$",
        agreement.agreement_csv,
        name="quality-agreement-csv",
    ),
    # Demonstrations: reviewers' agreement and the second-review share, annotators' records, second reviews.
    path("projects/<slug:name>/quality/agreement/", demos.agreement_page, name="quality-reviewers"),
    path("projects/<slug:name>/quality/records/", demos.records_page, name="quality-records"),
    path("projects/<slug:name>/quality/records/<int:id>/", demos.record_page, name="quality-record"),
    path("quality/second-reviews/", demos.second_reviews_page, name="quality-second-reviews"),
    path("quality/second-reviews/<str:name>/", demos.second_review_page, name="quality-second-review"),
]
