"""The page state the WebLINX evaluator uses for a turn: uids present in the page HTML, and the bboxes file.

The official library reads ``pages/<state.page>`` (utf-8, else latin-1), finds the elements carrying
``data-webtasks-id`` with ``lxml.html``, and reads ``bboxes/bboxes-<N>.json`` where N is the FIRST number of the
page file name (``page-12-1.html`` -> ``bboxes-12.json``). An element is known only if it is in both.
"""

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lxml.etree
import lxml.html

from . import DatasetError

UID = "data-webtasks-id"


@dataclass(frozen=True)
class PageState:
    """One captured page as the evaluator sees it: uids present in its HTML and its bboxes file (or None)."""

    uids: frozenset = frozenset()
    bboxes: dict | None = None


NO_PAGE = PageState()
PageLoader = Callable[[str, str], PageState]  # (demo_name, state.page file name) -> PageState


def bboxes_index(page: str) -> int | None:
    """``page-12-1.html`` -> 12: the bboxes file of a page is named after the page's FIRST number."""
    try:
        first, _second = (int(number) for number in Path(page).with_suffix("").name.split("-")[-2:])
    except ValueError:  # not `<prefix>-<N>-<M>.<ext>` (the library raises)
        return None
    return first


def html_uids(html: str | None) -> frozenset:
    """The ``data-webtasks-id`` values of the elements lxml finds in the page (as the evaluator's xpaths)."""
    if not html:
        return frozenset()
    try:
        tree = lxml.html.fromstring(html).getroottree()
    except (lxml.etree.ParserError, ValueError):  # empty document; str with an encoding declaration
        return frozenset()
    return frozenset(element.attrib[UID] for element in tree.xpath(f"//*[@{UID}]"))


def read_html(path: Path) -> str | None:
    """The page text, utf-8 then latin-1 like the library; None when it cannot be read."""
    for encoding in ("utf-8", "latin-1"):
        try:
            return path.read_text(encoding=encoding)
        except UnicodeDecodeError:
            continue
        except OSError:
            return None
    return None


class DirectoryPages:
    """Page states read from a WebLINX export's ``demonstrations/`` folder.

    The last ``keep`` pages stay in memory (a page may be named by several turns, and one prediction reads it for
    both the reference and the predicted element); a whole split's bboxes would not fit.
    """

    def __init__(self, demos_dir: Path, keep: int = 32):
        self.demos_dir, self.keep = Path(demos_dir), keep
        self._recent: OrderedDict = OrderedDict()

    def __call__(self, demo_name: str, page: str) -> PageState:
        key = (demo_name, page)
        if key in self._recent:
            self._recent.move_to_end(key)
        else:
            self._recent[key] = self._load(self.demos_dir / demo_name, page)
            if len(self._recent) > self.keep:
                self._recent.popitem(last=False)
        return self._recent[key]

    def _load(self, demo_dir: Path, page: str) -> PageState:
        return PageState(uids=html_uids(read_html(demo_dir / "pages" / page)), bboxes=self._bboxes(demo_dir, page))

    @staticmethod
    def _bboxes(demo_dir: Path, page: str) -> dict | None:
        index = bboxes_index(page)
        path = demo_dir / "bboxes" / f"bboxes-{index}.json"
        if index is None or not path.is_file():
            return None
        try:
            boxes = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{path}: not readable JSON ({exc})") from exc
        return boxes if isinstance(boxes, dict) else None
