"""The middleware chain in the ASGI server's event loop: WhiteNoise made async-capable, Django's own middleware with
their hooks called in the loop (docs/deployment.md).

WhiteNoise's middleware is synchronous only. Second in the chain, it made Django run every request's middleware
in three legs: a thread for it and SecurityMiddleware, back to the event loop for the rest (``async_to_sync``), a
thread again for the view. Async-capable, the whole chain runs in the loop and only the view goes to a thread: a
request costs two thread hand-overs fewer. A static file's lookup is a dict read (with
``WHITENOISE_AUTOREFRESH``, in DEBUG, a filesystem search, done in a thread); its response is built in a thread,
since that opens the file.
"""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from csp import middleware as csp_middleware
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.middleware import clickjacking, common, csrf, security
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        super().__init__(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.acall(request)
        return super().__call__(request)

    async def acall(self, request):
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)


# --- Django's own middleware, its hooks run in the event loop ---------------------------------------------------
#
# In the ASGI server Django calls each ``MiddlewareMixin`` hook (``process_request``, ``process_response``) through
# ``sync_to_async``: with the chain below that is fourteen thread hand-overs per request (the loop hands the hook to
# a thread, waits, takes the result back), each a wake-up of two threads and a turn of the GIL, besides the one the
# view needs. The hooks below touch neither the database nor the network (they read headers and cookies, set
# headers, make lazy objects), so they run in the loop. Where a hook may write (a modified session, pending
# messages) it still goes to a thread: ``response_may_block``.


class EventLoopHooks:
    """For a ``MiddlewareMixin`` whose hooks do no I/O: in async mode they are called in the event loop."""

    def response_may_block(self, request, response) -> bool:
        return False

    async def __acall__(self, request):
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self.response_may_block(request, response):
                response = await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
            else:
                response = self.process_response(request, response)
        return response


class SecurityMiddleware(EventLoopHooks, security.SecurityMiddleware):
    pass


class SessionMiddleware(EventLoopHooks, sessions.SessionMiddleware):
    """``process_request`` makes a lazy session (read from the database when first used, in the view's thread);
    ``process_response`` saves it only when it changed."""

    def response_may_block(self, request, response) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class CommonMiddleware(EventLoopHooks, common.CommonMiddleware):
    pass


class CsrfViewMiddleware(EventLoopHooks, csrf.CsrfViewMiddleware):
    """The token cookie is read and set in the loop (``CSRF_USE_SESSIONS`` is off); ``process_view``, which may
    parse a form body, still runs in a thread."""


class AuthenticationMiddleware(EventLoopHooks, auth.AuthenticationMiddleware):
    """``request.user`` is lazy: the session and the user are read when the view first asks, in its thread."""


class MessageMiddleware(EventLoopHooks, messages.MessageMiddleware):
    """Messages added or read during the request are stored (in a cookie, or the session) in a thread."""

    def response_may_block(self, request, response) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


class XFrameOptionsMiddleware(EventLoopHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class CSPMiddleware(EventLoopHooks, csp_middleware.CSPMiddleware):
    pass
