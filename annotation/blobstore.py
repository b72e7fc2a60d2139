"""Reading stored blobs and knowing their thumbnails, for the web pages (the worker makes the thumbnails)."""

from django.core.files.storage import default_storage

from .models import sha256_path


def read_blob(sha256: str) -> bytes:
    """The bytes of a stored blob."""
    with default_storage.open(sha256_path(sha256), "rb") as handle:
        return handle.read()


def thumbnail_path(sha256: str) -> str:
    """Where the worker stores a screenshot's thumbnail (``workers.thumbnails``)."""
    return f"thumbs/{sha256[:2]}/{sha256}.webp"


def has_thumbnail(sha256: str) -> bool:
    return default_storage.exists(thumbnail_path(sha256))
