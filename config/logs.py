"""What the servers log about requests: capability tokens redacted, and an ordinary refusal in one line.

- ``redact``: the one function that takes capability tokens out of a request line, a path or any logged text:
  the segment of an invitation link (``/join/<token>/``, the live session's ``/sessions/join/<code>``), of a task
  frame's work URL (``/forms/assignments/<id>/<token>/``) and of a password-reset link
  (``/accounts/reset/<uid>/<token>/``), and the value of a ``token``, ``key``, ``code``, ``secret``, ``signature``
  or ``password`` query parameter (also ``*_token``, ``api-key``, ...: the preview and read-only frames'
  ``?token=``). Each becomes ``[redacted]``. ``RedactTokens`` applies it to every record it sees: the message,
  its arguments and the traceback's text.
- ``OneLineRefusals``: a 4xx that Django logs (``django.request``: the 403 of ``PermissionDenied`` with its
  traceback, a 404, an API refusal; ``django.security``: a CSRF failure, a disallowed host) becomes one line,
  ``<reason>: <method> <path> <status> user=<id>``, without the traceback; a 5xx keeps its traceback.

Where they apply: the root handler of ``LOGGING`` (``config/settings.py``: Django's loggers and ours), and uvicorn's
access and error loggers (the request lines and the WebSocket lines), which uvicorn configures itself before the
application loads: ``config/asgi.py`` calls ``redact_server_logs`` on load, in every server process
(``config.server``'s command and each process of ``config.serve``).

No import of the domain: logging is configured before the apps load.
"""

import logging
import re

from django.utils.functional import empty

REDACTED = "[redacted]"
# A URL may sit inside another one's query, percent-encoded (a sign-in redirect's ``?next=/join/<token>/`` or
# ``?next=/work/%3Fkey%3D…``): the separators match in both spellings.
SLASH, ASK, AND, EQUALS = "(?:/|%2[Ff])", "(?:[?;]|%3[Ff])", "(?:&|%26)", "(?:=|%3[Dd])"
SEGMENT = r"(?:(?!%2[Ff]|%3[Ff])[^/?#&\s\"'])+"
END = r"(?=/|%2[Ff]|[?#&\s\"']|%3[Ff]|$)"
# A path segment that is a capability: the part before it is kept, the segment replaced.
PATHS = [
    # /join/<token>/ (project invitations), /sessions/join/<code> (live session invitations)
    re.compile(rf"({SLASH}join{SLASH}){SEGMENT}"),
    # a task frame's work URL, /forms/assignments/<id>/<token>/ (not the read-only /view/)
    re.compile(rf"({SLASH}forms{SLASH}assignments{SLASH}\d+{SLASH})(?!view{END}){SEGMENT}"),
    # a password-reset link, /accounts/reset/<uid>/<token>/ (not the form it redirects to, …/set-password/)
    re.compile(rf"({SLASH}reset{SLASH}{SEGMENT}{SLASH})(?!set-password{END}){SEGMENT}"),
]
SECRET_NAMES = r"(?:[\w.-]*[_.-])?(?:token|key|code|secret|signature|sig|password|passwd)"
QUERY = re.compile(rf"((?:{ASK}|{AND}){SECRET_NAMES}{EQUALS})(?:(?!%26)[^&;#\s\"'])*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every capability token in it (see the module) replaced by ``[redacted]``."""
    for pattern in PATHS:
        text = pattern.sub(rf"\g<1>{REDACTED}", text)
    return QUERY.sub(rf"\g<1>{REDACTED}", text)


def redacted(value):
    return redact(value) if isinstance(value, str) else value


class RedactTokens(logging.Filter):
    """Redact the record's message, its string arguments (kept in place: uvicorn's access formatter reads them by
    position) and its traceback's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redacted(record.msg)
        if isinstance(record.args, dict):
            record.args = {key: redacted(value) for key, value in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(redacted(value) for value in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def user_of(request) -> str:
    """The request's user id as the view left it: ``anonymous``, or ``-`` when nothing looked the user up (reading
    it now would query the database from the logging call)."""
    user = getattr(request, "user", None)
    wrapped = getattr(user, "_wrapped", user)  # AuthenticationMiddleware's lazy user: ``empty`` until looked up
    if wrapped is None or wrapped is empty:
        return "-"
    if not getattr(wrapped, "is_authenticated", False):
        return "anonymous"
    return str(getattr(wrapped, "pk", "-"))


class OneLineRefusals(logging.Filter):
    """A 4xx of Django's request and security loggers in one line, without a traceback (see the module)."""

    LOGGERS = ("django.request", "django.security")

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        request = getattr(record, "request", None)
        if not record.name.startswith(self.LOGGERS) or request is None or not isinstance(status, int):
            return True
        path = getattr(request, "path", "")
        reason = record.getMessage()
        reason = reason.removesuffix(f": {path}").removesuffix(f": {path.encode('unicode_escape').decode('ascii')}")
        line = f"{reason}: {getattr(request, 'method', '-')} {redact(path)} {status} user={user_of(request)}"
        record.msg, record.args = line, ()
        if status < 500:
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def redact_server_logs() -> None:
    """Redact uvicorn's request and WebSocket lines (its loggers have their own handlers, outside ``LOGGING``)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(existing, RedactTokens) for existing in logger.filters):
            logger.addFilter(RedactTokens())
