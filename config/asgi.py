"""ASGI entry point: Django for HTTP, Channels for WebSocket, served by one Daphne process."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from annotation.routing import SessionOriginValidator, websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SessionOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
