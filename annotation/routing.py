"""WebSocket routes and the origin check that guards them."""

from channels.security.websocket import OriginValidator
from django.conf import settings
from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/sessions/<slug:demo>/", consumers.SessionConsumer.as_asgi(), name="ws-session"),
]


def SessionOriginValidator(application):  # noqa: N802 (named like Channels' AllowedHostsOriginValidator)
    """Channels' ``AllowedHostsOriginValidator`` plus the recorder extension's origin(s), ``LIVE_EXTENSION_IDS``
    (its side panel joins the session from ``chrome-extension://<id>``). Every other origin is refused."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    extensions = [f"chrome-extension://{extension_id}" for extension_id in settings.LIVE_EXTENSION_IDS]
    return OriginValidator(application, allowed + extensions)
