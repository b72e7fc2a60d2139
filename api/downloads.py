"""Streaming file downloads with HTTP Range support (single ranges, as download managers and curl use)."""

import re

from django.http import JsonResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiResponse

from annotation.store.blobstore import stream_file

from .serializers import ErrorSerializer

# At most 19 digits (any file size fits): longer numbers are refused like any malformed range, and never reach int(),
# which refuses more than 4,300 digits with a ValueError.
RANGE = re.compile(r"^bytes=(\d{0,19})-(\d{0,19})$")
RANGE_ERRORS = {416: OpenApiResponse(ErrorSerializer, description="The Range header cannot be satisfied.")}


def parse_range(header: str, size: int):
    """``(start, end)`` inclusive for a satisfiable single range, ``None`` to serve everything (no or multiple
    ranges), or ``False`` when the range cannot be satisfied (416)."""
    if not header or "," in header:
        return None
    match = RANGE.match(header.strip())
    if not match or match.groups() == ("", ""):
        return False
    first, last = match.groups()
    if first == "":  # the last N bytes
        start, end = max(0, size - int(last)), size - 1
    else:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    if start >= size or start > end:
        return False
    return start, end


def csv_download(filename: str, lines) -> StreamingHttpResponse:
    """A CSV attachment streamed from its ``lines`` (an action's rows, already written as CSV text)."""
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, filename)
    response["X-Content-Type-Options"] = "nosniff"
    return response


def file_download(request, stored, size: int, filename: str, content_type: str, etag: str = ""):
    """200 with the whole file, 206 with the requested range, or 416 for a range outside the file; streamed from
    storage (``stored`` is a FieldFile: local or S3, see ``annotation.store.blobstore.stream_file``)."""
    wanted = parse_range(request.META.get("HTTP_RANGE", ""), size)
    if wanted is False:
        message = f"expected one range 'bytes=first-last' inside the file's {size} bytes"
        response = JsonResponse(
            {
                "detail": f"the Range header cannot be satisfied: {message}",
                "code": "range_not_satisfiable",
                "errors": [{"field": "Range", "message": message}],
            },
            status=416,
        )
        response["Content-Range"] = f"bytes */{size}"
    else:
        start, end = wanted or (0, size - 1)
        chunks = stream_file(stored.storage, stored.name, start, end - start + 1)
        response = StreamingHttpResponse(chunks, status=206 if wanted else 200, content_type=content_type)
        if wanted:
            response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
        response["Content-Disposition"] = content_disposition_header(True, filename)
    response["Accept-Ranges"] = "bytes"
    if etag:
        response["ETag"] = f'"{etag}"'
    return response
