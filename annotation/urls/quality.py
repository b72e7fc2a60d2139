"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

from django.urls import path, re_path

from ..views.quality import agreement

urlpatterns = [
    # Agreement and aggregation of a form batch (the batch page links here).
    path("work/batches/<int:batch_id>/agreement/", agreement.agreement_page, name="quality-agreement"),
    path("work/batches/<int:batch_id>/agreement.json", agreement.agreement_json, name="quality-agreement-json"),
    re_path(
        r"^work/batches/(?P<batch_id>[0-9]+)/agreement/(?P<table>fields|workers|tasks)\.csv$",
        agreement.agreement_csv,
        name="quality-agreement-csv",
    ),
]
