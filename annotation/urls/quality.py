"""Quality control pages (``quality-…``): decisions on form work, qualifications, agreement, reviewers, records."""

urlpatterns = []
