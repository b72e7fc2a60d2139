"""Shapes every area's API shares: the one error shape (``api/errors.py`` answers it) and its schema responses."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField())


def error_responses(*codes) -> dict:
    """``{status: the error shape}`` for an operation's ``extend_schema(responses=...)``."""
    return {code: OpenApiResponse(ErrorSerializer) for code in codes}
