"""What the harness reads from a task page, in as few WebDriver round trips as possible.

Each function is one ``execute_script`` that does in the page what the official evaluator does with several
Selenium calls, with the same semantics:

- ``find_fields``: for each answer name the first element with that ``name`` (Selenium's ``By.NAME``), kept if
  it is an ``input``/``select``/``textarea``; its type (the ``type`` property of an input, so a missing or unknown
  type is ``text``); its document position (Selenium's element rect, rounded) and whether Selenium's own
  ``isDisplayed`` atom says it is shown.
- ``read_values``: the official ``extract_values`` reads: textarea ``innerHTML`` (read-only ones skipped),
  text-like inputs the ``value`` *attribute*, select the ``selected`` children of the first element, radio and
  checkbox the checked inputs; plus whether the first element is displayed now and whether a textarea's elements
  are all read-only (nothing of it is read). ``properties=True`` reads the ``value`` property (the paper metric).
- ``range_keeps``: what a range control holds of given values (clamped to min/max, rounded to its step).
- ``snapshot_fields`` / ``restore_fields``: the form state of every element with a name, to put a field back
  when a solver fails halfway.
"""

from __future__ import annotations

import pkgutil
from functools import cache

TEXT_READ_TYPES = (
    "text",
    "password",
    "email",
    "number",
    "tel",
    "url",
    "button",
    "color",
    "date",
    "datetime-local",
    "file",
    "image",
    "range",
    "hidden",
)


@cache
def is_displayed_atom() -> str:
    """Selenium's ``isDisplayed`` atom (what ``WebElement.is_displayed`` runs), from the installed package."""
    return pkgutil.get_data("selenium.webdriver.remote", "isDisplayed.js").decode("utf8")


FIRST_BY_NAME = "const first = name => document.querySelector('[name=\"' + CSS.escape(name) + '\"]');"


def _with_atom(body: str) -> str:
    """``body`` with ``isDisplayed(el)`` (Selenium's atom) and ``first(name)`` (Selenium's ``By.NAME``) defined."""
    return f"const isDisplayed = ({is_displayed_atom()});\n{FIRST_BY_NAME}\n{body}"


FIND_FIELDS = """
return arguments[0].map(name => {
  const el = first(name);
  if (!el) return {name, found: false};
  const tag = el.tagName.toLowerCase();
  if (!['input', 'select', 'textarea'].includes(tag)) return {name, found: false, tag};
  const type = tag === 'input' ? (el.type || 'text') : tag;
  const rect = el.getBoundingClientRect();
  return {name, found: true, tag, type, x: rect.left + window.scrollX, y: rect.top + window.scrollY,
          displayed: !!isDisplayed(el)};
});
"""

DISPLAYED = "const el = first(arguments[0]); return !!el && !!isDisplayed(el);"

READ_VALUES = """
const [fields, textReadTypes, properties] = arguments;
const named = name => Array.from(document.getElementsByName(name));
const checked = name => named(name).filter(el => el.tagName === 'INPUT' && el.checked).map(el => el.value);
function values(name, type) {
  if (type === 'textarea')
    return named(name).filter(el => el.readOnly == false).map(el => properties ? el.value : el.innerHTML);
  if (textReadTypes.includes(type))
    return named(name).map(el => properties && 'value' in el ? el.value : el.getAttribute('value'));
  if (type === 'select') {
    const el = named(name)[0];
    return el ? Array.from(el.children).filter(child => child.selected == true).map(child => child.value) : [];
  }
  if (type === 'radio' || type === 'checkbox') return checked(name);
  if (type === 'submit') return [];
  return null;
}
return fields.map(([name, type]) => {
  const el = first(name);
  const all = named(name), readonly = type === 'textarea' && all.length > 0 && all.every(e => e.readOnly);
  return {name, values: values(name, type), displayed: !!el && !!isDisplayed(el), readonly};
});
"""

SNAPSHOT = """
return Array.from(document.getElementsByName(arguments[0])).map(el => ({
  value: 'value' in el ? el.value : null, valueAttr: el.getAttribute('value'), checked: !!el.checked,
  checkedAttr: el.hasAttribute('checked'), html: el.tagName === 'TEXTAREA' ? el.innerHTML : null,
  options: el.tagName === 'SELECT' ? Array.from(el.options).map(o => [o.selected, o.hasAttribute('selected')]) : null,
}));
"""

RESTORE = """
const [name, states] = arguments;
const setAttr = (el, attr, value) => value === null ? el.removeAttribute(attr) : el.setAttribute(attr, value);
Array.from(document.getElementsByName(name)).forEach((el, i) => {
  const s = states[i];
  if (!s) return;
  if (s.html !== null) el.innerHTML = s.html;
  setAttr(el, 'value', s.valueAttr);
  if (s.value !== null && el.type !== 'file') el.value = s.value;
  if (s.checkedAttr) el.setAttribute('checked', ''); else el.removeAttribute('checked');
  if ('checked' in el) el.checked = s.checked;
  if (s.options) Array.from(el.options).forEach((o, j) => {
    if (!s.options[j]) return;
    if (s.options[j][1]) o.setAttribute('selected', ''); else o.removeAttribute('selected');
    o.selected = s.options[j][0];
  });
});
"""


def find_fields(driver, names: list[str]) -> list[dict]:
    return driver.execute_script(_with_atom(FIND_FIELDS), names)


def is_displayed(driver, name: str) -> bool:
    return bool(driver.execute_script(_with_atom(DISPLAYED), name))


def read_values(driver, fields: list[tuple[str, str]], properties: bool = False) -> list[dict]:
    """``[{name, values, displayed, readonly}]`` for ``[(name, type)]``; ``values`` is None for a type with no read
    rule."""
    return driver.execute_script(_with_atom(READ_VALUES), [list(pair) for pair in fields], TEXT_READ_TYPES, properties)


# What a range control keeps of each value (a detached copy, so the page's own control is untouched).
RANGE_KEEPS = """
const [name, values] = arguments;
const el = Array.from(document.getElementsByName(name)).find(e => e.type === 'range');
if (!el) return null;
const probe = el.cloneNode();
return {min: probe.min, max: probe.max, step: probe.step,
        kept: values.map(v => { probe.value = String(v); return probe.value; })};
"""


def range_keeps(driver, name: str, values: list[float]) -> dict | None:
    """``{min, max, step, kept}`` of the range named ``name`` (attributes as written), ``kept`` the value the control
    holds for each of ``values``; None when there is no such range."""
    return driver.execute_script(RANGE_KEEPS, name, values)


def snapshot_fields(driver, name: str) -> list[dict]:
    return driver.execute_script(SNAPSHOT, name)


def restore_fields(driver, name: str, states: list[dict]) -> None:
    driver.execute_script(RESTORE, name, states)


def page_html(driver) -> str:
    """The live DOM (what the page shows now, typed values included where the library wrote them)."""
    return driver.execute_script("return document.documentElement.outerHTML;")


def relevant_html(driver, name: str, before: int = 15, after: int = 30) -> str:
    """The official "relevant HTML" of a field: the outerHTML of its grandparent cut into ``>``-terminated chunks,
    from ``before`` chunks ahead of the field's own tag to ``after`` chunks past it (the first ``after`` chunks when
    the field's outerHTML is not a single chunk, as for a textarea or select)."""
    target, around = driver.execute_script(
        "const el = document.getElementsByName(arguments[0])[0];"
        "const up = (el.parentElement && el.parentElement.parentElement) || el.parentElement || el;"
        "return [el.outerHTML, up.outerHTML];",
        name,
    )
    chunks = [chunk + ">" for chunk in around.split(">")]
    middle = next((index for index, chunk in enumerate(chunks) if chunk == target), -1)
    return "".join(chunks[max(0, middle - before) : min(len(chunks), middle + after)])
