"""The TurkingBench action library, bound to a Selenium WebDriver (no Django).

The official API (JHU-CLSP/turking-bench ``src/evaluation/actions.py``, spec §3) with its semantics, surprising
ones included, because the official scorer depends on them:

- ``modify_text`` types like a person (click, select all, delete, type; ``\\n``/``\\r`` become ENTER) and then
  writes the value into the DOM: ``innerHTML`` of a textarea, the ``value`` *attribute* of an input. The scorer
  reads those, not the ``.value`` property, so text typed any other way scores as untouched. A falsy value
  (``""``, ``0``, ``None``), ``"nan"`` or NaN does nothing.
- ``modify_checkbox`` *clicks* every box of the group whose value is listed (``"a|b"``): a click toggles, so a
  listed box that was already checked ends up unchecked. Boxes not listed are left alone.
- ``modify_radio`` turns a float into an int by truncation (``3.7`` → ``3``), retries a numeric string as an int
  (``"3.0"`` → ``3``), does nothing for NaN, ``"nan"``, ``"None"`` and for ``""`` when no radio has that value,
  and raises when no radio has the value.
- ``modify_select`` raises when the value (or its int form) is not an option value.
- ``modify_range`` sets the property to a *number* and the attribute to what the control kept (clamped to min/max,
  rounded to the step; the official code writes the raw number into the attribute); a non-number raises.
- ``set_checkbox`` (not official) leaves exactly the listed boxes checked, clicking only those that differ.

Long text is not typed key by key (a 100 KB value would take minutes): past ``TYPED_CHARS`` characters, the
value goes into the field in chunks, each with the ``beforeinput``/``input`` events typing makes, and its last
``TYPED_TAIL`` characters are typed (key events); a text longer than ``max_text_chars`` is refused (``ActionError``
naming the field). A field's actions are timed (``begin_field``): past its limit, counted from its first action,
the next action raises ``FieldTimeLimit``.

Every ``modify_*`` returns its canonical call string, e.g. ``self.actions.modify_radio('q1', '3')`` (the value as
the string the official code prints; quoted with Python's ``repr`` so that any value parses back), and appends it
to ``history``: the oracle's history is the gold action sequence. The paper's visual actions (its Table 3, absent
from the official code) are here too: ``click(x, y)``, ``type(text)``, ``scroll(dx, dy)``, ``capture_screen()``.
"""

from __future__ import annotations

import functools
import math
import platform
import re
import time
import urllib.request

from selenium.common.exceptions import (
    ElementClickInterceptedException,
    ElementNotInteractableException,
    NoSuchElementException,
)
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

SCROLL_TO = "arguments[0].scrollIntoView({behavior: 'auto', block: 'center', inline: 'center'});"
NUMERIC = re.compile(r"^[-+]?[0-9]*\.?[0-9]+$")  # the official "is this a number" test for radio/checkbox values
# After typing: mirror the focused field's value where the scorer reads it (see ``type``).
SYNC_FOCUSED = """
const el = document.activeElement;
if (!el) return null;
if (el.tagName === 'TEXTAREA') { el.innerHTML = el.value; return el.name; }
if (el.tagName === 'INPUT') { el.setAttribute('value', el.value); return el.name; }
return null;
"""
TYPED_CHARS = 1_000  # a text up to this long is typed key by key (about 400 characters a second)
TYPED_TAIL = 20  # a longer one: its last characters are typed, the rest inserted in chunks
CHUNK_CHARS = 20_000
MAX_TEXT_CHARS = 200_000  # a longer text is refused (``Actions(max_text_chars=...)``)
# Insert a chunk of text at the focused field's caret as typing does: ``beforeinput`` (a page may cancel it), the
# text (within ``maxlength``), then ``input``. Inputs without a selection (email, number) get it appended.
INSERT_TEXT = """
const [text] = arguments, el = document.activeElement;
if (!el || !['INPUT', 'TEXTAREA'].includes(el.tagName)) return false;
let chunk = text;
const start = el.selectionStart ?? el.value.length, end = el.selectionEnd ?? el.value.length;
if (el.maxLength >= 0) chunk = chunk.slice(0, Math.max(0, el.maxLength - el.value.length + end - start));
const init = {bubbles: true, inputType: 'insertText', data: chunk};
if (!el.dispatchEvent(new InputEvent('beforeinput', {...init, cancelable: true}))) return true;
try { el.setRangeText(chunk, start, end, 'end'); } catch (error) { el.value += chunk; }
el.dispatchEvent(new InputEvent('input', init));
return true;
"""

BOX_STATES = "return arguments[0].map(box => ({value: box.value, checked: box.checked, disabled: box.disabled}));"
# Mirror each box's state into its ``checked`` attribute; return the states.
SYNC_BOXES = "return arguments[0].map(box => { box.toggleAttribute('checked', box.checked); return box.checked; });"
BOX_LABEL = """
const box = arguments[0];
return box.closest('label') || (box.id && document.querySelector(`label[for="${CSS.escape(box.id)}"]`)) || null;
"""


class ActionError(ValueError):
    """An action that cannot be done as asked (no such option, not a number ...)."""


class FieldTimeLimit(Exception):
    """A field's actions ran past its time limit (``Actions.begin_field``): the rest of them are not done."""


def timed(method):
    """An action that first checks the field's clock (``Actions.begin_field``)."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        self.check_time()
        return method(self, *args, **kwargs)

    return checked


def xpath_literal(text: str) -> str:
    """``text`` as an XPath string literal, whatever quotes it holds."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"


def call_string(method: str, *args) -> str:
    """``self.actions.method('a', 'b')``: the official form; ``repr`` quoting so that any value parses back."""
    return f"self.actions.{method}({', '.join(repr(arg) for arg in args)})"


def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


class Actions:
    """What an agent may do on a task page. Fields are found by ``name`` (the first element with it)."""

    def __init__(self, driver, wait_seconds: float = 10, max_text_chars: int = MAX_TEXT_CHARS):
        self.driver = driver
        self.wait_seconds = wait_seconds
        self.max_text_chars = max_text_chars
        self.history: list[str] = []  # state-changing calls, in order (modify_*, click, type, scroll)
        self.last_result = None  # what the last execute_js_command returned
        self.last_image: bytes | None = None  # PNG of the last take_* screenshot
        self.field_seconds: float | None = None
        self.field_started: float | None = None

    def _record(self, call: str) -> str:
        self.history.append(call)
        return call

    # --- Time ------------------------------------------------------------------------------------------------

    def begin_field(self, seconds: float | None) -> None:
        """A new field: its actions may take ``seconds`` from the first one (None: no limit). The time a solver
        spends before acting (a model's answer) is not counted."""
        self.field_seconds, self.field_started = seconds, None

    def check_time(self) -> None:
        """Start the field's clock, or ``FieldTimeLimit`` when the field is past its limit."""
        if self.field_seconds is None:
            return
        now = time.monotonic()
        if self.field_started is None:
            self.field_started = now
        elif now - self.field_started > self.field_seconds:
            raise FieldTimeLimit(
                f"the field's actions took more than its limit of {self.field_seconds:g} s; the rest were not done"
            )

    def _check_length(self, input_name: str | None, text: str) -> None:
        if len(text) > self.max_text_chars:
            where = f" for {input_name!r}" if input_name else ""
            raise ActionError(
                f"the text{where} has {len(text):,} characters; at most {self.max_text_chars:,} are typed into a field"
            )

    def _type(self, chain: ActionChains, text: str) -> None:
        """Perform ``chain`` and then type ``text`` into the focused field (newlines as ENTER): key by key up to
        ``TYPED_CHARS``, else in chunks with their input events, then the last ``TYPED_TAIL`` characters by key."""
        if len(text) > TYPED_CHARS:
            chain.perform()
            head, text = text[:-TYPED_TAIL], text[-TYPED_TAIL:]
            for start in range(0, len(head), CHUNK_CHARS):
                self.check_time()
                self.driver.execute_script(INSERT_TEXT, head[start : start + CHUNK_CHARS])
            self.check_time()
            chain = ActionChains(self.driver)
        for index, line in enumerate(re.split(r"[\n\r]", text)):
            if index:
                chain.send_keys(Keys.ENTER)
            chain.send_keys(line)
        chain.perform()

    # --- Locating --------------------------------------------------------------------------------------------

    @timed
    def wait_for_element(self, input_name: str) -> tuple[str, WebElement]:
        """Wait (up to ``wait_seconds``) for the first element named ``input_name``; return it."""
        element = WebDriverWait(self.driver, self.wait_seconds).until(
            expected_conditions.presence_of_element_located((By.NAME, input_name))
        )
        return call_string("wait_for_element", input_name), element

    @timed
    def scroll_to_element(self, input_name: str) -> tuple[str, WebElement]:
        """Scroll the first element named ``input_name`` to the middle of the viewport; return it."""
        _, element = self.wait_for_element(input_name)
        self.driver.execute_script(SCROLL_TO, element)
        return call_string("scroll_to_element", input_name), element

    def maximize_window(self) -> str:
        self.driver.maximize_window()
        return "self.actions.maximize_window()"

    @timed
    def execute_js_command(self, command: str, *args) -> str:
        """Run JavaScript in the page; the outcome is kept in ``last_result``."""
        self.last_result = self.driver.execute_script(command, *args)
        return call_string("execute_js_command", command)

    # --- The five field actions ------------------------------------------------------------------------------

    @timed
    def modify_text(self, input_name: str, input_value) -> str:
        """Type ``input_value`` into a text input or textarea, then write it where the scorer reads it."""
        call = call_string("modify_text", input_name, str(input_value))
        if not input_value or input_value == "nan" or is_nan(input_value):
            return self._record(call)
        self._check_length(input_name, str(input_value))
        _, element = self.scroll_to_element(input_name)
        chain = ActionChains(self.driver).move_to_element(element).click()
        select_all = Keys.COMMAND if platform.system() == "Darwin" else Keys.CONTROL
        chain.key_down(select_all).send_keys("a").key_up(select_all).send_keys(Keys.BACKSPACE)
        self._type(chain, str(input_value))
        if element.tag_name == "textarea":
            self.driver.execute_script("arguments[0].innerHTML = arguments[1]", element, input_value)
        elif element.tag_name == "input":
            self.driver.execute_script('arguments[0].setAttribute("value", arguments[1])', element, input_value)
        return self._record(call)

    @timed
    def modify_checkbox(self, input_name: str, input_value) -> str:
        """Click each checkbox of the group whose value is listed (``"a|b"``, or a list). Clicks toggle."""
        if isinstance(input_value, list | tuple):
            input_value = "|".join(str(value) for value in input_value)
        call = call_string("modify_checkbox", input_name, str(input_value))
        wanted = [value for value in str(input_value).split("|") if value != "nan"]
        if not wanted:
            return self._record(call)
        self.scroll_to_element(input_name)
        boxes = self.driver.find_elements(By.XPATH, f"//input[@type='checkbox' and @name={xpath_literal(input_name)}]")
        if not self._click_boxes(boxes, wanted):
            self._click_boxes(boxes, [str(int(float(value))) for value in wanted if NUMERIC.match(value)])
        return self._record(call)

    @timed
    def set_checkbox(self, input_name: str, input_value) -> str:
        """Leave exactly the listed boxes of the group checked (``"a|b"`` or a list; a value listed twice checks two
        boxes of that value; ``""``, NaN: none), clicking only the boxes whose state differs, as a person would: on
        the box, or on its label when the label covers the box. ``ActionError`` when a box that must change is
        disabled or has no clickable label, or when the page does not keep the state."""
        if isinstance(input_value, list | tuple):
            input_value = "|".join(str(value) for value in input_value)
        text = "" if input_value is None or is_nan(input_value) else str(input_value)
        wanted = [value for value in text.split("|") if value not in ("", "nan")]
        self.scroll_to_element(input_name)
        boxes = self.driver.find_elements(By.XPATH, f"//input[@type='checkbox' and @name={xpath_literal(input_name)}]")
        states = self.driver.execute_script(BOX_STATES, boxes)
        values = [state["value"] for state in states]
        if not all(value in values for value in wanted) and all(NUMERIC.match(value) for value in wanted):
            wanted = [str(int(float(value))) for value in wanted]  # "2.0" → "2", as modify_checkbox retries
        target = _boxes_to_check(input_name, [(s["value"], s["checked"]) for s in states], wanted)
        changes = [(box, state) for box, state, on in zip(boxes, states, target, strict=True) if state["checked"] != on]
        for _, state in changes:  # before any click, so a refused call changes nothing
            if state["disabled"]:
                raise ActionError(f"the {state['value']!r} box of {input_name!r} is disabled")
        for box, _ in changes:
            self._click_box(box)
        kept = self.driver.execute_script(SYNC_BOXES, boxes)
        if kept != target:
            shown = "|".join(v for v, on in zip(values, kept, strict=True) if on)
            raise ActionError(f"the page did not keep the boxes of {input_name!r}: it holds {shown!r}")
        return self._record(call_string("set_checkbox", input_name, "|".join(wanted)))

    def _click_box(self, box: WebElement) -> None:
        """Click a box; when another element (its styled label) takes the click, click the box's label."""
        try:
            box.click()
        except (ElementClickInterceptedException, ElementNotInteractableException) as error:
            label = self.driver.execute_script(BOX_LABEL, box)
            if label is None:
                raise ActionError(
                    f"the {box.get_attribute('value')!r} box cannot be clicked and has no label"
                ) from error
            self.driver.execute_script(SCROLL_TO, label)
            label.click()

    def _click_boxes(self, boxes: list[WebElement], wanted: list[str]) -> bool:
        found = False
        # The ``value`` property, as Selenium's get_attribute gives it: "on" for a box without a value attribute.
        values = self.driver.execute_script("return arguments[0].map(box => box.value)", boxes)
        for box, value in zip(boxes, values, strict=True):
            if value in wanted:
                box.click()
                self.driver.execute_script('arguments[0].setAttribute("checked", "");', box)
                found = True
        return found

    @timed
    def modify_radio(self, input_name: str, input_value) -> str:
        """Select the radio button of the group whose value is ``input_value``."""
        if isinstance(input_value, float):
            if math.isnan(input_value):
                return self._record(call_string("modify_radio", input_name, str(input_value)))
            input_value = int(input_value)
        input_value = str(input_value)
        if input_value in ("nan", "None"):
            return self._record(call_string("modify_radio", input_name, input_value))
        self.scroll_to_element(input_name)
        element = self._radio(input_name, input_value)
        if element is None:
            if input_value == "":
                return self._record(call_string("modify_radio", input_name, input_value))
            if not NUMERIC.match(input_value):
                raise ActionError(f"no radio button named {input_name!r} has the value {input_value!r}")
            input_value = str(int(float(input_value)))
            element = self._radio(input_name, input_value)
            if element is None:
                raise ActionError(f"no radio button named {input_name!r} has the value {input_value!r}")
        if element.is_displayed():
            ActionChains(self.driver).move_to_element(element).click().perform()
        self.driver.execute_script('arguments[0].setAttribute("checked", "");', element)
        return self._record(call_string("modify_radio", input_name, input_value))

    def _radio(self, input_name: str, value: str) -> WebElement | None:
        xpath = f"//input[@type='radio' and @name={xpath_literal(input_name)} and @value={xpath_literal(value)}]"
        try:
            return self.driver.find_element(By.XPATH, xpath)
        except NoSuchElementException:
            return None

    @timed
    def modify_select(self, input_name: str, input_value) -> str:
        """Choose the option whose value is ``input_value`` (or its int form, ``"2.0"`` → ``"2"``)."""
        element = self.driver.find_element(By.NAME, input_name)
        select = Select(element)
        options = self.driver.execute_script(
            "return Array.from(arguments[0].options).map(option => option.value)", element
        )
        if not options:
            raise ActionError(f"select {input_name!r} has no options")
        if input_value not in options:
            as_int = _int_string(input_value)
            if as_int is None or as_int not in options:
                raise ActionError(f"{input_value!r} is not among the option values {options!r} of {input_name!r}")
            input_value = as_int
        select.select_by_value(input_value)
        self.driver.execute_script('arguments[0].setAttribute("selected", "");', select.first_selected_option)
        return self._record(call_string("modify_select", input_name, str(input_value)))

    @timed
    def modify_range(self, input_name: str, input_value) -> str:
        """Set a range input to a number: the property, then the attribute to what the control kept (a number
        outside min/max or off the step becomes the nearest one it holds)."""
        call = call_string("modify_range", input_name, str(input_value))
        if input_value in ("nan", "None"):
            return self._record(call)
        literal = _js_number(input_value)
        if literal is None:
            raise ActionError(f"range {input_name!r} takes a number, not {input_value!r}")
        self.scroll_to_element(input_name)
        element = self.driver.find_element(By.XPATH, f"//input[@type='range' and @name={xpath_literal(input_name)}]")
        # The attribute gets what the control kept (clamped to min/max, rounded to its step), as a form would send.
        self.driver.execute_script(
            f"arguments[0].value = {literal}; arguments[0].setAttribute('value', arguments[0].value);", element
        )
        return self._record(call)

    # --- Seeing the page -------------------------------------------------------------------------------------

    @timed
    def take_screenshot(self, path: str | None = None) -> str:
        """Scroll to the bottom until the page stops growing, then a viewport screenshot (``last_image``)."""
        height = self.driver.execute_script("return document.body.scrollHeight")
        for _ in range(20):  # pages that load more as you scroll; bounded, unlike the official loop
            self.driver.execute_script("window.scrollTo(0, document.body.scrollHeight);")
            new_height = self.driver.execute_script("return document.body.scrollHeight")
            if new_height == height:
                break
            height = new_height
        self.last_image = self.driver.get_screenshot_as_png()
        _save(self.last_image, path)
        return "self.actions.take_screenshot()"

    @timed
    def take_full_screenshot(self, path: str | None = None) -> str:
        """The whole page in one PNG (Chromium's full-page capture; the official code stitches viewports)."""
        self.last_image = full_page_png(self.driver)
        _save(self.last_image, path)
        return "self.actions.take_full_screenshot()"

    @timed
    def take_element_screenshot(self, input_name: str, path: str | None = None) -> str:
        """A PNG of the first element named ``input_name`` (scrolled into view)."""
        self.last_image = self.driver.find_element(By.NAME, input_name).screenshot_as_png
        _save(self.last_image, path)
        return call_string("take_element_screenshot", input_name)

    def get_html(self, url: str | None = None) -> str:
        """The page's HTML as the server sends it (not the live DOM), like the official ``requests.get(url).text``."""
        with urllib.request.urlopen(url or self.driver.current_url, timeout=30) as response:  # noqa: S310
            return response.read().decode(response.headers.get_content_charset() or "utf-8", errors="replace")

    # --- The paper's visual actions (Table 3) ----------------------------------------------------------------

    @timed
    def click(self, x: float, y: float) -> str:
        """A mouse click at viewport coordinates (CSS pixels)."""
        chain = ActionChains(self.driver)
        chain.w3c_actions.pointer_action.move_to_location(int(x), int(y)).click()
        chain.perform()
        return self._record(call_string("click", x, y))

    @timed
    def type(self, text: str) -> str:
        """Type ``text`` into the focused element (newlines as ENTER), then, like ``modify_text``, copy the focused
        field's value into its ``value`` attribute / ``innerHTML`` so the official scorer sees it."""
        self._check_length(None, str(text))
        self._type(ActionChains(self.driver), str(text))
        self.driver.execute_script(SYNC_FOCUSED)
        return self._record(call_string("type", str(text)))

    @timed
    def scroll(self, dx: float, dy: float) -> str:
        """Scroll the page by (dx, dy) CSS pixels, at once (no smooth-scrolling animation to wait for)."""
        self.driver.execute_script(
            "window.scrollBy({left: arguments[0], top: arguments[1], behavior: 'instant'});", dx, dy
        )
        return self._record(call_string("scroll", dx, dy))

    def capture_screen(self) -> bytes:
        """A PNG of the viewport as it is now."""
        return self.driver.get_screenshot_as_png()


def _int_string(value) -> str | None:
    """``str(int(float(value)))`` when ``value`` is a finite number, else None (official ``modify_select``)."""
    try:
        number = float(value)
        return None if math.isnan(number) else str(int(number))
    except (TypeError, ValueError, OverflowError):
        return None


def _boxes_to_check(name: str, boxes: list[tuple[str, bool]], wanted: list[str]) -> list[bool]:
    """Which boxes (``(value, checked)``) end checked so that the group holds ``wanted`` (a multiset): of the boxes
    of a value, those already checked first."""
    need = {value: wanted.count(value) for value in wanted}
    target = [False] * len(boxes)
    for first_checked in (True, False):
        for index, (value, checked) in enumerate(boxes):
            if checked == first_checked and need.get(value, 0) > 0:
                target[index], need[value] = True, need[value] - 1
    missing = [value for value, count in need.items() if count > 0]
    if missing:
        raise ActionError(f"the checkboxes named {name!r} have no (or too few) boxes of the value {missing[0]!r}")
    return target


def _js_number(value) -> str | None:
    """The JavaScript literal of a finite number (``2.5``, ``-1e3``), or None when it is not one (the official
    code pastes ``nan``/``inf`` into JavaScript, where they are undefined names, so those fail there too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", value):
        return value.strip()
    return None


def full_page_png(driver) -> bytes:
    """Chromium's full-page screenshot (DevTools ``Page.captureScreenshot`` beyond the viewport)."""
    import base64

    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip})
    return base64.b64decode(shot["data"])


def _save(image: bytes, path: str | None) -> None:
    if path:
        with open(path, "wb") as handle:
            handle.write(image)
