"""Errors the domain raises; ``status`` is the HTTP status the API answers with."""

import contextlib
import logging

from ..lib import jsonsafe, schema

log = logging.getLogger(__name__)


class ActionError(Exception):
    """A request the domain refuses; ``status`` is the HTTP status the API answers with."""

    status = 400
    code = "invalid"

    def __init__(self, detail: str, errors: list | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = [e.as_dict() if isinstance(e, schema.FieldError) else e for e in (errors or [])]

    def as_dict(self) -> dict:
        """The one error shape of the API and of the pages' JSON endpoints: ``{"detail", "code", "errors"}``."""
        return {"detail": self.detail, "code": self.code, "errors": self.errors}


class ValidationFailed(ActionError):
    status, code = 400, "validation_failed"


def invalid(field: str, message: str) -> ValidationFailed:
    """A 400 naming one field: ``"<field>: <message>"``, and the same as its one field error."""
    return ValidationFailed(f"{field}: {message}", [{"field": field, "message": message}])


class MalformedJSON(ValidationFailed):
    code = "parse_error"

    @classmethod
    def of(cls, problem) -> "MalformedJSON":
        """From an ``annotation.lib.jsonsafe.JSONProblem``: the detail says what is wrong, the error names the field."""
        return cls(str(problem), [{"field": problem.field or "body", "message": problem.message}])


def parse_json(data, field: str):
    """An uploaded JSON file (bytes or text) parsed with the request bodies' rules (``annotation.lib.jsonsafe``: at most
    ``MAX_DEPTH`` levels, finite numbers, valid Unicode), so no file can be nested deeper than a body may; every
    uploaded JSON file goes through here. A 400 naming ``field``, or the path inside it (``file[3].url``)."""
    try:
        return jsonsafe.loads(data, field)
    except jsonsafe.JSONProblem as problem:
        raise MalformedJSON.of(problem) from None


class Forbidden(ActionError):
    status, code = 403, "forbidden"


class NotFound(ActionError):
    status, code = 404, "not_found"


class Conflict(ActionError):
    status, code = 409, "conflict"


class Gone(ActionError):
    """Existed, but no longer usable (a used, revoked or expired invitation)."""

    status, code = 410, "gone"


class TooLarge(ActionError):
    status, code = 413, "too_large"


class UnsupportedMediaType(ActionError):
    status, code = 415, "unsupported_media_type"


class TooManyRequests(ActionError):
    """Refused for now; ``retry_after``: seconds until it may be tried again (the ``Retry-After`` header)."""

    status, code = 429, "throttled"

    def __init__(self, detail: str, errors: list | None = None, retry_after: int = 60):
        super().__init__(detail, errors)
        self.retry_after = retry_after


class StorageUnavailable(ActionError):
    """The server could not write what it was sent (disk full, an I/O error): nothing was stored, and the same
    request may succeed later (``Retry-After``; the recorder backs off and retries on a 503)."""

    status, code = 503, "storage_unavailable"
    retry_after = 30


@contextlib.contextmanager
def storage_failures(what: str):
    """Inside: an ``OSError`` (what writing files raises) becomes a ``StorageUnavailable`` naming ``what`` and the
    system's reason, and is logged with its traceback for the operators (it is the server's fault, not the
    client's)."""
    try:
        yield
    except OSError as error:
        log.exception("storing %s failed", what)
        reason = error.strerror or str(error) or type(error).__name__
        raise StorageUnavailable(
            f"the server could not store {what} ({reason}); nothing was stored, send it again later",
            [{"field": "body", "message": reason}],
        ) from error
