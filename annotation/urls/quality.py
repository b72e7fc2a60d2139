"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path, re_path

from ..views.quality import agreement, demos

urlpatterns = [
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
