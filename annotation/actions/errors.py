"""Errors the domain raises; ``status`` is the HTTP status the API answers with."""

from .. import schema


class ActionError(Exception):
    """A request the domain refuses; ``status`` is the HTTP status the API answers with."""

    status = 400
    code = "invalid"

    def __init__(self, detail: str, errors: list | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = [e.as_dict() if isinstance(e, schema.FieldError) else e for e in (errors or [])]


class ValidationFailed(ActionError):
    status, code = 400, "validation_failed"


class MalformedJSON(ValidationFailed):
    code = "parse_error"

    @classmethod
    def of(cls, problem) -> "MalformedJSON":
        """From an ``annotation.jsonsafe.JSONProblem``: the detail says what is wrong, the error names the field."""
        return cls(str(problem), [{"field": problem.field or "body", "message": problem.message}])


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
