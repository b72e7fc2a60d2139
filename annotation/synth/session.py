"""A simulated recording session: a navigator acting in browser tabs while chatting with an instructor."""

import datetime as dt
import hashlib
import json
import random
import uuid
from dataclasses import dataclass

from ..lib.schema import ELEMENT_INTENTS
from .pages import VIEWPORT, Page, PageBuilder, screenshot
from .sites import INSTRUCTOR_LINES, NAVIGATOR_LINES, SITES, Site

PAGE_INTENTS = (*ELEMENT_INTENTS, "scroll")


@dataclass
class Tab:
    """A browser tab: the site it shows, its URL (None until something loads) and scroll position."""

    id: int
    site: Site
    url: str | None = None
    scroll: int = 0


class Session:
    """One simulated recording: a navigator acting in the browser while chatting with an instructor."""

    def __init__(self, rng: random.Random, site: Site, elements: int, start: dt.datetime, frames: bool = False):
        self.rng, self.site, self.elements, self.start = rng, site, elements, start
        # Other frames per captured action draw from their own generator: the demo is the same with or without.
        self.frames = random.Random(f"frames/{start.isoformat()}/{site.domain}") if frames else None
        self.turns, self.blobs, self.pages, self.values, self.websites = [], {}, {}, {}, []
        first = rng.randint(100, 1500)  # Chrome's tab ids are small positive integers
        self.tabs, self.first_tab = {first: Tab(first, site)}, first
        self.tab = self.tabs[first]
        self.clock, self.clipboard, self.mouse = None, "", (0, 0)

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def timestamp(self, low: float, high: float) -> float:
        """Seconds since the recording started: 0.0 for the first turn, then strictly increasing."""
        self.clock = 0.0 if self.clock is None else round(self.clock + self.rng.uniform(low, high), 3)
        return self.clock

    def chat(self, speaker: str, utterance: str | None = None) -> None:
        if utterance is None:
            lines = INSTRUCTOR_LINES if speaker == "instructor" else NAVIGATOR_LINES
            utterance = self.rng.choice(lines).format(
                noun=self.rng.choice(self.site.nouns), n=self.rng.randint(2, 40), price=f"${self.rng.randint(9, 300)}"
            )
        turn = {"client_id": self.new_id(), "type": "chat", "timestamp": self.timestamp(2.0, 12.0)}
        self.turns.append({**turn, "speaker": speaker, "utterance": utterance})

    def browser(self, intent: str) -> str:
        """Perform ``intent`` (or what must come first: a load on an empty tab, a second tab); return what was done."""
        if intent in PAGE_INTENTS and self.tab.url is None:
            intent = "load"
        if intent in ("tabswitch", "tabremove") and len(self.tabs) == 1:
            intent = "tabcreate"
        turn = {"client_id": self.new_id(), "type": "browser", "timestamp": self.timestamp(0.4, 6.0)}
        self.mouse = (self.rng.randint(0, VIEWPORT[0] - 1), self.rng.randint(0, VIEWPORT[1] - 1))
        arguments, element = getattr(self, f"do_{intent.lower()}")()
        arguments = {"metadata": self.metadata(), **arguments}
        if intent not in ("tabcreate", "tabremove") and self.tab.url is not None:
            turn.update(self.capture(turn["timestamp"], arguments, element))
        self.turns.append({**turn, "intent": intent, "arguments": arguments})
        return intent

    def metadata(self) -> dict:
        return {
            "mouseX": self.mouse[0],
            "mouseY": self.mouse[1],
            "tabId": self.tab.id,
            "url": self.tab.url or "chrome://newtab/",
            "viewportWidth": VIEWPORT[0],
            "viewportHeight": VIEWPORT[1],
            "zoomLevel": 1.0,
        }

    def page(self) -> Page:
        """The current tab's page; built on the first visit of a URL, so its uids stay stable in the demo."""
        url = self.tab.url
        if url not in self.pages:
            self.pages[url] = PageBuilder(self.rng, self.tab.site, url, self.elements).build()
        return self.pages[url]

    def capture(self, timestamp: float, arguments: dict, element: int | None) -> dict:
        """Screenshot, page and bboxes of the current tab, stored as blobs; fills in the acted element."""
        page, scroll, values = self.page(), self.tab.scroll, self.values.setdefault(self.tab.url, {})
        clock = (self.start + dt.timedelta(seconds=timestamp)).strftime("%H:%M:%S")
        live = f"Updated {clock}, {self.rng.randint(2, 900)} viewing"
        boxes = page.bboxes(scroll)
        if element is not None:
            arguments["element"] = page.element(element, boxes[page.nodes[element].uid], values, live)
        captured = {
            "screenshot": self.store(screenshot(page, scroll, values, live), "image/png"),
            "page": self.store(page.html(values, live).encode(), "text/html"),
            "bboxes": self.store(json.dumps(boxes, separators=(",", ":")).encode(), "application/json"),
        }
        if self.frames is not None:
            captured["frames"] = self.other_frames(page, timestamp, scroll, values)
        return captured

    def other_frames(self, page: Page, timestamp: float, scroll: int, values: dict) -> list:
        """Two more frames of the tab, as the recorder keeps around an action: a moment before (scrolled a little
        elsewhere) and after (the page's live line moved on); re-alignment picks among them and the screenshot."""
        rng, found = self.frames, []
        for label, delta, shift in (("before", -rng.uniform(0.2, 0.6), rng.choice((-160, 120))), ("after", 0.3, 0)):
            at = max(0.0, round(timestamp + delta, 3))
            clock = (self.start + dt.timedelta(seconds=at)).strftime("%H:%M:%S")
            live = f"Updated {clock}, {rng.randint(2, 900)} viewing"
            image = screenshot(page, max(0, scroll + shift), values, live)
            found.append({"screenshot": self.store(image, "image/png"), "timestamp": at, "label": label})
        return found

    def store(self, data: bytes, media_type: str) -> str:
        sha = hashlib.sha256(data).hexdigest()
        self.blobs.setdefault(sha, (data, media_type))
        return sha

    def pick(self, kind: str) -> int:
        """An element of ``kind``, usually one on screen; scrolls to it when it is not."""
        page, tab = self.page(), self.tab
        candidates = page.kinds.get(kind) or page.kinds["click"]
        on_screen = [i for i in candidates if page.visible(i, tab.scroll)]
        index = self.rng.choice(on_screen if on_screen and self.rng.random() < 0.8 else candidates)
        if not page.visible(index, tab.scroll):
            top = page.nodes[index].box[1] - self.rng.randint(80, 300)
            tab.scroll = max(0, min(top, page.height - VIEWPORT[1]))
        x, y, w, h = page.nodes[index].box
        y -= 0 if page.nodes[index].fixed else tab.scroll
        self.mouse = (x + w // 2, y + h // 2)
        return index

    def typed(self) -> str:
        return " ".join(self.rng.choices(self.tab.site.nouns, k=self.rng.randint(1, 3)))

    # One method per intent: each returns (intent-specific arguments, index of the acted element or None).

    def do_load(self):
        tab = self.tab
        if tab.url is None and tab.id != self.first_tab and self.rng.random() < 0.5:  # a second website
            tab.site = self.rng.choice([s for s in SITES if s.category == self.site.category])
        transition = "typed" if tab.url is None else self.rng.choice(("link", "link", "typed", "form_submit"))
        paths = [p for p in tab.site.paths if f"https://{tab.site.domain}{p}" != tab.url]
        tab.url, tab.scroll = f"https://{tab.site.domain}{self.rng.choice(paths)}", 0
        if tab.site.domain not in self.websites:
            self.websites.append(tab.site.domain)
        qualifiers = ["from_address_bar"] if transition == "typed" else []
        properties = {"url": tab.url, "transitionType": transition, "transitionQualifiers": qualifiers}
        return {"properties": {**properties, "tabId": tab.id}}, None

    def do_scroll(self):
        tab, bottom = self.tab, max(0, self.page().height - VIEWPORT[1])
        step = self.rng.randint(200, 900) * (1 if self.rng.random() < 0.75 else -1)
        tab.scroll = max(0, min(bottom, tab.scroll + step))
        return {"scrollX": 0, "scrollY": tab.scroll}, None

    def pointer(self, kind: str, **extra):
        index = self.pick(kind)
        x, y = self.mouse
        return {"properties": {"x": x, "y": y, "clientX": x, "clientY": y, **extra}}, index

    def do_click(self):
        return self.pointer("click", button=0, buttons=1)

    def do_hover(self):
        return self.pointer("hover")

    def do_textinput(self):
        index, text = self.pick("type"), self.typed()
        self.values.setdefault(self.tab.url, {})[self.page().nodes[index].uid] = text
        return {"text": text}, index

    def do_change(self):
        index = self.pick("change")
        node = self.page().nodes[index]
        options = [self.page().nodes[c].attrs["value"] for c in node.children]
        return {"value": self.rng.choice(options) if options else "on"}, index

    def do_submit(self):
        return {}, self.pick("form")

    def do_copy(self):
        index = self.pick("text")
        words = self.page().nodes[index].text.split()
        first = self.rng.randrange(len(words))
        self.clipboard = " ".join(words[first : first + self.rng.randint(1, 6)])
        return {"selected": self.clipboard}, index

    def do_paste(self):
        index, pasted = self.pick("type"), self.clipboard or self.typed()
        self.values.setdefault(self.tab.url, {})[self.page().nodes[index].uid] = pasted
        return {"pasted": pasted}, index

    def do_tabcreate(self):
        new = max(self.tabs) + 1
        self.tabs[new] = Tab(new, self.site)
        self.tab = self.tabs[new]
        return {"properties": {"tabId": new}}, None

    def do_tabswitch(self):
        origin = self.tab.id
        others = [tab for tab in self.tabs.values() if tab.id != origin]
        self.tab = self.rng.choice([tab for tab in others if tab.url] or others)
        return {"properties": {"tabId": self.tab.id, "tabIdOrigin": origin}}, None

    def do_tabremove(self):
        removed = self.tabs.pop(self.tab.id)
        self.tab = self.tabs[list(self.tabs)[-1]]  # Chrome activates the neighbouring tab
        return {"properties": {"tabId": removed.id}}, None
