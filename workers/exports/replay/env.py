"""A replayed Mind2Web task as an agent environment (docs/mind2web.md#replayed-tasks-as-an-agent-environment).

``ReplayEnv(task).reset()`` opens the task's first page in the replay engine's Chromium (every request answered
from the HAR); each observation is the live page before a step (its HTML as the browser has it), the step's
candidates and ``cleaned_html`` as the Mind2Web export builds them, the task and the history of recorded actions.
``step(prediction)`` performs ``{"element": backend_node_id | data-webtasks-id, "op", "value"}`` (or None: no
action) on the live page, scores it against the recorded action with ``metrics.mind2web.score_step``, then moves to
the recorded page before the next step, whatever the agent did (teacher forcing, as Mind2Web's offline
evaluation): an action scored as the recorded one carries on from where it led; no action, or a wrong one, is
followed by the recorded step, after rewinding (a fresh responder, the first page loaded again, the recorded steps
before replayed) when the agent changed the page."""

import json
from dataclasses import dataclass, field

from annotation.lib.shapes import as_dict, as_text
from annotation.models import Demonstration

from ..dataset import storage_blobs, to_export_demo
from ..exporters.mind2web import PageSource, annotation_id, confirmed_task, steps
from ..exporters.mind2web.page import UID_ATTRIBUTE, parse
from ..metrics.mind2web import score_step
from .engine import Browser, ReplayError, ReplayStep, perform
from .har import Responder, bare
from .run import replay_step

OPS = ("CLICK", "TYPE", "SELECT")


@dataclass
class ReplayTask:
    """A recorded task ready to replay: its Mind2Web record, the steps as the engine performs them, its traffic and
    the recorded page of each step (to act on an element named by ``backend_node_id``)."""

    annotation_id: str
    confirmed_task: str
    actions: list  # the record's ``actions`` (pos_candidates, neg_candidates, cleaned_html, operation)
    reprs: list
    steps: list  # ReplayStep
    entries: list  # HAR entries in step order
    mhtml: list = field(default_factory=list)  # bytes of the MHTML snapshots
    pages: list = field(default_factory=list)  # bytes (or None) of each step's recorded DOM snapshot

    def record(self) -> dict:
        return {"annotation_id": self.annotation_id, "actions": self.actions}

    def responder(self) -> Responder:
        responder = Responder(self.entries)
        for data in self.mhtml:
            responder.add_mhtml(data)
        return responder


def load_task(demo: Demonstration) -> ReplayTask:
    """The task of a demonstration with traffic (``annotation.actions.exports.replays.check_replay``)."""
    value = to_export_demo(demo, "", "mind2web")
    with storage_blobs() as blobs:
        done = steps(value, PageSource(blobs))
        entries = []
        for turn in value.turns:
            if turn.har:
                entries += json.loads(blobs.read(turn.har))["log"]["entries"]
        mhtml = [blobs.read(step.snapshot) for step in done if step.snapshot]
        pages = [blobs.read(step.turn.page) if step.turn and step.turn.page else None for step in done]
    return ReplayTask(
        annotation_id=annotation_id(value),
        confirmed_task=confirmed_task(value),
        actions=[json.loads(step.action) for step in done],
        reprs=[step.repr for step in done],
        steps=[replay_step(step) for step in done],
        entries=entries,
        mhtml=mhtml,
        pages=pages,
    )


def check_action(action) -> dict | None:
    """``{"element", "op", "value"}`` normalised; None for no action; ValueError naming the field otherwise."""
    if action is None or action == {}:
        return None
    if not isinstance(action, dict):
        raise ValueError(f"an action must be an object or null, got {type(action).__name__}")
    element = action.get("element")
    if element is not None and (isinstance(element, bool) or not isinstance(element, str | int)):
        raise ValueError(f"field 'element' must be a backend_node_id, a data-webtasks-id or null, got {element!r}")
    op = action.get("op")
    if op not in OPS:
        raise ValueError(f"field 'op' must be one of {', '.join(OPS)}, got {op!r}")
    value = action.get("value")
    if value is not None and not isinstance(value, str):
        raise ValueError(f"field 'value' must be a string, got {type(value).__name__}")
    return {"element": None if element is None else str(element), "op": op, "value": value or ""}


def candidates(action: dict) -> list[dict]:
    """The step's candidates (positives and negatives together) in ``backend_node_id`` order."""
    found = [*(action.get("pos_candidates") or ()), *(action.get("neg_candidates") or ())]
    return sorted(found, key=lambda c: int(c["backend_node_id"]) if str(c["backend_node_id"]).isdigit() else 0)


def original_target(action: dict) -> str | None:
    for candidate in action.get("pos_candidates") or ():
        if as_dict(candidate).get("is_original_target"):
            return str(candidate["backend_node_id"])
    return None


class RecordedPage:
    """A step's recorded DOM snapshot numbered as the export numbers it (``backend_node_id``: document order from
    1), to find an element's ``data-webtasks-id``, xpath, tag, text and attributes."""

    def __init__(self, page: bytes | None):
        self.root = parse(page) if page else None
        self.elements = list(self.root.iter()) if self.root is not None else []
        self.elements = [e for e in self.elements if isinstance(e.tag, str)]
        self.by_uid = {e.get(UID_ATTRIBUTE): i + 1 for i, e in enumerate(self.elements) if e.get(UID_ATTRIBUTE)}

    def node_id(self, element: str) -> str | None:
        """The ``backend_node_id`` of an element named by it or by its ``data-webtasks-id``."""
        if element.isdigit() and 1 <= int(element) <= len(self.elements):
            return element
        found = self.by_uid.get(element)
        return None if found is None else str(found)

    def replay_step(self, node_id: str, action: dict, url: str) -> ReplayStep:
        element = self.elements[int(node_id) - 1]
        attributes = {str(k): str(v) for k, v in element.attrib.items()}
        return ReplayStep(
            action_uid="",
            op=action["op"],
            original_op=action["op"],
            value=action["value"],
            url=url,
            tag=str(element.tag).lower(),
            uid=attributes.get(UID_ATTRIBUTE),
            xpath=self.root.getroottree().getpath(element),
            attributes=attributes,
            text=" ".join("".join(element.itertext()).split()),
        )


class ReplayEnv:
    """One task's environment; ``close()`` (or ``with``) stops its browser."""

    def __init__(self, task: ReplayTask):
        self.task, self.browser, self.index, self.log = task, None, 0, []
        self.predictions: list[dict] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None

    def reset(self) -> dict:
        """Open the task's first page offline; the first observation."""
        self.close()
        self.index, self.log, self.predictions = 0, [], []
        if not self.task.steps:
            raise ReplayError(f"task {self.task.annotation_id!r} has no steps")
        self.browser = Browser(self.task.responder())
        if not self.browser.navigate(self.task.steps[0].url):
            raise ReplayError(f"the first page {self.task.steps[0].url} could not be loaded from the HAR")
        return self.observation()

    @property
    def done(self) -> bool:
        return self.index >= len(self.task.steps)

    def observation(self) -> dict:
        action = self.task.actions[self.index]
        return {
            "annotation_id": self.task.annotation_id,
            "task": self.task.confirmed_task,
            "action_index": self.index,
            "url": self.browser.location(),
            "html": self.browser.evaluate("document.documentElement.outerHTML") or "",
            "cleaned_html": action.get("cleaned_html") or "",
            "candidates": candidates(action),
            "previous_actions": self.task.reprs[: self.index],
        }

    def reference(self) -> dict:
        """The recorded action of the current step, as an action (only the oracle is given it)."""
        action = self.task.actions[self.index]
        operation = as_dict(action.get("operation"))
        element = original_target(action)
        return {"element": element, "op": as_text(operation.get("op")), "value": as_text(operation.get("value"))}

    def step(self, action) -> tuple[dict, dict | None]:
        """Perform ``action`` on the live page, score it, move to the recorded page before the next step:
        ``(score, next observation or None at the end)``."""
        if self.done:
            raise ReplayError("the task is over: reset() it")
        prediction = check_action(action)
        index, recorded = self.index, self.task.actions[self.index]
        page = RecordedPage(self.task.pages[index])
        node = None if prediction is None or prediction["element"] is None else page.node_id(prediction["element"])
        scored = None
        if prediction is not None:
            scored = {"backend_node_id": node, "op": prediction["op"], "value": prediction["value"]}
            operation = {"op": prediction["op"], "value": prediction["value"]}
            self.predictions.append(
                {"annotation_id": self.task.annotation_id, "action_index": index, "backend_node_id": node}
                | {"operation": operation}
            )
        score = {"action_index": index, **score_step(recorded, scored)}
        why = self.perform(prediction, node, page, recorded) if prediction is not None else "no action"
        score["performed"] = why is None
        if why:
            score["why"] = why
        score["restored"] = self.advance(prediction is None, bool(score["step_success"]))
        self.log.append(score)
        self.index += 1
        return score, None if self.done else self.observation()

    def perform(self, prediction: dict, node: str | None, page: RecordedPage, recorded: dict) -> str | None:
        """Do the predicted action on the live page; why it could not be done, or None. The recorded action is
        performed as the replay performs it (by the turn's own element description)."""
        step = self.task.steps[self.index]
        if node is not None and node == original_target(recorded) and prediction["op"] == step.op:
            target = ReplayStep(**{**step.__dict__, "value": prediction["value"]})
        elif node is not None and page.root is not None:
            target = page.replay_step(node, prediction, step.url)
        else:
            return f"element {prediction['element']!r} is not on the step's page"
        try:
            return perform(self.browser, target)
        except ReplayError as error:
            return str(error)

    def advance(self, untouched: bool, succeeded: bool) -> bool:
        """Bring the page to the recorded state before the next step; whether it had to be rewound."""
        following = self.index + 1
        if following >= len(self.task.steps):
            self.browser.cdp.pump(0.2)
            return False
        url = self.task.steps[following].url
        if untouched:
            perform(self.browser, self.task.steps[self.index])
        if (untouched or succeeded) and self.browser.wait_for(url):
            return False
        self.rewind(following)
        return True

    def rewind(self, index: int) -> None:
        """A fresh responder, the first page loaded again and the recorded steps before ``index`` replayed."""
        self.browser.responder = self.task.responder()
        self.browser.call("Page.navigate", {"url": "about:blank"})
        self.browser.wait_for("about:blank")
        first = self.task.steps[0].url
        if not self.browser.navigate(first):
            raise ReplayError(f"rewinding: the first page {first} could not be loaded")
        for position in range(index):
            why = perform(self.browser, self.task.steps[position])
            url = self.task.steps[position + 1].url
            if why or not self.browser.wait_for(url):
                raise ReplayError(f"rewinding: recorded step {position + 1} did not lead to {bare(url)}: {why or ''}")
