"""WebLINX scores, equal to the official evaluator's (``weblinx`` 0.3.2, ``weblinx.eval``) without importing it.

Pipeline, as ``weblinx.eval.auto_eval_and_save`` + ``compute_aggregated_scores`` run it:

1. Each prediction ``{"demo_name", "turn_index", "output_predicted"}`` is parsed (``weblinx_parse``) and paired
   with the reference action of that turn. Only turns that HAVE a prediction are evaluated.
2. A reference is dropped (``dropped`` in the result, not in ``per_turn``) when its intent is click, change,
   textinput or submit and its element has no uid, or the uid is not both in the turn's page HTML and in its
   bboxes file; or it is a click followed by a copy; or a click followed by a submit on the same uid.
3. Per turn: intent match; element IoU (element intents, equal intents); chrF (text intents, equal intents);
   URL F1 (load, equal intents). A metric that does not apply is None. The turn score ("overall" in the
   official code) is IoU x chrF when both exist (textinput, change, copy, paste), else URL F1 (load), else
   chrF (say), else IoU (click, hover, submit, scroll); None when none exists (tab intents). ``score`` in
   ``per_turn`` is the unconditional one: 0 when the intent is wrong.
4. Aggregate (the official "unconditional" scores, the ones the paper reports): a wrong-intent turn counts as
   0 in EVERY metric. Then, over the evaluated turns:
   - ``intent_match``: mean intent match;
   - ``element_group``: mean IoU over turns that have one (element intents) plus every wrong-intent turn;
   - ``text_group``: mean of max(chrF, URL F1) over turns that have one (say, textinput, change, load, copy,
     paste) plus every wrong-intent turn;
   - ``overall``: mean turn score over turns that have one plus every wrong-intent turn.
   ``conditional`` holds the official "score" column instead: wrong-intent turns are left out of the element
   group, text group and overall. An empty mean is None.

The protocol is the official one by default:

- ``turns="official"`` scores only the predictions on the turns the official modelling code predicts
  (``annotation.lib.weblinx_turns``); the others are listed in ``outside``, not scored. ``turns="all"`` scores
  every prediction, on any turn.
- ``rounding="official"`` rounds IoU, chrF and URL F1 to 2 decimals before the turn score and the means, as the
  official pipeline does by writing ``eval_scores.csv`` with ``round(2)``; the means are not rounded.
  ``rounding="exact"`` keeps every digit.

With both official, the aggregate equals ``compute_aggregated_scores`` on ``auto_eval_and_save``'s output for the
same predictions.

Where the official code crashes (a zero-area box compared with itself, an empty page, a submit without an
element after a click), this module picks the obvious score instead (IoU 0, no uids, keep the click).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from sacrebleu.metrics import CHRF

from annotation.lib.weblinx_turns import DEFAULT_TURN_SET, TURN_SETS, turn_indices

from . import DatasetError, PredictionError, mean, require_field
from .weblinx_data import load_replay, split_names
from .weblinx_pages import NO_PAGE, UID, DirectoryPages, PageLoader, PageState
from .weblinx_parse import normalize_intent, parse_output

ELEMENT_INTENTS = frozenset({"click", "hover", "textinput", "submit", "change", "scroll", "copy", "paste"})
TEXT_INTENTS = frozenset({"say", "textinput", "copy", "paste", "load", "change"})
CHECKED_INTENTS = frozenset({"change", "click", "textinput", "submit"})  # dropped when their element is unknown
AGGREGATE_KEYS = ("intent_match", "element_group", "text_group", "overall")
ROUNDINGS = ("official", "exact")
_CHRF = CHRF()  # sacrebleu's sentence_chrf defaults: char order 6, word order 0, beta 2


# --- actions: the reference of a turn and the parsed prediction ----------------------------------------------


@dataclass
class Action:
    """An intent, its arguments, and the element it acts on: ``{"uid", "bbox"}`` or None."""

    intent: str
    args: dict = field(default_factory=dict)
    element: dict | None = None


def _arguments(turn: dict) -> dict:
    return ((turn.get("action") or {}).get("arguments")) or {}


def raw_intent(turn: dict) -> str | None:
    """The browser intent as recorded (``textInput``), None for chat turns."""
    return (turn.get("action") or {}).get("intent")


def element_uid(element) -> object:
    attributes = element.get("attributes") if isinstance(element, dict) else None
    return attributes.get(UID) if isinstance(attributes, dict) else None


def element_info(uid, state: PageState) -> dict | None:
    """The element ``uid`` when it is both in the page HTML and in the bboxes file, else None."""
    if not uid or uid not in state.uids or state.bboxes is None or uid not in state.bboxes:
        return None
    return {"uid": uid, "bbox": state.bboxes[uid]}


def uid_at(bboxes: dict | None, x: float, y: float):
    """The uid of the smallest non-empty box containing (x, y), edges widened to whole pixels; first on ties."""
    best_uid, best_size = None, None
    for uid, box in (bboxes or {}).items():
        try:
            inside = math.floor(box["left"]) <= x <= math.ceil(box["right"])
            inside = inside and math.floor(box["top"]) <= y <= math.ceil(box["bottom"])
            size = box["width"] * box["height"] if inside else 0
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if size != 0 and (best_size is None or size < best_size):
            best_uid, best_size = uid, size
    return best_uid


def predicted_element(intent: str, args: dict, state: PageState) -> dict | None:
    """The element a predicted action targets: ``uid=``, else the smallest box under ``x``/``y``."""
    if intent not in ELEMENT_INTENTS:
        return None
    if "uid" in args:
        uid = args["uid"]
    elif UID in args:
        uid = args[UID]
    elif "x" in args and "y" in args:
        x, y = args["x"], args["y"]
        uid = None if x is None or y is None else uid_at(state.bboxes, x, y)
    else:
        # The official code also tries the centre of top/left/right/bottom, but only when they are ints, and
        # sanitising has just made them floats: that branch never finds an element.
        uid = None
    return None if uid is None else element_info(uid, state)


def predicted_action(output: str, state: PageState) -> Action:
    intent, args = parse_output(output)
    return Action(intent, args, predicted_element(intent, args, state))


def reference_action(turn: dict, state: PageState) -> Action | None:
    """The ground-truth action of a turn; None for a turn that is neither chat nor browser with an intent."""
    if turn.get("type") == "chat":
        return Action("say", {"speaker": turn.get("speaker"), "utterance": turn.get("utterance")})
    if turn.get("type") != "browser" or raw_intent(turn) is None:
        return None
    intent, arguments = normalize_intent(raw_intent(turn)), _arguments(turn)
    return Action(intent, reference_args(intent, arguments), reference_element(arguments.get("element"), state))


def reference_element(element, state: PageState) -> dict | None:
    """By uid from the page and bboxes; an element WITHOUT uid keeps the box recorded in the turn."""
    if not element or not isinstance(element, dict):
        return None
    uid = element_uid(element)
    if uid is not None:
        return element_info(uid, state)
    return {"uid": None, "bbox": element.get("bbox")}


def reference_args(intent: str, arguments: dict) -> dict:
    properties = arguments.get("properties") or {}
    if intent == "textinput":
        return {"text": arguments.get("text")}
    if intent == "change":
        return {"value": arguments.get("value")}
    if intent == "load":
        return {"url": properties.get("url") or arguments.get("url")}
    if intent == "scroll":
        return {"x": arguments.get("scrollX"), "y": arguments.get("scrollY")}
    if intent == "copy":
        return {"text": arguments.get("selected")}
    if intent == "paste":
        return {"text": arguments.get("pasted")}
    return {}


def drop_reason(reference: Action | None, next_turn: dict | None) -> str | None:
    """Why the official evaluator does not evaluate this reference (validate_reference_action), or None."""
    if reference is None:
        return "the turn has no action"
    if reference.intent not in CHECKED_INTENTS:
        return None
    if reference.element is None:
        return "the reference element is not in the page HTML and bboxes"
    if reference.element["uid"] is None:
        return f"the reference element has no {UID}"
    if next_turn is not None and reference.intent == "click":
        if raw_intent(next_turn) == "copy":
            return "a click followed by a copy"
        next_element = _arguments(next_turn).get("element")
        if raw_intent(next_turn) == "submit" and element_uid(next_element) == reference.element["uid"]:
            return "a click followed by a submit on the same element"
    return None


# --- metrics --------------------------------------------------------------------------------------------------


def texts(pred: Action, ref: Action) -> tuple:
    """The (predicted, reference) text compared for the predicted intent, as the official get_texts."""
    if pred.intent == "textinput":
        return _text_or_value(pred.args), _text_or_value(ref.args)
    key = {"say": "utterance", "load": "url", "change": "value"}.get(pred.intent)
    return (pred.args.get(key), ref.args.get(key)) if key else (None, None)


def _text_or_value(args: dict):
    return args.get("text") if "text" in args else args.get("value")


def chrf(pred: Action, ref: Action) -> float | None:
    if pred.intent != ref.intent or pred.intent not in TEXT_INTENTS:
        return None
    hypothesis, reference = texts(pred, ref)
    if type(hypothesis) is not str or type(reference) is not str:
        return 0.0
    return _CHRF.sentence_score(hypothesis, [reference]).score / 100


def iou(pred: Action, ref: Action) -> float | None:
    if pred.intent != ref.intent or pred.intent not in ELEMENT_INTENTS:
        return None
    a = (pred.element or {}).get("bbox")
    b = (ref.element or {}).get("bbox")
    if not a or not b:
        return 0.0
    try:
        width = max(0, min(a["right"], b["right"]) - max(a["left"], b["left"]))
        height = max(0, min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]))
        intersection = width * height
        union = _area(a) + _area(b) - intersection
    except (KeyError, TypeError):  # a malformed box (the official code crashes)
        return 0.0
    return intersection / union if union else 0.0  # official: ZeroDivisionError for two empty boxes


def _area(box: dict) -> float:
    return (box["right"] - box["left"]) * (box["bottom"] - box["top"])


def url_segments(url: str) -> set:
    """``https://www.a.com/b/c/`` -> {"a.com", "b", "c"}. ``lstrip("www.")`` strips any leading w and dots."""
    parsed = urlparse(url)
    path = parsed.path.strip("/")
    return {parsed.netloc.lstrip("www."), *(path.split("/") if path else [])}  # noqa: B005 (official behaviour)


def urlf(pred: Action, ref: Action) -> float | None:
    if pred.intent != ref.intent or pred.intent != "load":
        return None
    predicted, reference = texts(pred, ref)
    if not predicted or not reference or not isinstance(predicted, str) or not isinstance(reference, str):
        return 0.0
    try:
        predicted, reference = url_segments(predicted), url_segments(reference)
    except ValueError:
        return 0.0
    match = len(predicted & reference)
    if match == 0:
        return 0.0
    recall, precision = match / len(reference), match / len(predicted)
    return 2 * recall * precision / (precision + recall)


def exact_match(pred: Action, ref: Action) -> int:
    if pred.intent != ref.intent:
        return 0
    if pred.intent in ELEMENT_INTENTS:
        if not pred.element or not ref.element:
            return 0
        if pred.element["uid"] is None or pred.element["uid"] != ref.element["uid"]:
            return 0
    keys = {"say": ("utterance",), "textinput": ("text",), "change": ("value",), "load": ("url",)}
    keys["scroll"] = ("x", "y")
    return int(all(pred.args.get(key) == ref.args.get(key) for key in keys.get(pred.intent, ())))


def turn_score(iou_value, chrf_value, urlf_value):
    """The official compute_overall_score (before the wrong-intent zeroing)."""
    if iou_value is not None and chrf_value is not None:
        return iou_value * chrf_value
    for value in (urlf_value, chrf_value, iou_value):
        if value is not None:
            return value
    return None


def round2(value):
    """numpy/pandas ``round(2)``: half-to-even on the binary value times 100."""
    return value if value is None or value != value else round(value * 100) / 100


def score_turn(pred: Action, ref: Action, official_rounding: bool = False) -> dict:
    """The metrics of one evaluated turn; ``score`` is 0 on a wrong intent."""
    values = {"iou": iou(pred, ref), "chrf": chrf(pred, ref), "urlf": urlf(pred, ref)}
    if official_rounding:
        values = {name: round2(value) for name, value in values.items()}
    match = int(pred.intent == ref.intent)
    overall = turn_score(values["iou"], values["chrf"], values["urlf"])
    return {
        "intent": ref.intent,
        "predicted_intent": pred.intent,
        "intent_match": match,
        "exact_match": exact_match(pred, ref),
        **values,
        "score": overall if match else 0,
        "conditional_score": overall,
    }


# --- aggregation ----------------------------------------------------------------------------------------------


def _text_value(row: dict):
    present = [row[name] for name in ("chrf", "urlf") if row[name] is not None]
    return max(present) if present else None


def group_values(row: dict, unconditional: bool = True) -> dict:
    """The row's contribution to each group; a wrong intent is 0 everywhere when ``unconditional``."""
    if unconditional and not row["intent_match"]:
        return {"element_group": 0, "text_group": 0, "overall": 0}
    return {"element_group": row["iou"], "text_group": _text_value(row), "overall": row["conditional_score"]}


def aggregate(rows: Sequence[dict], unconditional: bool = True) -> dict:
    """Intent match, element group, text group and overall over evaluated turns (see the module docstring)."""
    groups = [group_values(row, unconditional) for row in rows]
    result = {"intent_match": mean(row["intent_match"] for row in rows)}
    for key in ("element_group", "text_group", "overall"):
        result[key] = mean(values[key] for values in groups if values[key] is not None)
    return {**result, "turns": len(rows)}


# The metrics compute_aggregated_scores reports per reference intent; it has no entry for the other intents
# (and raises KeyError on them), for which the metrics that apply to the intent are reported.
INTENT_METRICS = {
    "change": ("iou",),
    "click": ("iou",),
    "load": ("urlf",),
    "say": ("chrf",),
    "scroll": (),
    "submit": ("iou",),
    "textinput": ("chrf", "iou"),
    "hover": ("iou",),
    "copy": ("chrf", "iou"),
    "paste": ("chrf", "iou"),
}


def by_intent(rows: Sequence[dict]) -> dict:
    """Per reference intent: turns, and the unconditional mean of exact match, intent match and its metrics."""
    result = {}
    for intent in dict.fromkeys(row["intent"] for row in rows):
        mine = [row for row in rows if row["intent"] == intent]
        entry = {"turns": len(mine)}
        for name in ("exact_match", "intent_match", *INTENT_METRICS.get(intent, ())):
            values = [row[name] if row["intent_match"] else 0 for row in mine]
            entry[name] = mean(value for value in values if value is not None)
        result[intent] = entry
    return result


# --- public API -----------------------------------------------------------------------------------------------


def check_prediction(prediction, index: int, known: Mapping | set, where: str) -> tuple[str, int, str]:
    """``(demo_name, turn_index, output_predicted)`` of a well-formed prediction, else PredictionError."""
    name = require_field(prediction, index, "demo_name", (str,), "a string")
    turn_index = require_field(prediction, index, "turn_index", (int,), "an integer")
    output = require_field(prediction, index, "output_predicted", (str,), "a string")
    if name not in known:
        raise PredictionError(f"prediction {index}: field 'demo_name' {name!r} is not {where}")
    return name, turn_index, output


def check_protocol(turns: str, rounding: str) -> None:
    if turns not in TURN_SETS:
        raise PredictionError(f"turns: expected one of {', '.join(TURN_SETS)}, got {turns!r}")
    if rounding not in ROUNDINGS:
        raise PredictionError(f"rounding: expected one of {', '.join(ROUNDINGS)}, got {rounding!r}")


def score(
    replays: Mapping[str, dict],
    pages: PageLoader,
    predictions: Sequence[dict],
    *,
    turns: str = DEFAULT_TURN_SET,
    rounding: str = "official",
) -> dict:
    """Score predictions against loaded replays (``{demo_name: replay.json content}``), pages from ``pages``.

    Returns ``{"per_turn", "aggregate", "conditional", "by_intent", "dropped", "outside", "predictions", "turns",
    "rounding"}``; the module docstring defines each number. Rows keep the order of the predictions.
    """
    check_protocol(turns, rounding)
    if not isinstance(predictions, list):
        raise PredictionError(f"predictions must be a list, got {type(predictions).__name__}")
    rows, dropped, outside, seen, chosen = [], [], [], {}, {}
    official = rounding == "official"
    for index, prediction in enumerate(predictions):
        name, turn_index, output = check_prediction(prediction, index, replays, "a known demonstration")
        replay_turns = locate_turn(replays[name], name, turn_index, index, seen)
        if name not in chosen:
            chosen[name] = scored_turns(replay_turns, turns)
        if turn_index not in chosen[name]:
            outside.append({"demo_name": name, "turn_index": turn_index})
            continue
        row = score_prediction(replay_turns, turn_index, output, lambda page, name=name: pages(name, page), official)
        (dropped if "reason" in row else rows).append({"demo_name": name, "turn_index": turn_index, **row})
    return {
        "turns": turns,
        "rounding": rounding,
        "per_turn": rows,
        "aggregate": aggregate(rows),
        "conditional": aggregate(rows, unconditional=False),
        "by_intent": by_intent(rows),
        "dropped": dropped,
        "outside": outside,
        "predictions": len(predictions),
    }


def scored_turns(replay_turns: list, turns: str) -> set[int]:
    """The positions a prediction may be scored on: the official turn set's, or with ``all`` any turn."""
    return set(range(len(replay_turns))) if turns == "all" else set(turn_indices(replay_turns, turns))


def locate_turn(replay: dict, name: str, turn_index: int, index: int, seen: dict) -> list:
    """The turns of the replay once ``turn_index`` is known to be in range and not predicted twice."""
    turns = replay.get("data") if isinstance(replay, dict) else None
    if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
        raise DatasetError(f"replay of {name!r} has no 'data' list of turn objects")
    if not 0 <= turn_index < len(turns):
        raise PredictionError(
            f"prediction {index}: field 'turn_index' {turn_index} is out of range for {name!r} ({len(turns)} turns)"
        )
    if (name, turn_index) in seen:
        raise PredictionError(
            f"prediction {index}: fields 'demo_name', 'turn_index' repeat prediction {seen[name, turn_index]}"
        )
    seen[name, turn_index] = index
    return turns


def score_prediction(turns: list, turn_index: int, output: str, pages, official_rounding: bool) -> dict:
    """The metrics of the turn, or ``{"reason"}`` when the official evaluator does not evaluate it."""
    turn = turns[turn_index]
    state = _state(turn, pages)
    reference = reference_action(turn, state)
    reason = drop_reason(reference, turns[turn_index + 1] if turn_index + 1 < len(turns) else None)
    if reason:
        return {"reason": reason}
    return score_turn(predicted_action(output, state), reference, official_rounding)


def _state(turn: dict, pages) -> PageState:
    page = (turn.get("state") or {}).get("page")
    return NO_PAGE if page is None else pages(page)


def evaluate(
    data_dir: Path, split: str, predictions: list[dict], *, turns: str = DEFAULT_TURN_SET, rounding: str = "official"
) -> dict:
    """Score predictions (the official results.json format) against split ``split`` of a WebLINX export, with the
    protocol ``turns`` and ``rounding`` (the module docstring)."""
    check_protocol(turns, rounding)
    data_dir = Path(data_dir)
    names = set(split_names(data_dir, split))
    if not isinstance(predictions, list):
        raise PredictionError(f"predictions must be a list, got {type(predictions).__name__}")
    for index, prediction in enumerate(predictions):
        check_prediction(prediction, index, names, f"in split {split!r}")
    demos_dir = data_dir / "demonstrations"
    wanted = dict.fromkeys(prediction["demo_name"] for prediction in predictions)
    replays = {name: load_replay(demos_dir / name) for name in wanted}
    return score(replays, DirectoryPages(demos_dir), predictions, turns=turns, rounding=rounding)
