"""Baseline solvers: ``oracle`` (gold answers through the action library), ``do-nothing``, and offline predictions.

The oracle follows the official ``OracleBaseline`` (spec §4.7): text-like fields get a random non-empty gold
(seeded per instance here), radio and select the majority (ties to the first seen); other input types raise. Where
the official one falls below the best annotator it differs: a checkbox group is set to one annotator's boxes
exactly (``set_checkbox``: boxes already checked stay so, unlisted ones are unchecked; the official clicks, which
toggle, and only when the group's first box is unchecked), and a range gets the median of the answers (the
official mean is off the control's step and scores below the median, the best point of the range score). It
skips the official ``sleep(0.1)`` and ``maximize_window`` (the harness waits for conditions).
"""

from __future__ import annotations

import importlib
import random

from . import ceiling, scoring
from .actions import ActionError
from .harness import FieldRequest, Solver

TEXT_LIKE = ("text", "textarea", "password", "email", "number", "tel", "url")


class DoNothing(Solver):
    """Leaves every field as the page shows it."""

    name = "do-nothing"

    def solve(self, request: FieldRequest) -> None:
        return None


class Oracle(Solver):
    """Fills each field with the gold answer through the action library; its calls are the gold action
    sequences."""

    name = "oracle"
    uses_gold = True

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = random.Random(seed)

    def begin_instance(self, task, instance: int) -> None:
        """Each instance draws from its own generator (seed, task, instance), so its choices do not depend on
        which instances ran before it in the same browser (runs spread over several browsers)."""
        self.rng = random.Random(f"{self.seed}:{task.name}:{instance}")

    def solve(self, request: FieldRequest) -> None:
        actions, name = request.actions, request.name
        actions.scroll_to_element(name)
        answers = [answer for answer in request.gold if answer is not None and answer != "{}"]
        if not answers:
            return
        if request.type in TEXT_LIKE:
            actions.modify_text(name, self._text_answer(answers))
        elif request.type == "checkbox":
            actions.set_checkbox(name, self.rng.choice(answers))
        elif request.type == "radio":
            actions.modify_radio(name, str(scoring.majority(answers)))
        elif request.type == "select":
            actions.modify_select(name, str(scoring.majority(answers)))
        elif request.type == "range":
            values = [float(answer) for answer in answers if ceiling.is_number(answer)]
            if values:
                actions.modify_range(name, ceiling.median(values))
        else:
            raise ActionError(f"the oracle does not handle input type {request.type!r}")

    def _text_answer(self, answers: list):
        cleaned = ["" if scoring.is_nan(a) or a in scoring.EMPTY_TEXT_GOLD else a for a in answers]
        distinct = list(dict.fromkeys(scoring.clean_values(cleaned)))  # a stable order, so the seed decides
        non_empty = [answer for answer in distinct if answer != ""]
        return self.rng.choice(non_empty or distinct)


class Predictions(Solver):
    """Applies offline predictions (``{field name: value}`` per instance) through the action library, the way
    the official offline path executes action strings: the method follows the field's type on the page."""

    name = "predictions"

    def __init__(self, predictions: dict[tuple[str, int], dict]):
        self.predictions = predictions
        self.current: dict = {}

    def begin_instance(self, task, instance: int) -> None:
        self.current = self.predictions.get((task.name, instance), {})

    def solve(self, request: FieldRequest) -> None:
        if request.name not in self.current:
            return  # left out: the page's default is scored
        value, actions = self.current[request.name], request.actions
        if request.type in TEXT_LIKE:
            actions.modify_text(request.name, value)
        elif request.type == "checkbox":
            actions.modify_checkbox(request.name, value)
        elif request.type == "radio":
            actions.modify_radio(request.name, value)
        elif request.type == "select":
            actions.modify_select(request.name, value)
        elif request.type == "range":
            actions.modify_range(request.name, value)
        else:
            raise ActionError(f"no action fills an input of type {request.type!r}")


BASELINES = {"oracle": Oracle, "do-nothing": DoNothing}


class SolverSpecError(ValueError):
    """A solver name that names no usable solver."""


def spec_parts(spec: str) -> tuple[str, str] | None:
    """``(module, class name)`` of a ``python:module:Class`` spec, None for a baseline; ``SolverSpecError`` for
    anything else. Nothing is imported (the platform checks the module against its allowed list first)."""
    if spec in BASELINES:
        return None
    kind, _, rest = spec.partition(":")
    module_name, _, class_name = rest.partition(":")
    if kind != "python" or not module_name or not class_name:
        raise SolverSpecError(f"unknown solver {spec!r}; expected oracle, do-nothing or python:module:Class")
    return module_name, class_name


def solver_class(spec: str) -> type[Solver]:
    """The class ``spec`` names: ``oracle``, ``do-nothing`` or ``python:module:Class`` (imported; it must be a
    ``Solver`` subclass). ``SolverSpecError`` otherwise, so a run can be refused before it is queued."""
    parts = spec_parts(spec)
    if parts is None:
        return BASELINES[spec]
    module_name, class_name = parts
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise SolverSpecError(f"cannot load solver {spec!r}: {error}") from error
    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise SolverSpecError(f"{spec!r} is not a subclass of agents.harness.Solver")
    return cls


def load_solver(spec: str, seed: int = 0) -> Solver:
    """The solver ``spec`` names (``solver_class``), made with ``seed=`` when it takes one (the oracle), else with
    no arguments."""
    cls = solver_class(spec)
    try:
        return cls(seed=seed)
    except TypeError:
        return cls()
