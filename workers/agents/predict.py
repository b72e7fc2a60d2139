"""Model predictions for a WebLINX or Mind2Web export split, from an OpenAI-compatible endpoint (``agents.llm``):
the predictions file that ``manage.py evaluate`` and ``POST /api/evaluations/`` take (``docs/agents.md``,
"Predictions for WebLINX and Mind2Web").

- **WebLINX**: one request per turn of the turn set (``annotation.lib.weblinx_turns``: by default the turns the
  official modelling code predicts; ``all``: every turn but the instructor's chat); the answer is the next action
  string, ``click(uid="…")``, ``say(speaker="navigator", utterance="…")``, … The prompt follows
  the official WebLINX action-model prompt and is built with the official ``weblinx`` package's processing: the
  instructor's first and last utterances (``processing.prompt.format_utterances``), the previous turns
  (``format_prev_turns`` with ``utils.format.format_intent_automatically``) and the page's HTML pruned to the
  elements that carry a uid (``processing.dom.remove_html_comments`` + ``get_tree_repr_simple``), cut to
  ``html_chars``. Prediction: ``{demo_name, turn_index, output_predicted}`` (the official results.json).
- **Mind2Web**: one request per step, a multiple choice as the paper's LLM baselines (MindAct): the page's cleaned
  HTML, the task, the previous actions and the step's candidates ranked (the export has no ranker scores: by word
  overlap with the task and previous actions, a stand-in for the paper's cross-encoder; ``candidates`` kept),
  with ``A. None of the above`` first; the answer names a letter, an action (CLICK, TYPE, SELECT) and a value.
  Prediction: ``{annotation_id, action_index, backend_node_id, operation: {op, value}}``; "None of the above" is a
  null element.

An answer that cannot be read (no known intent; no valid letter or action) is **recorded, never fatal**: it goes
into ``failures`` with the raw answer and the reason; for WebLINX the raw answer is still the prediction (the
official evaluator scores it, 0 for a wrong intent), for Mind2Web the step has no prediction (scored 0). An
endpoint that cannot be used (``EndpointError``) stops the run with its reason; a spent budget
(``BudgetExhausted``) stops it cleanly with what it has. ``in_flight`` requests are open at once; a cancel stops
them within a heartbeat: no request starts and none is tried again after that.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import lxml.etree
import lxml.html
import weblinx
from weblinx.processing.dom import get_tree_repr_simple, remove_html_comments
from weblinx.processing.prompt import format_prev_turns, format_utterances
from weblinx.utils.format import format_intent_automatically

from agents.llm import BudgetExhausted, ChatClient, Stopped
from annotation.lib.weblinx_turns import DEFAULT_TURN_SET, TURN_SETS, turn_indices

from ..exports.metrics import MetricsError, mind2web
from ..exports.metrics import weblinx as weblinx_metrics
from ..exports.metrics.weblinx import split_names
from ..exports.metrics.weblinx_parse import UNKNOWN, parse_output

FORMATS = ("weblinx", "mind2web")


class PredictError(ValueError):
    """The export or split cannot be read (the message names what)."""


@dataclass
class Settings:
    candidates: int = 10  # Mind2Web: options shown (besides "None of the above")
    html_chars: int = 8000  # characters of the page kept in a prompt
    prev_turns: int = 5  # WebLINX: previous turns shown; Mind2Web: previous actions shown
    utterances: int = 5  # WebLINX: instructor utterances shown (the first and the last ones)
    turns: str = DEFAULT_TURN_SET  # WebLINX: the turns asked about (annotation.lib.weblinx_turns)
    rounding: str = "official"  # WebLINX: the evaluation's rounding (workers.exports.metrics.weblinx)


@dataclass
class Item:
    """One request: where its prediction goes (``key``), the messages, and for Mind2Web the options."""

    key: dict
    messages: list[dict]
    options: list[dict] = field(default_factory=list)


# --- WebLINX --------------------------------------------------------------------------------------------------

WEBLINX_SYSTEM = (
    "You are an AI assistant with a deep understanding of HTML and you must predict actions based on a user "
    "request, which will be executed. Use one of the following, replacing [] with an appropriate value: "
    "change(value=[str], uid=[str]) ; click(uid=[str]) ; load(url=[str]) ; "
    'say(speaker="navigator", utterance=[str]) ; scroll(x=[int], y=[int]) ; submit(uid=[str]) ; '
    "text_input(text=[str], uid=[str]) ;\n"
    "The user's first and last {utterances} utterances are: {utterance_context} ;\n"
    "Viewport size: {height}h x {width}w ;\n"
    "Only the last {prev_turns} turns are provided."
)
WEBLINX_USER = (
    "{html}\n\nHere are the last {prev_turns} actions: {previous}\n\n"
    "Please select the best action using the correct format, do not provide any other information or explanation."
)


def page_html(turn) -> str | None:
    """The HTML of the page the turn was taken on, when the export has it."""
    try:
        return turn.html if turn.has_html() else None
    except (KeyError, TypeError, ValueError, OSError):
        return None


def weblinx_page(html: str | None, html_chars: int) -> str:
    """The page as the model reads it: comments removed, the tree in the official simple format, cut."""
    if not html:
        return "No page is open."
    try:
        tree = lxml.html.fromstring(html)
        remove_html_comments(tree)  # in place
        text = get_tree_repr_simple(tree, copy=False) or ""
    except (ValueError, lxml.etree.ParserError):
        return "The page could not be read."
    return text if len(text) <= html_chars else text[:html_chars] + " …"


def viewport(turn, side: str):
    try:
        return getattr(turn, side) or "unknown"
    except (KeyError, TypeError, AttributeError):
        return "unknown"


def weblinx_items(data: Path, split: str, settings: Settings) -> list[Item]:
    names = split_names(data, split)
    demos = data / "demonstrations"
    items = []
    for name in names:
        path = demos / name / "replay.json"
        try:
            replay_json = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PredictError(f"{path}: not readable JSON ({exc})") from exc
        replay = weblinx.Replay(replay_json, demo_name=name, base_dir=str(demos))
        chats = [turn for turn in replay if turn.type == "chat" and turn.get("speaker") == "instructor"]
        asked = set(turn_indices(replay_json.get("data") or [], settings.turns))
        html = None  # the page last seen: a chat turn is answered on it
        for turn in replay:
            html = page_html(turn) or html
            if turn.index not in asked:
                continue
            earlier = [chat for chat in chats if chat.index < turn.index]
            context = format_utterances(earlier, num_utterances=settings.utterances)
            previous = format_prev_turns(
                replay, turn, format_intent=format_intent_automatically, num_prev_turns=settings.prev_turns
            )
            system = WEBLINX_SYSTEM.format(
                utterances=settings.utterances,
                utterance_context=context,
                height=viewport(turn, "viewport_height"),
                width=viewport(turn, "viewport_width"),
                prev_turns=settings.prev_turns,
            )
            user = WEBLINX_USER.format(
                html=weblinx_page(html, settings.html_chars),
                prev_turns=settings.prev_turns,
                previous=previous or "none",
            )
            items.append(
                Item(
                    {"demo_name": name, "turn_index": turn.index},
                    [{"role": "system", "content": system}, {"role": "user", "content": user}],
                )
            )
    return items


def weblinx_prediction(item: Item, text: str) -> tuple[dict, str | None]:
    """The prediction (the raw answer, trimmed to its first line that parses) and the problem, if any."""
    lines = [line.strip().strip("`") for line in text.strip().splitlines() if line.strip().strip("`")]
    for line in lines:
        if parse_output(line)[0] != UNKNOWN:
            return {**item.key, "output_predicted": line}, None
    return {**item.key, "output_predicted": text.strip()}, "no action the evaluator knows (click(...), say(...), …)"


# --- Mind2Web -------------------------------------------------------------------------------------------------

MIND2WEB_USER = (
    "'''\n{html}\n'''\n\nBased on the HTML webpage above, try to complete the following task:\n"
    "Task: {task}\nPrevious actions:\n{previous}\n"
    "What should be the next action? Please select from the following choices "
    "(If the correct action is not in the page above, please select A. 'None of the above'):\n\n{choices}\n\n"
    "Answer in this format:\nAnswer: <letter>.\nAction: <CLICK, TYPE or SELECT>\nValue: <the text to type or "
    "the option to select; empty for CLICK>"
)
MIND2WEB_SYSTEM = "You are a helpful assistant that is great at website design, navigation, and executing tasks."
OPERATIONS = ("CLICK", "TYPE", "SELECT")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
WORD = re.compile(r"[a-z0-9]+")


def candidate_text(candidate: dict) -> str:
    """``<tag attr=value …>`` of a Mind2Web candidate (its ``attributes`` is a JSON string)."""
    try:
        attributes = json.loads(candidate.get("attributes") or "{}")
    except ValueError:
        attributes = {}
    shown = " ".join(
        f"{k}={str(v)[:60]!r}" for k, v in attributes.items() if k not in ("backend_node_id", "bounding_box_rect")
    )
    return f"<{candidate.get('tag', 'element')} {shown}>".replace(" >", ">")


def ranked(candidates: list[dict], query: str, keep: int) -> list[dict]:
    """The candidates most like ``query`` (shared words), stable for ties; ``keep`` of them."""
    words = set(WORD.findall(query.lower()))

    def overlap(candidate):
        return len(words & set(WORD.findall(candidate_text(candidate).lower())))

    return sorted(candidates, key=overlap, reverse=True)[:keep]


def mind2web_items(data: Path, split: str, settings: Settings) -> list[Item]:
    path = data / f"{split}.json"
    if not path.is_file():
        present = sorted(p.stem for p in data.glob("*.json"))
        raise PredictError(f"unknown split {split!r}; {data} has: {', '.join(present) or 'no <split>.json files'}")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PredictError(f"{path}: not readable JSON ({exc})") from exc
    items = []
    for record in records:
        task = record.get("confirmed_task", "")
        reprs = record.get("action_reprs") or []
        for index, action in enumerate(record.get("actions") or []):
            previous = reprs[max(0, index - settings.prev_turns) : index]
            pool = [*(action.get("pos_candidates") or []), *(action.get("neg_candidates") or [])]
            options = ranked(pool, " ".join([task, *previous]), settings.candidates)
            choices = ["A. None of the above"] + [
                f"{LETTERS[i + 1]}. {candidate_text(c)}" for i, c in enumerate(options[: len(LETTERS) - 1])
            ]
            html = action.get("cleaned_html") or ""
            user = MIND2WEB_USER.format(
                html=html if len(html) <= settings.html_chars else html[: settings.html_chars] + " …",
                task=task,
                previous="\n".join(previous) or "None",
                choices="\n".join(choices),
            )
            items.append(
                Item(
                    {"annotation_id": record["annotation_id"], "action_index": index},
                    [{"role": "system", "content": MIND2WEB_SYSTEM}, {"role": "user", "content": user}],
                    options,
                )
            )
    return items


ANSWER = re.compile(r"answer\s*[:：]\s*\(?([A-Z])\b", re.IGNORECASE)
ACTION = re.compile(r"action\s*[:：]\s*([A-Za-z]+)", re.IGNORECASE)
VALUE = re.compile(r"value\s*[:：][ \t]*(.*)", re.IGNORECASE)


def mind2web_prediction(item: Item, text: str) -> tuple[dict | None, str | None]:
    """The prediction read from the answer (letter, action, value), or None and the problem."""
    letter = ANSWER.search(text)
    if letter is None:
        return None, "no 'Answer: <letter>'"
    position = LETTERS.index(letter.group(1).upper())
    if position > len(item.options):
        return None, f"answer {letter.group(1).upper()} is not one of the {len(item.options) + 1} choices"
    node = None if position == 0 else item.options[position - 1].get("backend_node_id")
    action = ACTION.search(text)
    op = action.group(1).upper() if action else ("CLICK" if position == 0 else None)
    if op not in OPERATIONS:
        return None, f"action {op!r} is not one of {', '.join(OPERATIONS)}" if op else "no 'Action: <operation>'"
    value = VALUE.search(text)
    value = value.group(1).strip() if value and op != "CLICK" else ""
    return {**item.key, "backend_node_id": node, "operation": {"op": op, "value": value}}, None


# --- The run --------------------------------------------------------------------------------------------------

ITEMS = {"weblinx": weblinx_items, "mind2web": mind2web_items}
READ = {"weblinx": weblinx_prediction, "mind2web": mind2web_prediction}


def items_for(fmt: str, data: Path | str, split: str, settings: Settings | None = None) -> list[Item]:
    """Every request of the split, in order (PredictError naming what cannot be read)."""
    if fmt not in FORMATS:
        raise PredictError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    data, settings = Path(data), settings or Settings()
    if settings.turns not in TURN_SETS:
        raise PredictError(f"turns: expected one of {', '.join(TURN_SETS)}, got {settings.turns!r}")
    if not data.is_dir():
        raise PredictError(f"data directory {data} does not exist")
    try:
        return ITEMS[fmt](data, split, settings)
    except MetricsError as exc:
        raise PredictError(str(exc)) from exc


def predict(
    fmt: str,
    data: Path | str,
    split: str,
    client: ChatClient,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
    tick: float = 0.5,
) -> dict:
    """Ask the model for every item of the split; returns ``{"format", "split", "predictions", "failures",
    "usage", "stopped"}``: predictions in split order, ``failures`` ``[{key…, "answer", "error"}]``, ``usage``
    (answers, cached, tokens in and out, model seconds), ``stopped`` the reason a budget ended the run early (or
    None). ``EndpointError`` propagates (the run fails with its reason). ``progress(done, total)`` is called in this
    thread as answers come and at least every ``tick`` seconds while requests hang (a job's heartbeat, whose
    cancel raises): whatever it raises sets the client's ``stop`` (no request starts, none is tried again) and is
    raised at once, not waiting for the requests in flight (each runs out its timeout in its thread)."""
    items = items_for(fmt, data, split, settings)
    read = READ[fmt]
    usage = {"answers": 0, "cached": 0, "tokens_in": 0, "tokens_out": 0, "seconds": 0.0}
    if client.stop is None:
        client.stop = threading.Event()
    halt = threading.Event()  # a spent budget: nothing new is asked, the tries under way go on

    def ask(item: Item):
        if halt.is_set() or client.stop.is_set():
            return None
        try:
            return client.complete(item.messages)
        except Stopped:
            return None
        except BudgetExhausted as exc:
            halt.set()
            return exc

    answers: list = [None] * len(items)
    pool = ThreadPoolExecutor(max_workers=client.endpoint.in_flight, thread_name_prefix="predict")
    futures = {pool.submit(ask, item): index for index, item in enumerate(items)}
    pending, done = set(futures), 0
    try:
        while pending:
            finished, pending = wait(pending, timeout=tick, return_when=FIRST_COMPLETED)
            for future in finished:
                answer = answers[futures[future]] = future.result()  # EndpointError: raised here
                done += 1
                if answer is not None and not isinstance(answer, BudgetExhausted):
                    usage["answers"] += 1
                    usage["cached"] += int(answer.cached)
                    usage["tokens_in"] += answer.tokens_in
                    usage["tokens_out"] += answer.tokens_out
                    usage["seconds"] += answer.seconds
            if progress:  # in this thread: a job's heartbeat (and its cancel) uses this thread's database
                progress(done, len(items))
    except BaseException:  # a cancel, an interrupt or a failed endpoint: nothing more is sent, nothing waited for
        client.stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    predictions, failures, stopped = [], [], None
    for item, answer in zip(items, answers, strict=True):
        if answer is None or isinstance(answer, BudgetExhausted):
            stopped = stopped or (str(answer) if answer is not None else None)
            continue
        prediction, problem = read(item, answer.text)
        if prediction is not None:
            predictions.append(prediction)
        if problem:
            failures.append({**item.key, "answer": answer.text, "error": problem})
    if halt.is_set() and stopped is None:
        stopped = "the budget is spent"
    return {
        "format": fmt,
        "split": split,
        "items": len(items),
        "predictions": predictions,
        "failures": failures,
        "usage": usage,
        "stopped": stopped,
    }


def evaluate(fmt: str, data: Path | str, split: str, predictions: list[dict], settings: Settings | None = None) -> dict:
    """The evaluation of ``predictions`` (``workers.exports.metrics``), as ``manage.py evaluate`` writes it; WebLINX
    with the settings' ``turns`` and ``rounding``."""
    data, settings = Path(data), settings or Settings()
    if fmt == "weblinx":
        return weblinx_metrics.evaluate(data, split, predictions, turns=settings.turns, rounding=settings.rounding)
    records = json.loads((data / f"{split}.json").read_text(encoding="utf-8"))
    return mind2web.evaluate(records, predictions)
