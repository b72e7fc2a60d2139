"""ASGI entry point: Django for HTTP (behind ``BodyGuard``: sizes and credentials checked before a body is read),
Channels for WebSocket, both behind ``behind_proxies`` (forwarded headers from ``TRUSTED_PROXIES`` only). `make run`
serves it with uvicorn."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The server pools its PostgreSQL connections (settings.DB_POOL_SIZE): a request thread takes one for its queries and
# gives it back when the response is sent, instead of opening a connection per request.
os.environ.setdefault("DB_POOL_SIZE", "10")
django.setup(set_prefix=False)

from config.logs import redact_server_logs  # noqa: E402

redact_server_logs()  # uvicorn's request lines carry the URL: no capability token in them (config/logs.py)

from django.conf import settings  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402

from config.handler import PooledASGIHandler  # noqa: E402

# Each request's sync work runs on one of REQUEST_THREADS long-lived threads (config/handler.py); 0: Django's own
# handler, a new thread per request.
threads = settings.REQUEST_THREADS
django_asgi_app = PooledASGIHandler(threads) if threads > 0 else ASGIHandler()

from config.checks import refuse_insecure_start  # noqa: E402

refuse_insecure_start()  # no server on a known development key unless DEBUG is on

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from annotation.store.hotsql import active_token  # noqa: E402
from annotation.urls.live import websocket_urlpatterns  # noqa: E402
from annotation.views.live_socket import SessionOriginValidator  # noqa: E402
from config.body_guard import BodyGuard  # noqa: E402

# Every view module, DRF and the serializers are imported now rather than by the first request each server process
# serves (that request waited ~0.5 s for them; a worker restarted under load handed the wait to a client).
_ = get_resolver().url_patterns


def behind_proxies(app):
    """``app`` taking the client's address and scheme from ``X-Forwarded-For`` / ``X-Forwarded-Proto`` only when
    the connection comes from one of ``TRUSTED_PROXIES`` (the rightmost address no trusted proxy added is the
    client's); with none (the default) the connection's own address is the client's, whatever headers it sends."""
    if not settings.TRUSTED_PROXIES:
        return app
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    return ProxyHeadersMiddleware(app, trusted_hosts=settings.TRUSTED_PROXIES)


application = behind_proxies(
    ProtocolTypeRouter(
        {
            "http": BodyGuard(django_asgi_app, active_token),
            "websocket": SessionOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
