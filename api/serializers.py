"""Shapes every area's API shares: the one error shape (``api/errors.py`` answers it) and its schema responses."""

from collections.abc import Mapping

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField())


def error_responses(*codes) -> dict:
    """``{status: the error shape}`` for an operation's ``extend_schema(responses=...)``."""
    return {code: OpenApiResponse(ErrorSerializer) for code in codes}


class RejectUnknownFieldsMixin:
    """A write serializer that refuses fields it does not have: a 400 naming each (``"kee": unknown field``), with
    the other problems, so a typo never quietly stores nothing. Put it before the serializer class."""

    def to_internal_value(self, data):
        unknown = {}
        if isinstance(data, Mapping):
            known = sorted(name for name, field in self.fields.items() if not field.read_only)
            message = f"unknown field; allowed: {', '.join(known)}"
            unknown = {str(name): [message] for name in data if name not in known}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if not unknown or not isinstance(error.detail, dict):
                raise
            raise serializers.ValidationError({**error.detail, **unknown}) from None
        if unknown:
            raise serializers.ValidationError(unknown)
        return value
