"""Streaming file downloads with HTTP Range support (single ranges, as download managers and curl use)."""

import re

from django.http import FileResponse, JsonResponse, StreamingHttpResponse

CHUNK = 1024 * 1024
# At most 19 digits (any file size fits): longer numbers are refused like any malformed range, and never reach int(),
# which refuses more than 4,300 digits with a ValueError.
RANGE = re.compile(r"^bytes=(\d{0,19})-(\d{0,19})$")


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


def iter_range(handle, start: int, length: int):
    with handle:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk


def file_download(request, open_file, size: int, filename: str, content_type: str, etag: str = ""):
    """200 with the whole file, 206 with the requested range, or 416 for a range outside the file."""
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
    elif wanted is None:
        response = FileResponse(open_file(), as_attachment=True, filename=filename, content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        start, end = wanted
        response = StreamingHttpResponse(
            iter_range(open_file(), start, end - start + 1), status=206, content_type=content_type
        )
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Accept-Ranges"] = "bytes"
    if etag:
        response["ETag"] = f'"{etag}"'
    return response
