"""Secret URL parameters, masked in what ingest stores (docs/recorder-privacy.md, "On the server").

The server's copy of the recorder's rule 1 (``recorder_extension/lib/redact.js``; one list, one set of cases, both
checked by ``test_recordings_privacy.py``): in any text, a ``name=value`` after ``?``, ``#``, ``&`` or ``;``
(so also ``&amp;`` in HTML, fragments such as ``#access_token=…`` and path parameters such as ``;jsessionid=…``) whose
name contains one of ``SECRET_PARAMETER_PARTS`` (case-insensitive, ``+`` and ASCII ``%XX`` decoded) keeps its name and
gets ``MASK`` as its value, and so does a URL's user-info password (``scheme://user:password@host``); an element whose
``name`` attribute is such a name keeps no ``value`` or ``content`` attribute. The recorder also masks the values of
private fields wherever they reappear; the server cannot know those values, so only this rule runs here. Pure.
"""

import contextlib
import re
from urllib.parse import urlsplit, urlunsplit

MASK = "********"

# The one list (docs/recorder-privacy.md; recorder_extension/lib/redact.js SECRET_PARAMETER_PARTS).
SECRET_PARAMETER_PARTS = (
    "password",
    "passwd",
    "pwd",
    "token",
    "code",
    "key",
    "secret",
    "session",
    "sid",
    "auth",
    "otp",
    "signature",
    "sig",
    "credential",
    "jwt",
    "saml",
    "assertion",
)

# The recorder's regular expressions, character for character (explicit HTML whitespace, not \s, so both languages
# match the same characters). A name has no "," or "/" (``;base64,…=`` in a data: URL is no parameter); a value ends at
# a separator, whitespace, a quote, "<", ">" or ")" (CSS url(…)).
PARAMETER = re.compile(r"""([?#&;])([^=&#;?,/\t\n\f\r "'<>]+)=([^&#?\t\n\f\r "'<>)]*)""")
USERINFO = re.compile(r"""([A-Za-z][A-Za-z0-9+.-]*://[^\t\n\f\r /?#@:"'<>]*:)([^\t\n\f\r /?#@"'<>]+)@""")
ASCII_ESCAPE = re.compile(r"%([0-7][0-9A-Fa-f])")
FIELD_VALUES = ("value", "content")


def is_secret_parameter(name: str) -> bool:
    """Whether a query or fragment parameter of this name holds a secret: its name contains a listed part."""
    key = ASCII_ESCAPE.sub(lambda m: chr(int(m[1], 16)), name.replace("+", " ")).lower()
    return any(part in key for part in SECRET_PARAMETER_PARTS)


def _masked_parameter(match: re.Match) -> str:
    separator, name, value = match.groups()
    if not value or value == MASK or not is_secret_parameter(name):
        return match[0]
    return f"{separator}{name}={MASK}"


def mask_parameters(text: str) -> str:
    """``text`` (a URL, a page's text or HTML) with secret-named parameters' values and user-info passwords masked."""
    if "=" not in text and "@" not in text:
        return text
    return PARAMETER.sub(_masked_parameter, USERINFO.sub(lambda m: f"{m[1]}{MASK}@", text))


def mask_arguments(value, path: str = "arguments") -> list[str]:
    """Mask, in place, a turn's ``arguments`` (any JSON value): ``mask_parameters`` on every string, and the ``value``
    and ``content`` of an ``attributes`` object whose ``name`` is secret. Returns the paths of what changed (for the
    log: never the values). In place, as ingest's other checks, so the hot path copies nothing."""
    masked = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return masked
    for key, item in list(items):
        where = f"{path}.{key}" if isinstance(value, dict) else f"{path}[{key}]"
        if isinstance(item, str):
            out = mask_parameters(item)
            if out != item:
                value[key] = out
                masked.append(where)
        elif isinstance(item, dict | list):
            masked += mask_arguments(item, where)
    name = value.get("name") if isinstance(value, dict) else None
    if path.endswith(".attributes") and isinstance(name, str) and is_secret_parameter(name):
        for key in FIELD_VALUES:
            if isinstance(value.get(key), str) and value[key] not in ("", MASK):
                value[key] = MASK
                masked.append(f"{path}.{key}")
    return masked


def without_userinfo(url: str) -> str:
    """The URL without the user and password typed into it (``http://user:KEY@host:8000/v1`` → ``http://host:8000/v1``),
    for showing a refused URL back; "" when it cannot be read as a URL with a host."""
    if not url or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return ""
    if "@" in host:
        return ""
    netloc = f"[{host}]" if ":" in host else host
    with contextlib.suppress(ValueError):
        netloc += f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=netloc))
