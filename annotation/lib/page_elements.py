"""The elements of a turn's recorded page (pure): those carrying a ``data-webtasks-id`` with a box, as review's
target picker lists them, and one of them described as the recorder describes an acted element (the extension's
``lib/dom.js`` ``elementInfo``: attributes with the uid, bbox, tagName, textContent, outerHTML, xpath), so a target
chosen in review is exported as a recorded one is.

The page and boxes are what the recorder (or a release import, unmasked) stored; nothing is added to them. The
element described is masked as ingest masks a recorded one (``redact``: secret URL parameters, secret-named values).
"""

import copy

from lxml import etree

from .redact import FIELD_VALUES, MASK, is_secret_parameter, mask_arguments
from .shapes import UID_ATTRIBUTE, as_dict, box_of

TEXT_CONTENT_MAX = 10000  # the recorder's caps (lib/dom.js, lib/constants.js OUTER_HTML_MAX)
OUTER_HTML_MAX = 2000
LISTED_TEXT = 80  # the picker shows the start of an element's text
LISTED_STEPS = 200  # of which it reads at most this many text pieces and empty elements
MAX_LISTED = 5000  # a page's elements listed at most (a large page has a few thousand)
SKIPPED_TEXT = ("script", "style", "noscript", "template")


def parse_page(html: bytes):
    """The page's root element, or None when it cannot be read as HTML."""
    if not html or not html.strip():
        return None
    try:
        return etree.fromstring(html, etree.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError):
        return None


def with_uid(root) -> dict:
    """``{uid: element}`` of the page's elements carrying a uid (the first of each uid)."""
    found = {}
    for node in root.iter(etree.Element):
        uid = node.get(UID_ATTRIBUTE)
        if uid and uid not in found:
            found[uid] = node
    return found


def text_pieces(node):
    """The element's text pieces in document order (its text, its descendants' and their tails), without those
    inside scripts and styles: a walk with its own stack, as deep as the page."""
    if node.text:
        yield node.text
    stack, open_children = [iter(node)], []
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            if open_children and (tail := open_children.pop().tail):
                yield tail
        elif isinstance(child.tag, str) and child.tag.lower() not in SKIPPED_TEXT:
            if child.text:
                yield child.text
            stack.append(iter(child))
            open_children.append(child)
        elif child.tail:
            yield child.tail
        else:
            yield ""  # a step with no text: counted against ``steps``


def text_of(node, limit: int = TEXT_CONTENT_MAX, steps: int | None = None) -> str:
    """The element's text without scripts and styles, trimmed and capped at ``limit`` as the recorder's
    ``textContent``; read only until ``limit`` characters are certain (and at most ``steps`` pieces, when given), so
    no element costs more than its first part: a page's elements nest, and each listed one would otherwise read all
    its descendants again."""
    parts, size = [], 0
    for step, piece in enumerate(text_pieces(node)):
        if steps is not None and step >= steps:
            break
        if not parts and not piece.strip():
            continue  # leading whitespace, trimmed anyway
        parts.append(piece.lstrip() if not parts else piece)
        if piece.strip() and size + len(parts[-1].rstrip()) > limit:  # a visible character past the limit
            return "".join(parts)[:limit]
        size += len(parts[-1])
    return "".join(parts).rstrip()[:limit]


def full_box(box: dict) -> dict:
    """A WebLINX box: x, y, width, height and top, right, bottom, left."""
    x, y, width, height = (box[key] for key in ("x", "y", "width", "height"))
    return {
        "x": x,
        "y": y,
        "width": width,
        "height": height,
        "top": box.get("top", y),
        "right": box.get("right", x + width),
        "bottom": box.get("bottom", y + height),
        "left": box.get("left", x),
    }


def page_elements(html: bytes, boxes) -> list[dict]:
    """The page's elements with a uid and a box, in document order: ``[{"uid", "tag", "text", "box"}]``."""
    root = parse_page(html)
    if root is None:
        return []
    boxes = as_dict(boxes)
    listed = []
    for uid, node in with_uid(root).items():
        box = box_of(boxes.get(uid))
        if box is None or not isinstance(node.tag, str):
            continue
        text = " ".join(text_of(node, 2 * LISTED_TEXT, LISTED_STEPS).split())
        listed.append({"uid": uid, "tag": node.tag.lower(), "text": text[:LISTED_TEXT], "box": full_box(box)})
        if len(listed) >= MAX_LISTED:
            break
    return listed


def element_on_page(html: bytes, boxes, uid: str) -> dict | None:
    """The element ``uid`` of the page as the recorder describes an acted element, or None when the page has no
    such element with a box."""
    root = parse_page(html)
    box = box_of(as_dict(boxes).get(uid))
    node = with_uid(root).get(uid) if root is not None else None
    if node is None or box is None or not isinstance(node.tag, str):
        return None
    xpath = node.getroottree().getpath(node)
    node = without_secret_values(node)
    attributes = {str(name): str(value) for name, value in node.attrib.items()}
    outer = etree.tostring(node, encoding="unicode", method="html", with_tail=False)
    element = {
        "attributes": {**attributes, UID_ATTRIBUTE: uid},
        "bbox": full_box(box),
        "tagName": node.tag.upper(),
        "textContent": text_of(node),
        "outerHTML": outer[:OUTER_HTML_MAX],
        "xpath": xpath,
    }
    mask_arguments(element, "arguments.element")  # as ingest masks a recorded element: secret URL parameters
    return element


def without_secret_values(node):
    """The element, or a copy of it whose ``value`` and ``content`` are the mask when its ``name`` marks a secret
    (ingest's rule for a recorded element's attributes, here for its outerHTML too)."""
    name = node.get("name")
    if not name or not is_secret_parameter(name) or all(node.get(key) in (None, "", MASK) for key in FIELD_VALUES):
        return node
    node = copy.deepcopy(node)  # a field or a meta: small
    for key in FIELD_VALUES:
        if node.get(key) not in (None, "", MASK):
            node.set(key, MASK)
    return node
