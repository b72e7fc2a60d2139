"""Screenshot thumbnails for the review page: made once per screenshot blob, stored beside the blobs by sha."""

import io
import logging

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

from annotation.store.blobstore import has_thumbnail, thumbnail_path

log = logging.getLogger(__name__)
SIZE = (320, 180)


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
        if has_thumbnail(sha):
            continue
        try:
            data = thumbnail_bytes(read(sha))
        except (OSError, ValueError, Image.DecompressionBombError) as error:  # unreadable, or over the pixel limit
            log.warning("thumbnail of %s not made: %s", sha, error)
            continue
        default_storage.save(thumbnail_path(sha), ContentFile(data))
        made += 1
    return made
