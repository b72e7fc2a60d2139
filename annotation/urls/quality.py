"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path

from ..views.quality import pages

urlpatterns = [
    path("work/batches/<int:batch_id>/review/", pages.review_page, name="quality-review"),
    path("work/batches/<int:batch_id>/review/decide", pages.review_decide, name="quality-review-decide"),
    path(
        "work/batches/<int:batch_id>/review/<int:assignment_id>/reopen",
        pages.review_reopen,
        name="quality-review-reopen",
    ),
    path("work/batches/<int:batch_id>/review/gold", pages.review_gold, name="quality-review-gold"),
    path("work/batches/<int:batch_id>/review/settings", pages.review_settings, name="quality-review-settings"),
    path("work/batches/<int:batch_id>/review/upload", pages.review_upload, name="quality-review-upload"),
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
]
