"""The app's URLconf: home and the health check, then each area's urlconf (``urls/<area>.py``), included here in one
place. The WebSocket route is in ``urls/live.py`` (``websocket_urlpatterns``); the API's router in ``api/urls.py``."""

from django.urls import include, path, re_path

from ..views import home
from . import agents, exports, forms, live, manage, mind2web, quality, review, stats

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", home.healthz, name="healthz"),
    path("favicon.ico", home.favicon, name="favicon"),
    path("", include(manage)),
    path("", include(exports)),
    path("", include(review)),
    path("", include(forms)),
    path("", include(stats)),
    path("", include(agents)),
    path("", include(mind2web)),
    path("", include(live)),
    path("", include(quality)),
]
