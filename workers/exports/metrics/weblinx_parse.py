"""Parse a WebLINX model output such as ``click(uid="a1b2")`` into ``(intent, args)``, as the official evaluator does.

The official parser (``weblinx.processing.outputs``) is lenient and has quirks that change scores, so they are
reproduced on purpose:

- the intent is the run of letters, digits and ``_`` just before the FIRST ``(``, lower-cased with ``_``
  removed (``text_input`` -> ``textinput``); anything unknown is ``<unk>``; ``action(intent="click", ...)``
  takes its intent from the ``intent`` argument;
- arguments end at the first ``)`` outside double quotes; they are split on commas, re-joining pieces while a
  piece has an odd number of ``"``; pieces without ``=`` are ignored, a repeated key keeps its last value;
- a value loses one pair of surrounding double quotes, THEN becomes a float if it contains ``.`` and parses as
  one, an int if it is all digits (optionally after ``-``). So ``uid="123"`` is the int 123 (which never
  matches a string uid) and ``text="2.5"`` the float 2.5 (which scores chrF 0);
- ``x``/``y`` become floats (or None); a lone ``x`` or ``y`` makes both None unless it swallowed the other
  (``x=1 y=2`` without a comma); ``top``/``left``/``right``/``bottom`` become floats.
"""

INTENTS = {
    "say": "say",
    "click": "click",
    "hover": "hover",
    "textinput": "textinput",
    "submit": "submit",
    "change": "change",
    "load": "load",
    "scroll": "scroll",
    "copy": "copy",
    "paste": "paste",
    "tabcreate": "tabcreate",
    "tabremove": "tabremove",
    "tabswitch": "tabswitch",
    "action": "action",
}
UNKNOWN = "<unk>"


def normalize_intent(name) -> str:
    """``"text_Input"`` -> ``"textinput"``; a name that is no intent (or not a string) -> ``"<unk>"``."""
    if not isinstance(name, str):
        return UNKNOWN
    return INTENTS.get(name.lower().strip().replace("_", ""), UNKNOWN)


def split_call(text: str) -> tuple[str, str]:
    """``'... click(uid="x") ...'`` -> ``("click", 'uid="x"')``; ``("", "")`` when there is no ``(``."""
    open_at = text.find("(")
    if open_at == -1:
        return "", ""
    start = open_at
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    close_at, quoted = len(text), False
    for i in range(open_at, len(text)):
        if text[i] == '"':
            quoted = not quoted
        elif text[i] == ")" and not quoted:
            close_at = i
            break
    return text[start:open_at].strip(), text[open_at + 1 : close_at]


def split_arguments(raw: str) -> list[str]:
    """Split on commas, except commas inside double quotes (a piece with an odd ``"`` count continues)."""
    pieces: list[str] = []
    for piece in raw.split(","):
        if pieces and pieces[-1].count('"') % 2 == 1:
            pieces[-1] += "," + piece
        else:
            pieces.append(piece)
    return pieces


def _to_int(value: str):
    try:
        return int(value)
    except ValueError:  # str.isdigit() accepts digits int() rejects (e.g. superscripts); keep the text
        return value


def convert_value(raw: str):
    """Strip, drop one pair of surrounding quotes, then turn number-looking text into a float or an int."""
    value = raw.strip()
    if value.startswith('"') and value.endswith('"'):
        value = value[1:-1]
    if "." in value:
        try:
            return float(value)
        except ValueError:
            return value
    if value.isdigit() or (value.startswith("-") and value[1:].isdigit()):
        return _to_int(value)
    return value


def to_float(value):
    """A float, or None when ``value`` is None or does not parse."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.strip()
    try:
        return float(value)
    except (ValueError, OverflowError):
        return None


def sanitize(args: dict) -> dict:
    """Coordinates as floats; a lone ``x`` or ``y`` recovers its partner from ``"1 y=2"`` or becomes None."""
    if "x" in args and "y" in args:
        args["x"], args["y"] = to_float(args["x"]), to_float(args["y"])
    if "x" in args and "y" not in args:
        _recover_pair(args, "x", "y")
    elif "y" in args and "x" not in args:
        _recover_pair(args, "y", "x")
    for key in ("top", "left", "right", "bottom"):
        if key in args:
            args[key] = to_float(args[key])
    return args


def _recover_pair(args: dict, present: str, missing: str) -> None:
    value = args[present]
    if isinstance(value, str) and f"{missing}=" in value:
        first, _, second = value.partition(f"{missing}=")
        args[present], args[missing] = to_float(first), to_float(second)
    else:
        args[present] = args[missing] = None


def parse_output(text: str) -> tuple[str, dict]:
    """The normalised intent and the sanitised arguments of a model output string."""
    name, raw_args = split_call(text)
    args = {}
    for piece in split_arguments(raw_args):
        if "=" in piece:
            key, _, value = piece.strip().partition("=")
            args[key.strip()] = convert_value(value)
    intent = normalize_intent(name)
    if intent == "action":  # Mind2Web-style generation: the intent is an argument
        intent = normalize_intent(args["intent"]) if "intent" in args else UNKNOWN
    return intent, sanitize(args)
