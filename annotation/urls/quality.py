"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path

from ..views.quality import demos

urlpatterns = [
    # Demonstrations: reviewers' agreement and the second-review share, annotators' records, second reviews.
    path("projects/<slug:name>/quality/agreement/", demos.agreement_page, name="quality-agreement"),
    path("projects/<slug:name>/quality/records/", demos.records_page, name="quality-records"),
    path("projects/<slug:name>/quality/records/<int:id>/", demos.record_page, name="quality-record"),
    path("quality/second-reviews/", demos.second_reviews_page, name="quality-second-reviews"),
    path("quality/second-reviews/<str:name>/", demos.second_review_page, name="quality-second-review"),
]
