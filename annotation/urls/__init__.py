"""Pages of the web app."""

from django.urls import include, path, re_path

from .. import stats_views
from ..views import home
from . import agents, exports, forms, live, manage, mind2web, review

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", home.healthz, name="healthz"),
    path("", include(manage)),
    path("", include(exports)),
    path("", include(review)),
    path("", include(forms)),
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
    path("", include(agents)),
    path("", include(mind2web)),
    path("", include(live)),
]
