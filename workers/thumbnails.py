"""Screenshot thumbnails for the review page: made once per screenshot blob, stored beside the blobs by sha."""

import io

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

SIZE = (320, 180)


def thumbnail_path(sha256: str) -> str:
    return f"thumbs/{sha256[:2]}/{sha256}.webp"


def has_thumbnail(sha256: str) -> bool:
    return default_storage.exists(thumbnail_path(sha256))


def thumbnail_bytes(image_bytes: bytes) -> bytes:
    """A WebP no larger than ``SIZE``, keeping the aspect ratio."""
    image = Image.open(io.BytesIO(image_bytes))
    image.thumbnail(SIZE)
    out = io.BytesIO()
    image.convert("RGB").save(out, "WEBP", quality=70)
    return out.getvalue()


def make_thumbnails(shas, read) -> int:
    """Create the missing thumbnails of these screenshot blobs; returns how many were made."""
    made = 0
    for sha in dict.fromkeys(shas):
        if not has_thumbnail(sha):
            default_storage.save(thumbnail_path(sha), ContentFile(thumbnail_bytes(read(sha))))
            made += 1
    return made
