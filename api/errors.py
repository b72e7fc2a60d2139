"""One error shape for the whole API: ``{"detail": "...", "code": "...", "errors": [{"field", "message"}]}``."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.actions import ActionError
from config import db_pool


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField())


def error_responses(*codes) -> dict:
    """``{status: the error shape}`` for an operation's ``extend_schema(responses=...)``."""
    return {code: OpenApiResponse(ErrorSerializer) for code in codes}


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "too_large"


def field_errors(data) -> list:
    """DRF's ``{"field": ["message", ...]}`` validation errors as a flat list of ``{field, message}``."""
    if not isinstance(data, dict):
        return []
    return [
        {"field": name, "message": str(message)}
        for name, messages in data.items()
        if name != "detail"
        for message in (messages if isinstance(messages, list) else [messages])
    ]


def exception_handler(exc, context):
    """Map domain errors (``ActionError``) and DRF's own errors to the API's error shape."""
    if isinstance(exc, ActionError):
        headers = {"Retry-After": str(exc.retry_after)} if hasattr(exc, "retry_after") else None
        return Response(
            {"detail": exc.detail, "code": exc.code, "errors": exc.errors}, status=exc.status, headers=headers
        )
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
