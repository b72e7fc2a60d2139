"""One step's page as Mind2Web shows it: ``raw_html``, the candidate elements and ``cleaned_html``.

A ``Snapshot`` parses the page the step was taken on once (lxml), numbers every element in document order
(``backend_node_id``), gives it its box in page coordinates (``bounding_box_rect``) and keeps only the salient
attributes. Everything of the step is then read off that one tree, in this order: the acted element and its
acceptable elements (the positives), ``raw_html`` (with the acted element marked), the candidates, and last
``cleaned_html``, which is made by pruning the same tree in place (so it must come last).

Both HTML strings are serialised as XML: the Mind2Web code reads them with ``lxml.etree.fromstring``. Elements
that are empty get an explicit end tag (``<div></div>``, not ``<div/>``) so that HTML parsers read them right too.
"""

import math
import re
from json.encoder import encode_basestring

import lxml.html.defs
from lxml import etree

UID_ATTRIBUTE = "data-webtasks-id"  # the recorder's join key between turn, page and bboxes
TARGET_ATTRIBUTE = "data_pw_testid_buckeye"
NO_RECT = "-1,-1,-1,-1"
SALIENT_ATTRIBUTES = frozenset(
    {
        "alt",
        "aria_description",
        "aria_label",
        "aria_role",
        "input_checked",
        "input_value",
        "label",
        "name",
        "option_selected",
        "placeholder",
        "role",
        "text_value",
        "title",
        "type",
        "value",
        "class",
        "id",
        "is_clickable",
    }
)
# HTML boolean attributes that carry state Mind2Web names with its own synthetic attributes.
STATE_ATTRIBUTES = {"checked": "input_checked", "selected": "option_selected"}
REMOVED_TAGS = ("script", "style", "meta")  # comments and processing instructions go at parse time
VOID_TAGS = frozenset(lxml.html.defs.empty_tags)
# ``select`` is not in the spec's list of tags but is interactive by its implicit ARIA role (combobox/listbox).
CLICKABLE_TAGS = frozenset({"a", "button", "input", "label", "textarea", "li", "td", "img", "svg", "select"})
INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "checkbox",
        "combobox",
        "gridcell",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    }
)
UNRENDERED_ROLES = frozenset({"presentation", "none"})
LIST_ITEMS = ("option", "optgroup")  # unwrapped, never dropped: their text is what a SELECT chooses from
NON_WORD = re.compile(r"\W")
XML_TAG = re.compile(r"[A-Za-z_][\w.-]*\Z")
# Characters XML 1.0 forbids; HTML tolerates some (form feed), and one would make the output unreadable.
XML_INVALID = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
SPACES = re.compile(r"\s+")

_attribute_names: dict[str, str] = {}


def attribute_name(key: str) -> str:
    """Mind2Web's spelling of an attribute name: non-word characters become ``_`` (``aria-label`` → ``aria_label``)."""
    name = _attribute_names.get(key)
    if name is None:
        name = _attribute_names[key] = NON_WORD.sub("_", key)
    return name


def salient_attributes(attrib) -> list[tuple[str, str]]:
    """The attributes Mind2Web keeps, renamed; ``checked``/``selected`` become ``input_checked``/``option_selected``."""
    kept = []
    for key, value in attrib.items():
        name = attribute_name(key)
        if name in SALIENT_ATTRIBUTES:
            kept.append((name, value))
        elif name in STATE_ATTRIBUTES:
            kept.append((STATE_ATTRIBUTES[name], "true"))
    return kept


def attributes_json(items) -> str:
    """``json.dumps(dict(items), ensure_ascii=False)`` without the target mark, built directly: it runs for every
    candidate of every step, and json.dumps costs more in call overhead than in encoding."""
    pairs = [f"{encode_basestring(key)}: {encode_basestring(value)}" for key, value in items if key != TARGET_ATTRIBUTE]
    return "{" + ", ".join(pairs) + "}"


def text_of(element) -> str:
    """An element's text, white space squeezed; its text nodes are joined by a space (words of separate blocks
    would otherwise run together)."""
    return " ".join(" ".join(element.itertext()).split())


def css_px(value) -> str:
    """A coordinate as Mind2Web writes it: ``12`` for whole pixels, ``607.390625`` otherwise."""
    if type(value) is int:  # most boxes are whole pixels: skip the float work (this runs for every element)
        return str(value)
    value = round(value, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    return str(int(value)) if value.is_integer() else repr(value)


def box_rect(box) -> str:
    if box is None:
        return NO_RECT
    return f"{css_px(box[0])},{css_px(box[1])},{css_px(box[2])},{css_px(box[3])}"


def read_box(raw) -> tuple | None:
    """``(x, y, width, height)`` of a recorder box (client coordinates), or None when absent or malformed."""
    try:
        box = (raw["x"], raw["y"], raw["width"], raw["height"])
    except (KeyError, TypeError):
        return None
    for value in box:
        if type(value) not in (int, float):  # bool, str, None: malformed
            return None
    return box if math.isfinite(box[0] + box[1] + box[2] + box[3]) else None


def visible(box) -> bool:
    return box is not None and box[2] > 0 and box[3] > 0


def contains_point(box, x: float, y: float) -> bool:
    return box is not None and box[0] <= x <= box[0] + box[2] and box[1] <= y <= box[1] + box[3]


def inside(inner, outer) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def squeeze(text: str | None) -> str | None:
    """Runs of white space as one space; None for text that is only white space (an empty text node)."""
    if not text:
        return None
    text = SPACES.sub(" ", text)
    return None if text == " " else text


def xml_tag(tag: str) -> str:
    """A tag name XML accepts (``o:p`` of pasted Word HTML has an undeclared prefix): other characters become ``_``."""
    if XML_TAG.match(tag):
        return tag
    tag = NON_WORD.sub("_", tag)
    return tag if XML_TAG.match(tag) else f"_{tag}"


def parse(page: bytes):
    """The page's root element: comments, processing instructions, scripts, styles and meta removed.

    Plain ``etree`` elements, not ``lxml.html`` ones: their ``set`` is a Python override, and it runs thousands
    of times per page."""
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    root = etree.fromstring(XML_INVALID.sub(b"", page) or b"<html></html>", parser)
    if root is None:  # nothing but white space or comments
        root = etree.fromstring(b"<html></html>", parser)
    etree.strip_elements(root, *REMOVED_TAGS, with_tail=False)
    return root


def serialize(root) -> str:
    return etree.tostring(root, encoding="unicode")


def append_text(parent, previous, text: str) -> None:
    """Add text where it follows ``previous`` (None: at the start of ``parent``)."""
    if previous is None:
        parent.text = (parent.text or "") + text
    else:
        previous.tail = (previous.tail or "") + text


def drop_tree(element) -> None:
    """Remove ``element`` and everything in it, keeping the text that follows it."""
    parent = element.getparent()
    if element.tail:
        append_text(parent, element.getprevious(), element.tail)
    parent.remove(element)


def unwrap(element) -> None:
    """Replace ``element`` by its content; the spaces keep the words of neighbouring blocks apart."""
    parent, previous = element.getparent(), element.getprevious()
    append_text(parent, previous, f" {element.text or ''}")
    tail = f" {element.tail or ''}"
    if len(element):
        element[-1].tail = (element[-1].tail or "") + tail
    else:
        append_text(parent, previous, tail)
    index = parent.index(element)
    parent[index : index + 1] = list(element)


class Snapshot:
    """A step's page parsed once: elements numbered in document order, boxed and reduced to salient attributes.

    ``boxes`` (uid → recorder box, client coordinates) are moved to page coordinates by the box of the root
    element, whose client position is minus the scroll offset. An element without a box has ``None``.
    """

    def __init__(self, page: bytes, boxes: dict):
        self.root = parse(page)
        self.origin = self.page_origin(boxes)
        self.elements = list(self.root.iter(etree.Element))
        self.position = {element: index for index, element in enumerate(self.elements)}
        self.boxes, self.by_uid = [], {}
        for index, element in enumerate(self.elements):
            uid = element.get(UID_ATTRIBUTE)
            if uid is not None:
                self.by_uid.setdefault(uid, index)
            self.boxes.append(self.page_box(boxes.get(uid) if uid is not None else None))
            self.annotate(index)

    def page_origin(self, boxes: dict) -> tuple:
        root_box = read_box(boxes.get(self.root.get(UID_ATTRIBUTE) or ""))
        return (root_box[0], root_box[1]) if root_box else (0, 0)

    def page_box(self, raw) -> tuple | None:
        box = read_box(raw)
        return None if box is None else (box[0] - self.origin[0], box[1] - self.origin[1], box[2], box[3])

    def annotate(self, index: int) -> None:
        """Salient attributes only, after the two synthetic ones; an XML-safe tag; an end tag when empty."""
        element = self.elements[index]
        kept = salient_attributes(element.attrib)
        element.attrib.clear()
        element.set("backend_node_id", self.node_id(index))
        element.set("bounding_box_rect", box_rect(self.boxes[index]))
        for name, value in kept:
            element.set(name, value)
        if not XML_TAG.match(element.tag):
            element.tag = xml_tag(element.tag)
        if element.text is None and len(element) == 0 and element.tag not in VOID_TAGS:
            element.text = ""

    @staticmethod
    def node_id(index: int) -> str:
        return str(index + 1)  # from 1, as the browser's backend node ids

    def element_of(self, uid: str | None) -> int | None:
        return self.by_uid.get(uid) if uid is not None else None

    def first_in_body(self) -> int | None:
        """The first element inside ``body``: the acted element of a stand-in page built from its outerHTML."""
        body = self.root.find("body")
        first = next(body.iterchildren(etree.Element), None) if body is not None else None
        return self.position[first] if first is not None else None

    def set_box(self, index: int, raw) -> None:
        """Give an element the turn's own box when the bboxes file has none for it."""
        self.boxes[index] = self.page_box(raw)
        self.elements[index].set("bounding_box_rect", box_rect(self.boxes[index]))

    # --- Acceptable elements ------------------------------------------------------------------------------

    def clickable(self, element) -> bool:
        flag = element.get("is_clickable")
        if element.tag in CLICKABLE_TAGS or (flag is not None and flag.lower() != "false"):
            return True
        return (element.get("role") or element.get("aria_role") or "").lower() in INTERACTIVE_ROLES

    def top_level(self, target: int) -> int:
        """The nearest clickable ancestor of the target (itself included) whose box holds the target's centre."""
        box = self.boxes[target]
        if box is None:
            return target
        x, y = box[0] + box[2] / 2, box[1] + box[3] / 2
        element = self.elements[target]
        while element is not None:
            index = self.position[element]
            if self.clickable(element) and contains_point(self.boxes[index], x, y):
                return index
            element = element.getparent()
        return target  # nothing clickable holds it: the acted element alone is the top-level target

    def positives(self, target: int) -> tuple[int, list[int]]:
        """``(top-level target, positives)`` in document order: the top-level target, the acted element, and the
        visible element descendants of the top-level target whose boxes lie inside the acted element's box
        (what a click on the acted element could as well have landed on)."""
        top, box = self.top_level(target), self.boxes[target]
        chosen = {top, target}
        if box is not None:
            for element in self.elements[top].iterdescendants(etree.Element):
                index = self.position[element]
                if visible(self.boxes[index]) and inside(self.boxes[index], box):
                    chosen.add(index)
        return top, sorted(chosen)

    # --- Candidates ---------------------------------------------------------------------------------------

    def is_candidate(self, index: int) -> bool:
        """A visible element a model could act on; presentational roles and hidden inputs are not."""
        element = self.elements[index]
        if not visible(self.boxes[index]):
            return False
        if (element.get("role") or "").lower() in UNRENDERED_ROLES:
            return False
        return (element.get("type") or "").lower() != "hidden"

    def candidates(self, positives) -> list[int]:
        """Every candidate in document order: the root (so cleaned_html stays one tree), the visible ones, the
        positives."""
        chosen = set(positives)
        return [i for i in range(len(self.elements)) if i == 0 or i in chosen or self.is_candidate(i)]

    def candidate(self, index: int, flags: dict | None = None) -> dict:
        """A pos/neg candidate entry; ``attributes`` is the JSON string of its attributes (never the target mark)."""
        element = self.elements[index]
        entry = {"tag": element.tag, "backend_node_id": element.get("backend_node_id"), **(flags or {})}
        entry["attributes"] = attributes_json(element.attrib.items())
        return entry

    # --- HTML ---------------------------------------------------------------------------------------------

    def mark_target(self, index: int, action_uid: str) -> None:
        self.elements[index].set(TARGET_ATTRIBUTE, action_uid)

    def raw_html(self) -> str:
        return serialize(self.root)

    def ancestors(self, indexes) -> set[int]:
        """Every element that has one of ``indexes`` below it."""
        found = set()
        for index in indexes:
            parent = self.elements[index].getparent()
            while parent is not None and self.position[parent] not in found:
                found.add(self.position[parent])
                parent = parent.getparent()
        return found

    def cleaned_html(self, candidates) -> str:
        """The tree pruned to the candidates (this consumes the tree: call it last).

        Non-candidates are unwrapped (their content moves up) when a candidate lies below them, when their box is
        unknown (their text may be visible) or when they are options; the rest renders nothing and goes with its
        subtree. Candidates keep ``backend_node_id`` and the salient attributes.
        """
        kept = set(candidates)
        above = self.ancestors(kept)
        for index in range(len(self.elements) - 1, 0, -1):  # children first; the root is always a candidate
            element = self.elements[index]
            if index in kept:
                self.strip_synthetic(element)
            elif index in above or self.boxes[index] is None or element.tag in LIST_ITEMS:
                unwrap(element)
            else:
                drop_tree(element)
        self.strip_synthetic(self.root)
        self.tidy_text()
        return serialize(self.root)

    @staticmethod
    def strip_synthetic(element) -> None:
        element.attrib.pop("bounding_box_rect", None)
        element.attrib.pop(TARGET_ATTRIBUTE, None)

    def tidy_text(self) -> None:
        """Drop empty text nodes and squeeze white space; keep an end tag on every empty non-void element."""
        for element in self.root.iter(etree.Element):
            element.text, element.tail = squeeze(element.text), squeeze(element.tail)
            if element.text is None and len(element) == 0 and element.tag not in VOID_TAGS:
                element.text = ""
        self.root.tail = None

    # --- What a step says about its element ---------------------------------------------------------------

    def text_of(self, index: int) -> str:
        return text_of(self.elements[index])

    def option_text(self, index: int, value: str) -> str:
        """The text of the option of a <select> whose value (or text) is ``value``; ``value`` when none matches."""
        options = [(option.get("value"), text_of(option)) for option in self.elements[index].iter("option")]
        for option_value, text in options:
            if option_value == value and text:
                return text
        for _, text in options:
            if text.lower() == value.strip().lower():
                return text
        return value
