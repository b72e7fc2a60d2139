"""Solvers on replayed tasks (docs/mind2web.md#replayed-tasks-as-an-agent-environment) and the run that scores
them with Mind2Web's metrics.

A solver is any object with ``act(observation) -> action | None`` (an action: ``{"element", "op", "value"}``) and
optionally ``name``, ``uses_gold`` (then each observation carries ``reference``, the recorded action: baselines and
tests only) and ``begin_task(observation)``. This is not the TurkingBench harness's ``agents.harness.Solver`` (which
fills form fields one at a time) nor ``workers.agents.predict`` (prompts to a model endpoint): the shapes differ, so
there is no shared base class; ``python:module:Class`` names any class of this shape, made without arguments."""

import importlib

from ..metrics.mind2web import evaluate
from .env import ReplayEnv, ReplayTask


class Oracle:
    """The recorded step."""

    name, uses_gold = "oracle", True

    def act(self, observation: dict) -> dict:
        return observation["reference"]


class DoNothing:
    """No action at any step (an empty prediction: every step metric 0)."""

    name, uses_gold = "do-nothing", False

    def act(self, observation: dict) -> None:
        return None


BUILT_IN = {"oracle": Oracle, "do-nothing": DoNothing}


def load_solver(spec: str):
    """``oracle``, ``do-nothing`` or ``python:module:Class``; ValueError naming ``--solver`` otherwise."""
    if spec in BUILT_IN:
        return BUILT_IN[spec]()
    if spec.startswith("python:") and spec.count(":") == 2:
        _, module, name = spec.split(":")
        try:
            solver = getattr(importlib.import_module(module), name)()
        except (ImportError, AttributeError, TypeError) as error:
            raise ValueError(f"--solver {spec!r}: {error}") from None
        if not callable(getattr(solver, "act", None)):
            raise ValueError(f"--solver {spec!r}: the class has no act(observation) method")
        return solver
    raise ValueError(f"--solver must be oracle, do-nothing or python:module:Class, got {spec!r}")


def run_task(task: ReplayTask, solver) -> tuple[list[dict], list[dict]]:
    """The solver's predictions (in ``manage.py evaluate --format mind2web``'s shape) and the environment's log
    of each step (score, whether the action could be performed and why not, whether the page was rewound)."""
    with ReplayEnv(task) as env:
        observation = env.reset()
        if callable(getattr(solver, "begin_task", None)):
            solver.begin_task(observation)
        while observation is not None:
            if getattr(solver, "uses_gold", False):
                observation = observation | {"reference": env.reference()}
            _, observation = env.step(solver.act(observation))
        return env.predictions, env.log


def run_agent(tasks: list[ReplayTask], solver) -> dict:
    """Mind2Web scores of the solver on the tasks (``metrics.mind2web.evaluate``: ``per_step``, ``per_task``,
    ``aggregate``, ``micro``, ``predictions``) with ``solver`` and each task's environment log (``steps_log``)."""
    predictions, logs = [], {}
    for task in tasks:
        predicted, logs[task.annotation_id] = run_task(task, solver)
        predictions += predicted
    scores = evaluate([task.record() for task in tasks], predictions)
    return scores | {"solver": getattr(solver, "name", type(solver).__name__), "steps_log": logs}
