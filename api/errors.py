"""One error shape for the whole API: ``{"detail": "...", "code": "...", "errors": [{"field", "message"}]}``."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.actions import ActionError
from config import db_pool

from .parsers import PayloadTooLarge


def field_errors(data, prefix: str = "") -> list:
    """DRF's ``{"field": ["message", ...]}`` validation errors as a flat list of ``{field, message}``; nested errors (a
    list's item, a nested object's field) are named by their path, e.g. ``workers[0]``, ``filter.batch``."""
    if not isinstance(data, dict):
        return []
    found = []
    for name, messages in data.items():
        if name == "detail" and not prefix:
            continue
        field = f"{prefix}[{name}]" if isinstance(name, int) else f"{prefix}.{name}" if prefix else str(name)
        for message in messages if isinstance(messages, list) else [messages]:
            if isinstance(message, dict):
                found += field_errors(message, field)
            else:
                found.append({"field": field, "message": str(message)})
    return found


def exception_handler(exc, context):
    """Map domain errors (``ActionError``) and DRF's own errors to the API's error shape."""
    if isinstance(exc, ActionError):
        headers = {"Retry-After": str(exc.retry_after)} if hasattr(exc, "retry_after") else None
        return Response(exc.as_dict(), status=exc.status, headers=headers)
    if db_pool.pool_exhausted(exc):
        headers = {"Retry-After": str(db_pool.RETRY_AFTER)}
        body = {"detail": db_pool.busy_detail(), "code": db_pool.CODE, "errors": []}
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=headers)
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(f"request body exceeds {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    errors = field_errors(response.data)
    detail = response.data.get("detail") if isinstance(response.data, dict) else None
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    if detail is None:
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
    response.data = {"detail": str(detail), "code": code, "errors": errors}
    return response


@csrf_exempt  # it changes nothing; a CSRF refusal would be Django's HTML 403 instead of this JSON 404
def not_found(request, *args, **kwargs):
    """Any path under /api/ that names no endpoint: the API's error shape, not Django's HTML page."""
    return JsonResponse({"detail": f"no API endpoint at {request.path}", "code": "not_found", "errors": []}, status=404)
