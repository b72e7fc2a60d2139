"""Builders of valid recorder payloads: one turn for every WebLINX intent, chat turns, and the blobs turns refer to.

Every builder returns fresh objects, so a test can break one field of a valid payload without touching others.
"""

import hashlib
import io
import json
from dataclasses import dataclass

from PIL import Image

from annotation.lib.schema import INTENTS

URL = "https://www.example.com/search"
UIDS = ("a1b2c3d4", "e5f6a7b8", "c9d0e1f2")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def png_bytes(width: int = 16, height: int = 9, color=(30, 120, 200)) -> bytes:
    """A real, decodable PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg_bytes(width: int = 16, height: int = 9) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 50, 50)).save(buffer, format="JPEG")
    return buffer.getvalue()


def page_html(uids=UIDS, title: str = "Search") -> bytes:
    """Page HTML in which every element carries a ``data-webtasks-id``, as the recorder serialises it."""
    buttons = "".join(f'<button data-webtasks-id="{uid}">Go {i}</button>' for i, uid in enumerate(uids[2:]))
    return (
        f'<html data-webtasks-id="root"><head data-webtasks-id="head"><title data-webtasks-id="t">{title}</title>'
        f'</head><body data-webtasks-id="body"><form data-webtasks-id="{uids[0]}">'
        f'<input data-webtasks-id="{uids[1]}" name="q">{buttons}</form></body></html>'
    ).encode()


def bbox(x: float = 10, y: float = 20, width: float = 100, height: float = 30) -> dict:
    return {
        "x": x,
        "y": y,
        "width": width,
        "height": height,
        "top": y,
        "right": x + width,
        "bottom": y + height,
        "left": x,
    }


def bboxes_json(uids=UIDS) -> bytes:
    """The bboxes file of a page: ``{uid: box}`` for every element."""
    return json.dumps({uid: bbox(x=10 * i) for i, uid in enumerate(uids)}).encode()


@dataclass(frozen=True)
class BlobFile:
    """One blob as the recorder uploads it."""

    data: bytes
    media_type: str

    @property
    def sha256(self) -> str:
        return sha(self.data)


def state_blobs(seed: int = 0) -> dict[str, BlobFile]:
    """The three files captured with a browser turn, keyed by the turn field that refers to them."""
    return {
        "screenshot": BlobFile(png_bytes(color=(seed % 256, 120, 200)), "image/png"),
        "page": BlobFile(page_html(title=f"Search {seed}"), "text/html"),
        "bboxes": BlobFile(bboxes_json(), "application/json"),
    }


def state_refs(blobs: dict[str, BlobFile]) -> dict[str, str]:
    """The ``screenshot`` / ``page`` / ``bboxes`` fields of a turn referring to ``blobs``."""
    return {field: blob.sha256 for field, blob in blobs.items()}


def metadata(url: str = URL, tab_id: int = 1) -> dict:
    return {
        "mouseX": 250,
        "mouseY": 120,
        "tabId": tab_id,
        "url": url,
        "viewportWidth": 1280,
        "viewportHeight": 720,
        "zoomLevel": 1.0,
    }


def element(uid: str = UIDS[1], tag: str = "INPUT") -> dict:
    return {
        "attributes": {"data-webtasks-id": uid, "name": "q", "class": "search"},
        "bbox": bbox(),
        "tagName": tag,
        "textContent": "",
        "innerHTML": "",
        "outerHTML": f'<{tag.lower()} data-webtasks-id="{uid}" name="q">',
        "xpath": "/html/body/form/input",
    }


def mouse_properties() -> dict:
    return {"x": 250, "y": 120, "clientX": 250, "clientY": 120, "button": 0, "buttons": 1}


def intent_arguments(intent: str) -> dict:
    """Valid WebLINX ``arguments`` for ``intent``: metadata plus what that intent needs."""
    specific = {
        "click": {"properties": mouse_properties(), "element": element(tag="BUTTON")},
        "hover": {"properties": mouse_properties(), "element": element(tag="A")},
        "textInput": {"text": "weather in Montreal", "element": element()},
        "change": {"value": "fr-CA", "element": element(tag="SELECT")},
        "submit": {"element": element(UIDS[0], tag="FORM")},
        "copy": {"selected": "Montreal, QC", "element": element(tag="P")},
        "paste": {"pasted": "Montreal, QC", "element": element()},
        "load": {
            "properties": {
                "url": "https://www.example.com/results?q=weather",
                "transitionType": "link",
                "transitionQualifiers": ["from_address_bar"],
                "tabId": 1,
            }
        },
        "scroll": {"scrollX": 0, "scrollY": 300.5},
        "tabcreate": {"properties": {"tabId": 2}},
        "tabremove": {"properties": {"tabId": 2}},
        "tabswitch": {"properties": {"tabId": 1, "tabIdOrigin": 2}},
    }[intent]
    return {"metadata": metadata(), **specific}


def browser_turn(client_id: str, intent: str = "click", timestamp: float = 1.5, **fields) -> dict:
    """A valid browser turn; ``fields`` adds or overrides top-level fields (e.g. blob references)."""
    turn = {
        "client_id": client_id,
        "type": "browser",
        "timestamp": timestamp,
        "intent": intent,
        "arguments": intent_arguments(intent),
    }
    return {**turn, **fields}


def step_turn(client_id: str, timestamp: float = 1.5, **fields) -> dict:
    """A step-mode click (``properties.stepOp``): the server keeps its ``har`` whatever the project's
    ``record_traffic`` (docs/recorder.md#raw-dump)."""
    turn = browser_turn(client_id, "click", timestamp, **fields)
    turn["arguments"]["properties"]["stepOp"] = "CLICK"
    return turn


def chat_turn(client_id: str, speaker: str = "instructor", timestamp: float = 0.5, **fields) -> dict:
    turn = {
        "client_id": client_id,
        "type": "chat",
        "timestamp": timestamp,
        "speaker": speaker,
        "utterance": f"{speaker} says: find the weather in Montreal",
    }
    return {**turn, **fields}


def session_turns(refs: dict[str, str] | None = None) -> list[dict]:
    """A whole session: chat from both speakers, then one browser turn per intent (each with ``refs``)."""
    turns = [chat_turn("chat-0", "instructor", 0.25), chat_turn("chat-1", "navigator", 0.75)]
    for i, intent in enumerate(INTENTS):
        turns.append(browser_turn(f"{intent}-{i}", intent, 1.0 + i, **(refs or {})))
    return turns


def numbered_turns(count: int, refs: dict[str, str] | None = None, prefix: str = "t") -> list[dict]:
    """``count`` click turns with distinct client ids and increasing timestamps."""
    return [browser_turn(f"{prefix}-{i}", "click", 1.0 + i, **(refs or {})) for i in range(count)]


# The start of what Chrome's pageCapture.saveAsMHTML writes.
MHTML = (
    b"From: <Saved by Blink>\r\nSnapshot-Content-Location: http://127.0.0.1/\r\nSubject: Page\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n\ttype="text/html";\r\n'
    b'\tboundary="----MultipartBoundary--x----"\r\n\r\n------MultipartBoundary--x----\r\n'
    b"Content-Type: text/html\r\n\r\n<html></html>\r\n------MultipartBoundary--x------\r\n"
)


class Collected:
    """A binary output that keeps what is written to it (an archive or gzip stream under test)."""

    def __init__(self):
        self.data = bytearray()

    def write(self, data) -> int:
        self.data += data
        return len(data)
