"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path, re_path

from ..views.moved import moved
from ..views.quality import agreement, demos, pages

urlpatterns = [
    # Decisions on form work (approve, reject, reopen, undo; gold, settings, the results CSV back) and qualifications.
    path("work/batches/<int:batch_id>/decisions/", pages.decisions_page, name="quality-decisions"),
    path("work/batches/<int:batch_id>/decisions/decide", pages.decisions_decide, name="quality-decisions-decide"),
    path(
        "work/batches/<int:batch_id>/decisions/<int:assignment_id>/reopen",
        pages.decisions_reopen,
        name="quality-decisions-reopen",
    ),
    path(
        "work/batches/<int:batch_id>/decisions/<int:assignment_id>/",
        pages.decisions_assignment,
        name="quality-decision",
    ),
    path(
        "work/batches/<int:batch_id>/decisions/<int:assignment_id>/undo",
        pages.decisions_undo,
        name="quality-decisions-undo",
    ),
    path("work/batches/<int:batch_id>/decisions/gold", pages.decisions_gold, name="quality-decisions-gold"),
    path("work/batches/<int:batch_id>/decisions/settings", pages.decisions_settings, name="quality-decisions-settings"),
    path("work/batches/<int:batch_id>/decisions/upload", pages.decisions_upload, name="quality-decisions-upload"),
    path("work/batches/<int:batch_id>/decisions/unblock", pages.decisions_unblock, name="quality-decisions-unblock"),
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
    path("projects/<slug:name>/quality/reviewers/", demos.reviewers_page, name="quality-reviewers"),
    path("projects/<slug:name>/quality/problems.csv", demos.problems_csv, name="quality-problems-csv"),
    path("projects/<slug:name>/quality/records/", demos.records_page, name="quality-records"),
    path("projects/<slug:name>/quality/records/<int:id>/", demos.record_page, name="quality-record"),
    path("quality/second-reviews/", demos.second_reviews_page, name="quality-second-reviews"),
    path("quality/second-reviews/<str:name>/", demos.second_review_page, name="quality-second-review"),
    # Old paths of renamed pages (one release): 308 to the new path, method and body kept.
    moved("work/batches/<int:batch_id>/review/", "quality-decisions"),
    moved("work/batches/<int:batch_id>/review/decide", "quality-decisions-decide"),
    moved("work/batches/<int:batch_id>/review/<int:assignment_id>/", "quality-decision"),
    moved("work/batches/<int:batch_id>/review/<int:assignment_id>/reopen", "quality-decisions-reopen"),
    moved("work/batches/<int:batch_id>/review/<int:assignment_id>/undo", "quality-decisions-undo"),
    moved("work/batches/<int:batch_id>/review/gold", "quality-decisions-gold"),
    moved("work/batches/<int:batch_id>/review/settings", "quality-decisions-settings"),
    moved("work/batches/<int:batch_id>/review/upload", "quality-decisions-upload"),
    moved("work/batches/<int:batch_id>/review/unblock", "quality-decisions-unblock"),
    moved("projects/<slug:name>/quality/agreement/", "quality-reviewers"),
]
