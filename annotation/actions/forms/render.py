"""Serving a form task: the template filled Turkle's way inside ``mturk_form``, as the page of a task frame.

Filling is Turkle's ``Task.populate_html_template``: plain ``str.replace`` of ``${column}`` by the value, for every
input column in CSV order, with no escaping (templates rely on raw values, e.g. HTML in a cell); a placeholder
without a column stays as it is. The page around it mirrors Turkle's iframe (what TurkingBench's agents see): no
doctype, a ``<form name="mturk_form" id="mturk_form" method="post">`` holding the template, and Turkle's
``#submitButton`` appended when the template has no submit button (disabled in preview and read-only views).
"""

import codecs
import html
import json
import re

from django.conf import settings
from django.http import QueryDict

from agents import turkle, vendor

from ...lib import agreement, jsonsafe
from ...models import Batch, Task
from ..errors import ValidationFailed

PAGE = """<html><head>
<title>Task</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
</head>
<body>
<form name="mturk_form" method="post" id="mturk_form" action="{action}">
{template}
{submit}
</form>
{after}</body></html>
"""
# ``form=`` keeps the button in our form even when a template's own ``</form>`` closed it early.
SUBMIT = '<input type="submit" id="submitButton" form="mturk_form" value="Submit"{disabled}>'

# Read-only view of submitted work: put the stored answers back into the named controls (after the template's
# own scripts ran, so controls they create are filled too) and disable every control.
READ_ONLY_SCRIPT = """<script id="stored-answers" type="application/json">{answers}</script>
<script>
window.addEventListener("load", function () {
  var answers = JSON.parse(document.getElementById("stored-answers").textContent);
  var form = document.getElementById("mturk_form");
  var controls = Array.prototype.slice.call(document.querySelectorAll("input, select, textarea, button"));
  Object.keys(answers).forEach(function (name) {
    var values = [].concat(answers[name]).map(String);
    var named = controls.filter(function (el) { return el.name === name; });
    var next = 0;
    named.forEach(function (el) {
      var type = (el.type || "").toLowerCase();
      if (type === "radio" || type === "checkbox") { el.checked = values.indexOf(el.value) >= 0; }
      else if (el.tagName === "SELECT") {
        Array.prototype.forEach.call(el.options, function (o) { o.selected = values.indexOf(o.value) >= 0; });
      } else if (type !== "submit" && type !== "button" && next < values.length) { el.value = values[next++]; }
    });
  });
  controls.forEach(function (el) { el.disabled = true; });
  if (form) { form.addEventListener("submit", function (event) { event.preventDefault(); }); }
});
</script>
"""

# The web app's frames tell the page around them how tall they are, so the frame is sized to its content and the page
# has one scrollbar (``static/forms/frame_height.js`` listens, from this frame's window only). The agents' pages go
# without it (``workers.agents.runs``): they are what TurkingBench's agents see.
SIZE_SCRIPT = """<script>
(function () {
  if (window.parent === window) return;
  var last = 0;
  function send() {
    // the root element's box: the content's height with every margin (it may be less than the frame's, so the
    // frame also shrinks), or the scroll height when the frame still scrolls (positioned content, a 100% root)
    var root = document.documentElement;
    var height = root.getBoundingClientRect().height;
    if (root.scrollHeight > root.clientHeight) height = Math.max(height, root.scrollHeight);
    height = Math.ceil(height);
    if (Math.abs(height - last) < 2) return;
    last = height;
    window.parent.postMessage({type: "form-task.height", height: height}, "*");
  }
  window.addEventListener("load", send);
  window.addEventListener("resize", send);
  if (window.ResizeObserver) new ResizeObserver(send).observe(document.documentElement);
  if (window.MutationObserver) {
    new MutationObserver(send).observe(document.documentElement, {subtree: true, childList: true, attributes: true});
  }
  send();
})();
</script>
"""

# The page answering a submission inside the frame; it tells the assignment page (its parent), which then asks the
# server what happened (the message itself is not trusted: the template's scripts could send one too).
SUBMITTED = """<html><head><meta charset="utf-8"><title>{title}</title></head>
<body style="font-family: system-ui, sans-serif; padding: 1rem">
<p id="submit-result" data-status="{status}">{message}</p>
<script>if (window.parent !== window) {{
  window.parent.postMessage({{type: "form-task.{status}"}}, "*");
  window.parent.postMessage({{type: "form-task.height", height: document.documentElement.scrollHeight}}, "*");
}}</script>
</body></html>
"""


def fill_template(batch: Batch, inputs: dict) -> str:
    """Turkle's filling: ``${column}`` → value for each input column in CSV order, raw (no escaping); the same
    code fills the agents' pages (``agents.turkle.fill_template``). The template's CDN scripts and styles are first
    pointed at the vendored copies (``TEMPLATE_SCRIPTS``, ``agents.vendor``)."""
    values = {column: str(inputs.get(column, "")) for column in batch.input_columns}
    return turkle.fill_template(vendor.rewrite(batch.html_template, settings.TEMPLATE_SCRIPTS), values)


def json_for_script(value) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</script>`` or ``<!--`` can close it)."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def task_page(
    batch: Batch, task: Task, action: str, mode: str, answers: dict | None = None, sized: bool = False
) -> str:
    """The frame page of a task: ``mode`` is ``work`` (submits to ``action``), ``preview`` or ``read_only``;
    ``sized``: it posts its height to the page around it (the web app's frames)."""
    submit = "" if batch.has_submit_button else SUBMIT.format(disabled="" if mode == "work" else " disabled")
    after = READ_ONLY_SCRIPT.replace("{answers}", json_for_script(answers or {}), 1) if mode == "read_only" else ""
    if sized:
        after += SIZE_SCRIPT
    return PAGE.format(
        action=html.escape(action, quote=True), template=fill_template(batch, task.inputs), submit=submit, after=after
    )


def result_page(status: str, message: str) -> str:
    """The small page the frame shows after a submission (or a refused one)."""
    return SUBMITTED.format(title=html.escape(message), status=html.escape(status), message=html.escape(message))


# Django decodes form fields with ``errors="replace"``: bytes that are not UTF-8 would be stored as U+FFFD, the
# answer silently changed. Decoded with this codec instead, they become lone surrogates (``surrogateescape``), which
# ``check_answers`` finds and refuses by field; valid UTF-8 decodes exactly as before (urlencoded and multipart).
MARKED_UTF8 = "webdemos-utf-8-marked"


def marked_utf8_decode(data, errors="strict"):
    return codecs.utf_8_decode(data, "surrogateescape", True)


def find_marked_utf8(name: str):
    if name == MARKED_UTF8.replace("-", "_"):
        return codecs.CodecInfo(codecs.utf_8_encode, marked_utf8_decode, name=MARKED_UTF8)
    return None


codecs.register(find_marked_utf8)


def answers_from_request(request) -> dict:
    """The submitted form as stored: ``{name: value}``, or ``{name: [values]}`` in form order when a name was sent
    several times (Turkle 3.1). Bytes that are not UTF-8 are kept marked for ``check_answers`` to refuse."""
    if request.content_type == "application/x-www-form-urlencoded":
        post = QueryDict(request.body, encoding=MARKED_UTF8)  # Django's own parse of this type is always "utf-8"
    else:
        request.encoding = MARKED_UTF8  # multipart: Django's parser decodes each field with the request's encoding
        post = request.POST
    answers = {}
    for name in post:
        values = post.getlist(name)
        answers[name] = values if len(values) > 1 else values[0]
    return answers


def not_utf8(text: str) -> bool:
    """Whether ``text`` holds bytes that were not UTF-8 (lone surrogates from ``MARKED_UTF8``)."""
    return not jsonsafe.encodable(text)


def shown(name: str) -> str:
    """A field name for a message, its undecodable bytes as ``\\xe9``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def answers_from_json(value) -> dict:
    """Answers sent as JSON (the API's submission): ``{name: text}`` or ``{name: [texts]}``, as the task frame
    stores them; anything else is a 400 naming the field. Checked further by ``check_answers``."""
    if not isinstance(value, dict):
        message = "expected an object {name: text or [texts]}"
        raise ValidationFailed(f"answers: {message}", [{"field": "answers", "message": message}])
    for name, item in value.items():
        texts = item if isinstance(item, list) else [item]
        if not all(isinstance(text, str) for text in texts):
            raise ValidationFailed(
                f"answers.{name}: expected text or a list of texts",
                [{"field": f"answers.{name}", "message": "expected text or a list of texts"}],
            )
    return value


EXTRA_NAME = re.compile(r"[A-Za-z_](?:[\w.\-:\[\] ]{0,98}[\w.\-:\[\]])?", re.ASCII)
# One field's answer: a checkbox group's values, and a value's length (spreadsheets stop at 32,767 characters a
# cell, Python's csv module at 131,072).
ANSWER_VALUES_MAX, ANSWER_CHARACTERS_MAX = 1000, 32767


def check_answers(answers: dict, template: str | None = None) -> None:
    """Refuse what would not be stored as sent (bytes that are not UTF-8) or at all (a NUL character), with the
    field's name, before anything is stored. With the batch's ``template``: at most ``FORM_ANSWER_FIELDS_MAX``
    fields, and a name the template's markup lacks (a script may add controls) must look like a control's name
    (``EXTRA_NAME``: a letter or ``_``, then letters, digits, ``_ . - : [ ]`` and inner spaces, at most 100), and a
    field holds at most ``ANSWER_VALUES_MAX`` values of ``ANSWER_CHARACTERS_MAX`` characters, so a submission
    cannot invent thousands of fields, ones named like markup or formulas or like another with a space, or cells no
    spreadsheet opens."""
    for name, value in answers.items():
        texts = [name, *(value if isinstance(value, list) else [value])]
        if any(not_utf8(text) for text in texts):
            raise ValidationFailed(
                f"answers: field '{shown(name)}' is not UTF-8 text; nothing was stored",
                [{"field": shown(name), "message": "is not UTF-8 text"}],
            )
        if any("\x00" in text for text in texts):
            raise ValidationFailed(
                f"answers: field {name!r} contains a NUL character; nothing was stored",
                [{"field": name, "message": "contains a NUL character"}],
            )
    if template is not None:
        limit = settings.FORM_ANSWER_FIELDS_MAX
        if len(answers) > limit:
            raise ValidationFailed(
                f"answers: {len(answers)} fields, over the limit of {limit}; nothing was stored",
                [{"field": "answers", "message": f"at most {limit} fields"}],
            )
        controls = agreement.template_controls(template)
        for name, value in answers.items():
            if name not in controls and not EXTRA_NAME.fullmatch(name):
                raise ValidationFailed(
                    f"answers: field '{shown(name)}' is not a field of this task's form; nothing was stored",
                    [{"field": "answers", "message": f"'{shown(name)}' is not a field of this task's form"}],
                )
            values = value if isinstance(value, list) else [value]
            if len(values) > ANSWER_VALUES_MAX or any(len(str(v)) > ANSWER_CHARACTERS_MAX for v in values):
                raise ValidationFailed(
                    f"answers: field '{shown(name)}' holds more than {ANSWER_VALUES_MAX} values or a value over "
                    f"{ANSWER_CHARACTERS_MAX} characters; nothing was stored",
                    [
                        {
                            "field": shown(name),
                            "message": f"at most {ANSWER_VALUES_MAX} values of {ANSWER_CHARACTERS_MAX} characters",
                        }
                    ],
                )
