"""The ``llm`` solver: a model behind an OpenAI-compatible endpoint fills a TurkingBench page with calls of the
action library (no Django).

Per page, one model call (``agents.llm.ChatClient``): the system message describes the action library; the user
message (``DEFAULT_TEMPLATE`` or the run's own template) gives the task's instructions, the page as text, and the
fields with their types and options (and, for a vision model, a screenshot of the page). The model answers with
calls, one a line, e.g. ``modify_radio('q1', '3')`` (``self.actions.modify_radio(...)`` too).

The answer is parsed strictly (``parse_calls``: Python's ``ast``, literal arguments only, never evaluated): a
line that is not a call of the vocabulary (``VOCABULARY``), or whose arguments do not fit, is a *problem*. Then,
as the harness reaches each field, the calls naming it are run; the visual calls (``click``, ``type``,
``scroll``) go with the named call before them (those before any named call, with the first field). A call that
fails, a checkbox value that is none of the group's, or a problem naming the field, is that field's error (the
harness restores the field and goes on). Prose (a line that does not even look like a call) is never an error.
What could not be applied otherwise is the instance's ``unapplied`` list (``instance_unapplied``), each entry the
raw line, the field it names and why: a call naming a field the page does not have (with the name that matches
it but for case), a field that was not displayed at its turn, a call-like line naming no field, an answer with
no call at all. The raw answer is kept (``answer``) for the instance.

An endpoint that cannot be used (``EndpointError``) or a spent budget (``BudgetExhausted``) stops the run
(``harness.StopRun``), never a field's error.
"""

from __future__ import annotations

import ast
import base64
import inspect
import re
import time
from dataclasses import dataclass, field

from . import scoring
from .actions import NUMERIC, Actions
from .harness import FieldRequest, Solver, StopRun
from .llm import BudgetExhausted, ChatClient, Completion, EndpointError, Stopped
from .turkle import TaskDir

FIELD_ACTIONS = ("modify_text", "modify_checkbox", "modify_radio", "modify_select", "modify_range")
VISUAL_ACTIONS = ("click", "type", "scroll")
VOCABULARY = (*FIELD_ACTIONS, *VISUAL_ACTIONS, "scroll_to_element")
PAGE_CHARS = 40_000  # the page text given to the model is cut after this many characters (about 10k tokens)
MAX_OPTIONS = 500  # per field; past it the prompt says how many more there are and to write the exact value
MAX_LINE_CHARS = 500  # the most of an answer's line quoted in a field's error or an unapplied entry
MAX_UNAPPLIED = 200  # entries of an instance's unapplied list kept; one more says how many were left out
MAX_TEMPLATE_CHARS = 20_000
PLACEHOLDERS = ("{task}", "{instructions}", "{page}", "{fields}")

SYSTEM_PROMPT = """You fill in web forms (crowdsourcing tasks from Amazon Mechanical Turk) by writing calls of this \
Python action library, one call a line, and nothing else:

modify_text(name, value)       type value into the text input or textarea called name
modify_radio(name, value)      choose the radio button of group name whose value is value
modify_checkbox(name, values)  click the checkboxes of group name whose values are listed ("a|b"); a click toggles
modify_select(name, value)     choose the option whose value is value in the select called name
modify_range(name, number)     set the range input called name to number
click(x, y)                    click at viewport coordinates (CSS pixels)
type(text)                     type text into the focused field
scroll(dx, dy)                 scroll the page by (dx, dy) pixels

Use the field names and option values exactly as listed. Leave a field alone (no call) when it should stay as it \
is. Answer with the calls only."""

DEFAULT_TEMPLATE = """# Task: {task}

## Instructions
{instructions}

## The page (as text)
{page}

## The fields to fill, in order (name: type, then the values you may choose)
{fields}

Write the calls that fill in this form as the instructions ask."""

FIELD_INFO = """
const [names] = arguments;
const label = el => {
  const own = el.labels && el.labels.length ? el.labels[0].innerText : (el.parentElement || el).innerText;
  return (own || '').replace(/\\s+/g, ' ').trim().slice(0, 80);
};
return names.map(name => {
  const all = Array.from(document.getElementsByName(name));
  const el = all[0];
  if (!el) return null;
  const tag = el.tagName.toLowerCase();
  const type = tag === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : tag;
  const info = {name, type, displayed: !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length)};
  if (type === 'radio' || type === 'checkbox')
    info.options = all.filter(e => e.type === type).map(e => [e.value, label(e)]);
  else if (tag === 'select') info.options = Array.from(el.options).map(o => [o.value, o.text.trim().slice(0, 80)]);
  else if (type === 'range') info.range = [el.min, el.max, el.step];
  if (tag === 'textarea' || (tag === 'input' && type !== 'radio' && type !== 'checkbox')) info.value = el.value;
  return info;
}).filter(Boolean);
"""


class AnswerError(Exception):
    """A call of the model's answer that is not in the vocabulary, does not fit, or fails on the page."""


@dataclass
class Call:
    method: str
    args: list
    kwargs: dict
    source: str

    @property
    def field(self) -> str | None:
        """The field a named call is about (its first argument), None for a visual call."""
        if self.method in VISUAL_ACTIONS:
            return None
        value = self.args[0] if self.args else self.kwargs.get("input_name")
        return value if isinstance(value, str) else None


@dataclass
class Parsed:
    calls: list[Call] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (line, what is wrong)


CALL_LIKE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*\(")  # ``name(`` or ``a.b.name(``
_SIGNATURES = {name: inspect.signature(getattr(Actions, name)) for name in VOCABULARY}
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n(.*?)```", re.DOTALL)


def _code(text: str) -> str:
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text


def _method(func: ast.expr) -> str | None:
    """``modify_text``, ``actions.modify_text`` or ``self.actions.modify_text`` → the method name."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "actions":
            return func.attr
        if (
            isinstance(owner, ast.Attribute)
            and owner.attr == "actions"
            and isinstance(owner.value, ast.Name)
            and owner.value.id == "self"
        ):
            return func.attr
    return None


def _call(node: ast.stmt, source: str) -> Call:
    """The statement as a ``Call``; ``AnswerError`` naming what is wrong otherwise."""
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        raise AnswerError("not a call")
    call = node.value
    method = _method(call.func)
    if method is None or method not in VOCABULARY:
        shown = ast.unparse(call.func)
        raise AnswerError(f"{shown}() is not a call of the action library ({', '.join(VOCABULARY)})")
    try:
        args = [ast.literal_eval(arg) for arg in call.args]
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg is not None}
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise AnswerError(f"the arguments of {method}() must be plain values (strings, numbers)") from None
    if any(kw.arg is None for kw in call.keywords) or any(isinstance(arg, ast.Starred) for arg in call.args):
        raise AnswerError(f"the arguments of {method}() must be plain values")
    try:
        _SIGNATURES[method].bind(None, *args, **kwargs)
    except TypeError as error:
        raise AnswerError(f"{method}(): {error}") from None
    return Call(method, args, kwargs, source)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")  # lines as the parser counts them, ends kept


def _source_segment(lines: list[str], node: ast.stmt) -> str:
    """``ast.get_source_segment``, whose line split takes minutes on a 5 MB answer, in linear time (offsets are
    UTF-8 bytes, as the parser gives them)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    end = node.end_col_offset
    if first == last:
        return lines[first].encode()[node.col_offset : end].decode(errors="replace")
    head = lines[first].encode()[node.col_offset :].decode(errors="replace")
    return head + "".join(lines[first + 1 : last]) + lines[last].encode()[:end].decode(errors="replace")


def parse_calls(text: str) -> Parsed:
    """The calls of a model answer (code fences allowed) and the lines that are not calls (see the module
    docstring). Nothing is ever evaluated: arguments go through ``ast.literal_eval``."""
    code, parsed = _code(text or ""), Parsed()
    try:
        lines = _LINE.findall(code)
        statements = [(node, _source_segment(lines, node)) for node in ast.parse(code).body]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        statements = None
    if statements is None:  # one bad line: the others still count
        statements = []
        for line in code.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            try:
                statements.extend((node, stripped) for node in ast.parse(stripped).body)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                parsed.problems.append((stripped, "not a call (does not parse)"))
    for node, source in statements:
        try:
            parsed.calls.append(_call(node, source.strip()))
        except AnswerError as error:
            parsed.problems.append((source.strip(), str(error)))
    return parsed


def _mentioned(line: str) -> str | None:
    """The first quoted string of a line (the field a broken call was about)."""
    found = re.search(r"""\(\s*(?:input_name\s*=\s*)?(['"])(.*?)\1""", line)
    return found.group(2) if found else None


def describe_fields(infos: list[dict]) -> str:
    lines = []
    for info in infos:
        line = f"- {info['name']}: {info['type']}"
        if not info.get("displayed", True):
            line += " (not shown yet)"
        if info.get("options"):
            shown = [f"{value!r}" + (f" ({text})" if text and text != value else "") for value, text in info["options"]]
            line += "; values: " + ", ".join(shown[:MAX_OPTIONS])
            if len(shown) > MAX_OPTIONS:
                line += f" … and {len(shown) - MAX_OPTIONS} more not listed here: write the exact value you mean"
        if info.get("range"):
            low, high, step = info["range"]
            line += f"; from {low or 0} to {high or 100}" + (f" by {step}" if step else "")
        if info.get("value"):
            line += f"; now {info['value'][:200]!r}"
        lines.append(line)
    return "\n".join(lines)


def page_text(driver) -> str:
    text = driver.execute_script("return document.body ? document.body.innerText : '';") or ""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    text = "\n".join(line for line in lines if line)
    return text if len(text) <= PAGE_CHARS else text[:PAGE_CHARS] + "\n[… the rest of the page is cut]"


def render_prompt(template: str, values: dict[str, str]) -> str:
    """``template`` with ``{task}``, ``{instructions}``, ``{page}`` and ``{fields}`` filled in (other braces stay)."""
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", value)
    return out


def check_template(template) -> str | None:
    """What is wrong with a prompt template (None when it is fine or empty: the default)."""
    if template in (None, ""):
        return None
    if not isinstance(template, str):
        return "expected text"
    if len(template) > MAX_TEMPLATE_CHARS:
        return f"at most {MAX_TEMPLATE_CHARS} characters"
    if "{fields}" not in template:
        return "the template must contain {fields} (the fields to fill), and may use {task}, {instructions}, {page}"
    return None


@dataclass
class PagePlan:
    """What the model answered for the current page, and which calls are left to run."""

    answer: Completion
    by_field: dict[str, list[Call]]
    leading: list[Call]
    problems_by_field: dict[str, list[tuple[str, str]]]
    unapplied: list[dict]  # the instance's entries found when the answer was read (see ``instance_unapplied``)
    charged: bool = False  # whether the answer's cost was recorded on a field yet
    leading_done: bool = False


def unapplied_entry(line: str, field: str | None, reason: str) -> dict:
    """One entry of an instance's ``unapplied`` list: the answer's line (cut), the field it names, why."""
    return {"line": _cut(line), "field": field, "reason": reason}


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " […]"


class LLMSolver(Solver):
    """The ``llm`` solver (see the module docstring). ``client`` is shared by the threads of a run; one solver per
    browser. ``vision``: a screenshot goes with the prompt."""

    name = "llm"

    def __init__(self, client: ChatClient, template: str = "", vision: bool = False):
        self.client = client
        self.template = template or DEFAULT_TEMPLATE
        self.vision = vision
        self.task: TaskDir | None = None
        self.instance = 0
        self.plan: PagePlan | None = None
        self.page_fields: list[str] = []  # the fields of the page the prompt listed
        self.calls = 0
        self.cpu_seconds = 0.0  # this thread's CPU for the model calls: the prompt, the request, the parse

    def begin_instance(self, task: TaskDir, instance: int) -> None:
        self.task, self.instance, self.plan, self.page_fields = task, instance, None, []

    def instance_answer(self) -> str | None:
        return self.plan.answer.text if self.plan else None

    def messages(self, request: FieldRequest) -> list[dict]:
        """The prompt for the page, read only while the browser is on the instance's origin (checked before the page
        is read and again before anything read goes to the model: ``LeftOrigin`` ends the instance)."""
        driver, task = request.driver, self.task
        request.check_origin()
        infos = driver.execute_script(FIELD_INFO, [n for n in task.field_names if n not in scoring.EXCLUDED_NAMES])
        self.page_fields = [info["name"] for info in infos]
        prompt = render_prompt(
            self.template,
            {
                "task": task.name,
                "instructions": request.instructions or "(none)",
                "page": page_text(driver),
                "fields": describe_fields(infos),
            },
        )
        content: str | list = prompt
        if self.vision:
            driver.execute_script("window.scrollTo(0, 0);")
            request.check_origin()
            image = base64.b64encode(driver.get_screenshot_as_png()).decode("ascii")
            content = [
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
            ]
        request.check_origin()
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]

    def _plan(self, request: FieldRequest) -> PagePlan:
        started = time.thread_time()
        try:
            answer = self.client.complete(self.messages(request))
        except (EndpointError, BudgetExhausted, Stopped) as error:
            raise StopRun(str(error), budget=isinstance(error, BudgetExhausted)) from None
        parsed = parse_calls(answer.text)
        self.calls += 1
        self.cpu_seconds += time.thread_time() - started
        by_field: dict[str, list[Call]] = {}
        leading: list[Call] = []
        current: list[Call] | None = None
        for call in parsed.calls:
            if call.field is None:
                (current if current is not None else leading).append(call)
            else:
                current = by_field.setdefault(call.field, [])
                current.append(call)
        problems_by_field: dict[str, list] = {}
        unapplied = []
        for line, reason in parsed.problems:
            name = _mentioned(line)
            if name is not None and name in self.task.field_names:
                problems_by_field.setdefault(name, []).append((line, reason))
            elif CALL_LIKE.match(line):
                unapplied.append(unapplied_entry(line, name, reason))
            # else prose: never an error (the raw answer is kept)
        if not parsed.calls and not problems_by_field and not unapplied:
            unapplied.append(unapplied_entry("", None, "the answer holds no call of the action library"))
        return PagePlan(answer, by_field, leading, problems_by_field, unapplied)

    def solve(self, request: FieldRequest) -> None:
        if self.plan is None:
            self.plan = self._plan(request)
        plan = self.plan
        if not plan.charged:
            plan.charged = True
            answer = plan.answer
            request.usage = {
                "tokens_in": answer.tokens_in,
                "tokens_out": answer.tokens_out,
                "model_seconds": round(answer.seconds, 3),
                "cached": answer.cached,
            }
        calls = plan.by_field.pop(request.name, [])
        if not plan.leading_done:
            plan.leading_done = True
            calls = plan.leading + calls
        for call in calls:
            check_values(request, call)
            try:
                getattr(request.actions, call.method)(*call.args, **call.kwargs)
            except StopRun:
                raise
            except Exception as error:  # the call failed on the page: this field's error
                raise AnswerError(f"{_cut(call.source)} failed: {type(error).__name__}: {_first_line(error)}") from None
        problems = plan.problems_by_field.pop(request.name, [])
        if problems:
            raise AnswerError("; ".join(f"{_cut(line)!r}: {reason}" for line, reason in problems))

    def instance_unapplied(self) -> list[dict]:
        """What of the answer was not applied to any field (see the module docstring): the entries found when the
        answer was read, then the calls and problems naming fields the harness never gave the solver."""
        plan = self.plan
        if plan is None:
            return []
        entries = list(plan.unapplied)
        for name, calls in plan.by_field.items():
            entries.extend(unapplied_entry(call.source, name, self.why_unapplied(name)) for call in calls)
        for name, problems in plan.problems_by_field.items():
            why = self.why_unapplied(name)
            entries.extend(unapplied_entry(line, name, f"{reason}; and {why}") for line, reason in problems)
        if not plan.leading_done:
            why = "not run: no field was displayed to run it with"
            entries.extend(unapplied_entry(call.source, None, why) for call in plan.leading)
        if len(entries) > MAX_UNAPPLIED:
            left_out = f"and {len(entries) - MAX_UNAPPLIED} more lines no field took (the whole answer has them)"
            entries = [*entries[:MAX_UNAPPLIED], unapplied_entry("", None, left_out)]
        return entries

    def why_unapplied(self, name: str) -> str:
        """Why calls naming ``name`` were never run: no such field (naming the field that matches but for case or
        spaces), a field the model does not fill, or one the harness did not reach while it was displayed."""
        if name in scoring.EXCLUDED_NAMES:
            return f"{name!r} is not a field the model fills"
        if name in self.page_fields:
            return "the field was not displayed when its turn came (or the instance ended first)"
        known = self.page_fields or [n for n in self.task.field_names if n not in scoring.EXCLUDED_NAMES]
        near = [n for n in known if n.strip().lower() == name.strip().lower()]
        if near:
            return f"unknown field {name!r}: the page has {near[0]!r} (names must match exactly, case included)"
        return f"unknown field {name!r}: the page has no field of that name"


CHECKBOX_VALUES = """return Array.from(document.getElementsByName(arguments[0])).filter(e => e.type === 'checkbox')
  .map(e => e.value);"""


def check_values(request: FieldRequest, call: Call) -> None:
    """``AnswerError`` when a checkbox call lists a value none of the group's boxes has (the action library would
    click the others and leave that one out silently); radio and select calls raise on their own."""
    if call.method != "modify_checkbox":
        return
    given = call.args[1] if len(call.args) > 1 else call.kwargs.get("input_value", "")
    wanted = [str(v) for v in given] if isinstance(given, list | tuple) else str(given).split("|")
    wanted = [value for value in wanted if value not in ("", "nan")]
    if not wanted:
        return
    request.check_origin()
    values = request.driver.execute_script(CHECKBOX_VALUES, request.name) or []
    missing = [v for v in wanted if v not in values and not (NUMERIC.match(v) and str(int(float(v))) in values)]
    if missing:
        shown = ", ".join(repr(v) for v in values[:MAX_OPTIONS]) or "none"
        raise AnswerError(
            f"{_cut(call.source)} was not applied: {', '.join(map(repr, missing))} is not among the values of "
            f"checkbox group {request.name!r} ({shown})"
        )


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""
