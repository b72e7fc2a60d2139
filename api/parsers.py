"""A JSON parser that refuses bodies over the ingest limit with 413 instead of reading them whole, and JSON that
the database or our code cannot take (``annotation.lib.jsonsafe``) with a 400 naming the field."""

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.parsers import JSONParser

from annotation.actions import MalformedJSON
from annotation.lib import jsonsafe


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "too_large"


class LimitedJSONParser(JSONParser):
    """``JSONParser`` with a size limit (``INGEST_MAX_BATCH_BYTES``) and a clear message on malformed JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.INGEST_MAX_BATCH_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes (INGEST_MAX_BATCH_BYTES)")
        try:
            return jsonsafe.loads(raw)
        except jsonsafe.JSONProblem as problem:
            raise MalformedJSON.of(problem) from None
