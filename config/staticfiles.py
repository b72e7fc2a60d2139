"""A static files finder that publishes named files from outside ``static/`` and nothing else beside them.

The live session's protocol client (``recorder_extension/lib/live.js``) is one file shared by the extension's
side panel and the session pages: the pages load it as ``/static/recorder_lib/live.js``. Publishing the whole
``lib`` directory would serve the rest of the extension's code too, which no page needs.
"""

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder, searched_locations
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage


class SharedFilesFinder(BaseFinder):
    """Finds ``<prefix>/<name>`` for each ``(prefix, directory, names)`` in ``settings.STATIC_SHARED_FILES``."""

    def __init__(self, *args, **kwargs):
        self.files = {}  # static path → (storage, name in it)
        for prefix, directory, names in getattr(settings, "STATIC_SHARED_FILES", ()):
            storage = FileSystemStorage(location=directory)
            storage.prefix = prefix  # collectstatic puts the file under the prefix
            for name in names:
                self.files[f"{prefix}/{name}"] = (storage, name)
        super().__init__(*args, **kwargs)

    def check(self, **kwargs):
        return [
            Error(f"STATIC_SHARED_FILES names {path}, which does not exist", id="config.E001")
            for path, (storage, name) in self.files.items()
            if not storage.exists(name)
        ]

    def find(self, path, find_all=False, **kwargs):
        found = self.files.get(path)
        if found is None:
            return [] if find_all else None
        storage, name = found
        if storage.location not in searched_locations:
            searched_locations.append(storage.location)
        absolute = storage.path(name)
        return [absolute] if find_all else absolute

    def list(self, ignore_patterns):
        for storage, name in self.files.values():
            yield name, storage
