"""Step mode's raw dump beside the MHTML snapshot (issue 39, docs/recorder.md#raw-dump): the tab's network traffic as
HAR 1.2 and the DOM snapshot with layout and a subset of computed styles, each a blob a step's turn refers to.

Only their shape is checked here, with the place of a problem named (``log.entries[3].request.headers[1]``): what the
Mind2Web export and offline replay read, and, as defence in depth behind the recorder, no cookie or credential header
(the bytes are content-addressed, so a HAR carrying one is refused, not rewritten)."""

from .redact import is_secret_parameter
from .schema import RAW_FIELDS, FieldError, is_number

MASK = "********"  # a private value as the recorder masks it (docs/recorder-privacy.md)

HAR_MEDIA_TYPE = RAW_FIELDS["har"]
DOM_SNAPSHOT_MEDIA_TYPE = RAW_FIELDS["dom_snapshot"]
DOM_SNAPSHOT_FORMAT = "webtasks-dom-snapshot/1"
# media type → the setting holding its size limit (config/settings.py, docs/limits.md)
LIMIT_SETTINGS = {HAR_MEDIA_TYPE: "INGEST_MAX_HAR_BYTES", DOM_SNAPSHOT_MEDIA_TYPE: "INGEST_MAX_DOM_SNAPSHOT_BYTES"}
# Headers never kept in traffic (lower case): the recorder drops them, the server refuses a HAR that has one.
SECRET_HEADERS = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization"})

REQUEST_KEYS = {"method": str, "url": str, "httpVersion": str, "headers": list, "queryString": list}
RESPONSE_KEYS = {"status": int, "statusText": str, "httpVersion": str, "headers": list, "content": dict}
NUMBER_KEYS = ("headersSize", "bodySize")


def typed(value, kind) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def check_keys(value: dict, keys: dict, where: str) -> list[FieldError]:
    return [
        FieldError(f"{where}.{key}", f"required; expected {kind.__name__}")
        for key, kind in keys.items()
        if not typed(value.get(key), kind)
    ]


def check_headers(headers: list, where: str) -> list[FieldError]:
    errors = []
    for index, header in enumerate(headers):
        at = f"{where}.headers[{index}]"
        if not isinstance(header, dict) or not isinstance(header.get("name"), str):
            errors.append(FieldError(at, "expected {name, value} strings"))
        elif not isinstance(header.get("value"), str):
            errors.append(FieldError(f"{at}.value", "expected a string"))
        elif header["name"].strip().lower() in SECRET_HEADERS:
            errors.append(FieldError(at, f"{header['name']} headers are never kept (docs/recorder-privacy.md)"))
        elif is_secret_header(header["name"]) and header["value"] not in ("", MASK):
            errors.append(FieldError(f"{at}.value", f"{header['name']} is a credential: its value is kept masked"))
    return errors


def is_secret_header(name: str) -> bool:
    """A credential by its name (``X-Auth-Token``, ``X-Api-Key``): the recorder masks its value (lib/har.js)."""
    return not name.strip().startswith(":") and is_secret_parameter(name.strip())


def check_message(message, keys: dict, where: str) -> list[FieldError]:
    """A HAR request or response: its fields, headers without secrets, no cookies."""
    if not isinstance(message, dict):
        return [FieldError(where, "required; expected an object")]
    errors = check_keys(message, keys, where)
    errors += [
        FieldError(f"{where}.{key}", "required; expected a number")
        for key in NUMBER_KEYS
        if not is_number(message.get(key))
    ]
    if isinstance(message.get("headers"), list):
        errors += check_headers(message["headers"], where)
    if message.get("cookies") != []:
        errors.append(FieldError(f"{where}.cookies", "expected [] (cookies are never kept)"))
    return errors


def check_entry(entry, where: str) -> list[FieldError]:
    if not isinstance(entry, dict):
        return [FieldError(where, "expected an object")]
    errors = []
    if not isinstance(entry.get("startedDateTime"), str):
        errors.append(FieldError(f"{where}.startedDateTime", "required; expected an ISO 8601 string"))
    if not is_number(entry.get("time")):
        errors.append(FieldError(f"{where}.time", "required; expected a number"))
    errors += check_message(entry.get("request"), REQUEST_KEYS, f"{where}.request")
    errors += check_message(entry.get("response"), RESPONSE_KEYS, f"{where}.response")
    response = entry.get("response")
    content = response.get("content") if isinstance(response, dict) else None
    if isinstance(content, dict) and not (is_number(content.get("size")) and isinstance(content.get("mimeType"), str)):
        errors.append(FieldError(f"{where}.response.content", "required: size (number) and mimeType (string)"))
    if isinstance(response, dict) and not isinstance(response.get("redirectURL"), str):
        errors.append(FieldError(f"{where}.response.redirectURL", "required; expected a string"))
    if not isinstance(entry.get("cache"), dict):
        errors.append(FieldError(f"{where}.cache", "required; expected an object"))
    timings = entry.get("timings")
    if not isinstance(timings, dict) or not all(is_number(timings.get(key)) for key in ("send", "wait", "receive")):
        errors.append(FieldError(f"{where}.timings", "required: send, wait and receive (numbers)"))
    return errors


def check_har(value) -> list[FieldError]:
    """A HAR 1.2 log (http://www.softwareishard.com/blog/har-12-spec/) as the recorder writes it."""
    log = value.get("log") if isinstance(value, dict) else None
    if not isinstance(log, dict):
        return [FieldError("log", "required; a HAR is an object {log: {version, creator, entries}}")]
    errors = []
    if log.get("version") != "1.2":
        errors.append(FieldError("log.version", 'expected "1.2"'))
    creator = log.get("creator")
    if not isinstance(creator, dict) or not all(isinstance(creator.get(key), str) for key in ("name", "version")):
        errors.append(FieldError("log.creator", "required: name and version (strings)"))
    if not isinstance(log.get("pages", []), list):
        errors.append(FieldError("log.pages", "expected a list"))
    entries = log.get("entries")
    if not isinstance(entries, list):
        return [*errors, FieldError("log.entries", "required; expected a list")]
    for index, entry in enumerate(entries):
        errors += check_entry(entry, f"log.entries[{index}]")
        if len(errors) >= 20:
            break
    return errors


def check_dom_snapshot(value) -> list[FieldError]:
    """``{format, url, timestamp, computedStyles, documents, strings}``: CDP ``DOMSnapshot.captureSnapshot``'s answer
    (``documents``, ``strings``) with the names of the computed styles it was asked for."""
    if not isinstance(value, dict):
        return [FieldError("body", "expected an object {format, url, computedStyles, documents, strings}")]
    errors = []
    if value.get("format") != DOM_SNAPSHOT_FORMAT:
        errors.append(FieldError("format", f"expected {DOM_SNAPSHOT_FORMAT!r}"))
    if not isinstance(value.get("url"), str):
        errors.append(FieldError("url", "required; expected a string"))
    for key in ("computedStyles", "strings"):
        if not isinstance(value.get(key), list) or not all(isinstance(item, str) for item in value[key]):
            errors.append(FieldError(key, "required; expected a list of strings"))
    documents = value.get("documents")
    if not isinstance(documents, list):
        errors.append(FieldError("documents", "required; expected a list"))
    else:
        for index, document in enumerate(documents):
            if not isinstance(document, dict) or not all(
                isinstance(document.get(key), dict) for key in ("nodes", "layout")
            ):
                errors.append(FieldError(f"documents[{index}]", "expected an object with nodes and layout"))
            elif found := password_value(document["nodes"], value.get("strings")):
                # Defence in depth behind the recorder, which keeps no DOM snapshot of a page with private fields.
                message = "a password or credential input's value is never kept (docs/recorder-privacy.md)"
                errors.append(FieldError(f"documents[{index}].nodes.{found}", message))
    return errors


def string_at(strings: list, index) -> str:
    text = strings[index] if isinstance(index, int) and 0 <= index < len(strings) else ""
    return text if isinstance(text, str) else ""  # a non-string is named by check_dom_snapshot, not read here


# An input whose autocomplete ends with one of these holds a credential (recorder_extension/lib/privacy.js).
SENSITIVE_AUTOCOMPLETE = ("current-password", "new-password", "one-time-code", "cc-number", "cc-csc", "cc-exp")
AUTOCOMPLETE_PAIRS = frozenset(
    ("autocomplete", token) for token in (*SENSITIVE_AUTOCOMPLETE, "cc-exp-month", "cc-exp-year")
)


def string_kinds(strings: list) -> dict:
    """The indexes of the strings an attribute check compares with, each string read once (a snapshot may point
    millions of attributes at one long string: per-attribute string work would be quadratic)."""
    kinds = {"type": set(), "autocomplete": set(), "value": set(), "password": set(), "credential": set()}
    for index, text in enumerate(strings):
        if not isinstance(text, str) or len(text) > 256:
            continue
        if (key := text.lower()) in ("type", "autocomplete", "value"):
            kinds[key].add(index)
        tokens = key.split()
        if tokens and tokens[0] == "password":
            kinds["password"].add(index)
        if tokens and ("autocomplete", tokens[-1]) in AUTOCOMPLETE_PAIRS:
            kinds["credential"].add(index)
    return kinds


def is_secret_input(pairs: list, kinds: dict) -> bool:
    """Whether a node's attributes (name and value string indexes) make it a password or credential input."""
    return any(
        (name in kinds["type"] and kind in kinds["password"])
        or (name in kinds["autocomplete"] and kind in kinds["credential"])
        for name, kind in zip(pairs[0::2], pairs[1::2], strict=False)
        if isinstance(name, int) and isinstance(kind, int)
    )


def password_value(nodes: dict, strings: list) -> str | None:
    """Where a password or credential input of the snapshot has a value other than "" or the mask: ``inputValue``
    (CDP's rare string data ``{index: [node], value: [string]}``) or ``attributes`` (its ``value`` attribute); None."""
    attributes = nodes.get("attributes")
    if not isinstance(attributes, list) or not isinstance(strings, list):
        return None
    kinds = string_kinds(strings)
    cleared = {index for index, text in enumerate(strings) if text in ("", MASK)}

    def has_value(text) -> bool:  # a string index (an index out of range: no value)
        return isinstance(text, int) and 0 <= text < len(strings) and text not in cleared

    secret = {
        node for node, pairs in enumerate(attributes) if isinstance(pairs, list) and is_secret_input(pairs, kinds)
    }
    for node in secret:
        pairs = attributes[node]
        for name, text in zip(pairs[0::2], pairs[1::2], strict=False):
            if isinstance(name, int) and name in kinds["value"] and has_value(text):
                return "attributes"
    values = nodes.get("inputValue")
    nodes_with = values.get("index") if isinstance(values, dict) else None
    texts = values.get("value") if isinstance(values, dict) else None
    if not isinstance(nodes_with, list) or not isinstance(texts, list):
        return None
    for node, text in zip(nodes_with, texts, strict=False):
        if isinstance(node, int) and node in secret and has_value(text):
            return "inputValue"
    return None
