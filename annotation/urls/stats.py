"""Statistics, activity and pay of a project (docs/stats.md)."""

from django.urls import path, re_path

from ..views import stats

urlpatterns = [
    path("projects/<slug:name>/stats/", stats.stats_page, name="stats-index"),
    path("projects/<slug:name>/stats.json", stats.stats_all, name="stats-all"),
    re_path(
        r"^projects/(?P<name>[-\w]+)/stats/(?P<key>\w+)\.(?P<fmt>csv|json)$",
        stats.stats_table,
        name="stats-table",
    ),  # fmt: skip
    path("projects/<slug:name>/activity/", stats.activity_page, name="stats-activity"),
    path("projects/<slug:name>/activity.csv", stats.activity_csv, name="stats-activity-csv"),
    path("projects/<slug:name>/pay.csv", stats.pay_csv, name="stats-pay-csv"),
    path("projects/<slug:name>/pay/rates/", stats.pay_rates, name="stats-pay-rates"),
]
