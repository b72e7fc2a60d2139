"""Exports, splits and evaluations of a project (the archives download through the API)."""

from django.urls import path, re_path

from ..views.exports import pages, recuration

urlpatterns = [
    path("projects/<slug:name>/splits/", pages.splits_page, name="exports-splits"),
    path("projects/<slug:name>/exports/", pages.exports, name="exports-exports"),
    path("projects/<slug:name>/exports/<int:job_id>/", pages.export_detail, name="exports-export"),
    path("projects/<slug:name>/evaluations/", pages.evaluations, name="exports-evaluations"),
    # a release imported and curated again: original against corrected (changes.json's figures)
    path("projects/<slug:name>/recuration/", recuration.recuration_page, name="exports-recuration"),
    path(
        "projects/<slug:name>/recuration/<str:release_id>/",
        recuration.recuration_item,
        name="exports-recuration-item",
    ),
    path("projects/<slug:name>/evaluations/<int:job_id>/", pages.evaluation_detail, name="exports-evaluation"),
    re_path(
        r"^projects/(?P<name>[-\w]+)/(?P<kind>exports|evaluations)/(?P<job_id>[0-9]+)/cancel$",
        pages.job_cancel,
        name="exports-job-cancel",
    ),
]
