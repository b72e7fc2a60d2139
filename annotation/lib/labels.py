"""What review names a browser action by (pure: no Django): ``action_label``.

The recorder sends a label with each action it takes on an element (``recorder_extension/lib/events.js``
``actionLabel``: the element's accessible name, with its ``<label>`` and ``aria-labelledby`` text, read on the page).
Turns recorded before that, or by older recorders, get one derived from the element as WebLINX stores it (its
attributes and HTML; the page around it is not read): ``aria-label``, a button's or link's text, ``alt``,
``placeholder``, ``title``, then ``name`` or ``id`` made readable. A field's value is never its name; a select's
change adds the chosen option's text, a submit names the form or its submit button. The recorder masked private
elements before storing them, so what is derived from the stored element holds no private value.
"""

import re

import lxml.html
from lxml import etree

from .shapes import as_dict, as_text, element_of

LABEL_MAX = 80
PRIVATE_LABEL = "(private)"
PRIVATE_ATTRIBUTE = "data-private"
BUTTON_TYPES = frozenset({"submit", "button", "reset", "image"})


def clean(text: str) -> str:
    """Whitespace collapsed, at most LABEL_MAX characters (an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= LABEL_MAX else flat[: LABEL_MAX - 1] + "…"


def readable(name: str) -> str:
    """``first_name``, ``firstName`` → ``first name``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return re.sub(r"[_\-.\[\]]+", " ", spaced).strip().lower()


def input_type(attributes: dict) -> str:
    return as_text(attributes.get("type")).strip().lower() or "text"


def is_field(tag: str, attributes: dict) -> bool:
    if tag == "input":
        return input_type(attributes) not in BUTTON_TYPES
    editable = attributes.get("contenteditable")
    return tag in ("textarea", "select") or (isinstance(editable, str) and editable.lower() != "false")


def element_name(tag: str, attributes: dict, text: str) -> str:
    """The stored element's name: the module docstring's order, never a field's value or text."""
    field = is_field(tag, attributes)
    candidates = (
        attributes.get("aria-label"),
        attributes.get("value") if tag == "input" and not field else "",
        "" if field else text,
        attributes.get("alt"),
        attributes.get("placeholder") or attributes.get("aria-placeholder"),
        attributes.get("title"),
        readable(as_text(attributes.get("name")) or as_text(attributes.get("id"))),
    )
    return next((name for name in (clean(as_text(candidate)) for candidate in candidates) if name), "")


def parsed(html: str):
    """The element's stored HTML as a tree, or None when there is none or it does not parse."""
    try:
        return lxml.html.fragment_fromstring(html, create_parent="div") if html.strip() else None
    except (etree.ParserError, ValueError):
        return None


def chosen_options(html: str, value) -> str:
    """The text of a select's options whose value is in the change's ``value`` (several joined by ",")."""
    tree = parsed(html)
    if tree is None or not isinstance(value, str) or not value:
        return ""
    wanted = set(value.split(","))
    texts = [
        option.text_content()
        for option in tree.iter("option")
        if option.get("value", option.text_content().strip()) in wanted
    ]
    return clean(", ".join(texts))


def submit_button(html: str):
    """The first submit button of a form's stored HTML (a button's default type is submit), or None."""
    tree = parsed(html)
    for control in tree.iter("button", "input") if tree is not None else ():
        kind = (control.get("type") or ("submit" if control.tag == "button" else "text")).lower()
        if kind in ("submit", "image"):
            return control
    return None


def form_label(element: dict, attributes: dict) -> str:
    """A submit: the form's own name, else its submit button's, else the form's name or id made readable."""
    own = clean(as_text(attributes.get("aria-label"))) or clean(as_text(attributes.get("title")))
    if own:
        return own
    button = submit_button(as_text(element.get("outerHTML")))
    if button is not None:
        name = element_name(button.tag, dict(button.attrib), button.text_content())
        if name:
            return name
    return clean(readable(as_text(attributes.get("name")) or as_text(attributes.get("id"))))


def action_label(intent: str, arguments, recorded: str = "") -> str:
    """What review names the action by: the recorder's label when it sent one, else one derived from the stored
    element (the module docstring); "" for an action without an element."""
    if recorded:
        return clean(recorded)
    element = element_of(arguments)
    if not element:
        return ""
    attributes = as_dict(element.get("attributes"))
    if PRIVATE_ATTRIBUTE in attributes:
        return PRIVATE_LABEL
    tag = as_text(element.get("tagName")).lower()
    if tag == "form":
        return form_label(element, attributes)
    name = element_name(tag, attributes, as_text(element.get("textContent")))
    if tag != "select" or intent != "change":
        return name
    chosen = chosen_options(as_text(element.get("outerHTML")), as_dict(arguments).get("value"))
    return clean(f"{name}: {chosen}" if name and chosen else name or chosen)
