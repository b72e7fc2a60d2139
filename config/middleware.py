"""WhiteNoise, able to run in the ASGI server's event loop.

WhiteNoise's middleware is synchronous only. Second in the chain, it made Django run every request's middleware
in three legs: a thread for it and SecurityMiddleware, back to the event loop for the rest (``async_to_sync``), a
thread again for the view. Async-capable, the whole chain runs in the loop and only the view goes to a thread: a
request costs two thread hand-overs fewer (docs/deployment.md). A static file's lookup is a dict read (with
``WHITENOISE_AUTOREFRESH``, in DEBUG, a filesystem search, done in a thread); its response is built in a thread,
since that opens the file.
"""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
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
