"""WebSocket routes and the origin check that guards them."""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/sessions/<slug:demo>/", consumers.SessionConsumer.as_asgi(), name="ws-session"),
]

DEFAULT_PORTS = {"http": 80, "https": 443}


class SessionOriginValidator:
    """Accept a WebSocket only from a page of this very site or from the recorder extension; deny every other.

    Browsers send ``Origin`` on WebSocket handshakes but never apply the same-origin policy to them, so this is what
    keeps another site's page from using a signed-in person's session cookie. Allowed (``allowed_origin``):

    - the same origin as the request: the Origin's host *and port* equal the ``Host`` header's (default ports
      filled in), and that host is in ``ALLOWED_HOSTS``. Channels' ``AllowedHostsOriginValidator`` compares host
      names only, so any other service on the same host (``http://127.0.0.1:9999``) passed;
    - an origin listed in ``CSRF_TRUSTED_ORIGINS`` (scheme, host and port, e.g. behind a proxy that rewrites Host);
    - the recorder extension, ``chrome-extension://<id>`` for each id in ``LIVE_EXTENSION_IDS``.
    """

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SessionOriginValidator guards WebSocket connections only")
        headers = {name.lower(): value.decode("latin1") for name, value in scope.get("headers", [])}
        if allowed_origin(headers.get(b"origin"), headers.get(b"host"), scope.get("scheme", "ws")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


def allowed_origin(origin: str | None, host: str | None, scheme: str = "ws") -> bool:
    """Whether a handshake with these ``Origin`` and ``Host`` headers (on a ``ws``/``wss`` connection) may go on."""
    if not origin:
        return False
    origin = origin.strip().rstrip("/").lower()
    extensions = {f"chrome-extension://{extension_id}".lower() for extension_id in settings.LIVE_EXTENSION_IDS}
    trusted = {trusted.rstrip("/").lower() for trusted in settings.CSRF_TRUSTED_ORIGINS if "*" not in trusted}
    return origin in extensions or origin in trusted or same_origin(origin, host, scheme)


def same_origin(origin: str, host: str | None, scheme: str) -> bool:
    """The Origin names this server as the request reached it: same host and port as ``Host``, an allowed host, and
    over TLS when the socket is (``wss``)."""
    try:
        parts = urlsplit(origin)
        origin_port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a malformed port
        return False
    if (
        parts.scheme not in DEFAULT_PORTS
        or not parts.hostname
        or not host
        or (scheme == "wss" and parts.scheme != "https")
    ):
        return False
    host_name, host_port = split_domain_port(host.lower())
    allowed_hosts = settings.ALLOWED_HOSTS or (["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    if not host_name or not validate_host(host_name, allowed_hosts):
        return False
    return (parts.hostname, origin_port) == (
        host_name.strip("[]"),
        int(host_port) if host_port else DEFAULT_PORTS[parts.scheme],
    )
