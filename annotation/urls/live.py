"""The live session: the instructor's and navigator's pages, joining by invitation, the session's screenshots, and the
WebSocket route (``websocket_urlpatterns``, served by ``config/asgi.py``)."""

from django.urls import path

from ..views import live, live_socket

urlpatterns = [
    path("sessions/join/<str:code>", live.join, name="live-join"),
    path("sessions/<slug:name>/instruct", live.instruct, name="live-instruct"),
    path("sessions/<slug:name>/navigate", live.navigate, name="live-navigate"),
    path("sessions/<slug:name>/invitation/revoke", live.revoke_invitation, name="live-revoke-invitation"),
    path("sessions/<slug:name>/screenshots/<str:sha256>", live.screenshot, name="live-screenshot"),
]

websocket_urlpatterns = [
    path("ws/sessions/<slug:demo>/", live_socket.SessionConsumer.as_asgi(), name="live-socket"),
]
