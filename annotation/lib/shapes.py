"""Reading stored turns defensively (pure: no Django).

Ingest validates every shape the review page, exporters and metrics read (``annotation.lib.schema``), but rows stored
before a rule existed (legacy data) may hold anything JSON can: an ``element`` that is a string, a ``bbox`` of
strings, ``attributes`` that are a list. These accessors return the expected type or an empty stand-in, so one odd
row shows as blank on the review page instead of a 500 for everyone.
"""

import math

UID_ATTRIBUTE = "data-webtasks-id"
BOX_KEYS = ("x", "y", "width", "height")


def as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def as_text(value) -> str:
    return value if isinstance(value, str) else ""


def element_of(arguments) -> dict:
    """The acted element of a turn's arguments, ``{}`` when absent or not an object."""
    return as_dict(as_dict(arguments).get("element"))


def uid_of(element) -> str | None:
    """The element's ``data-webtasks-id``, None unless it is a non-empty string."""
    uid = as_dict(as_dict(element).get("attributes")).get(UID_ATTRIBUTE)
    return uid if isinstance(uid, str) and uid else None


def is_finite_number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def box_of(value) -> dict | None:
    """A box (``{x, y, width, height, ...}``) whose x, y, width and height are finite numbers, else None."""
    if not isinstance(value, dict) or not all(is_finite_number(value.get(key)) for key in BOX_KEYS):
        return None
    return value


def frames_of(frames) -> list[dict]:
    """The turn's frames that are objects naming a screenshot."""
    if not isinstance(frames, list):
        return []
    return [frame for frame in frames if isinstance(frame, dict) and isinstance(frame.get("screenshot"), str)]


def box_uids(bboxes) -> set:
    """The uids of a parsed bboxes blob, empty when it is not an object."""
    return set(bboxes) if isinstance(bboxes, dict) else set()
