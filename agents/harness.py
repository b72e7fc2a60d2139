"""Run a solver on TurkingBench instances in a real browser and score the pages, as the official evaluator does.

Per instance (``Harness.run_instance``), following ``src/evaluation_class.py`` (spec §4.1–4.3):

1. load the instance's URL (the harness never builds pages itself: the platform passes its preview URLs, tests
   and offline runs serve a task directory with ``agents.server``); a browser of ``agents.browser.make_driver``
   loads nothing but that URL's origin (``agents.originguard``);
2. find the fields: the ``Answer.*`` names of ``batch.csv``, each the first element with that name if it is an
   input/select/textarea, minus the excluded names; ordered by position (y, then x), visible fields first;
3. for each field still displayed when its turn comes, call the solver with a ``FieldRequest`` (what it may use);
   a solver that raises leaves the field as it found it (its state is restored) and the run goes on;
4. read the values back as the official scorer does and score every field displayed at that moment.

Before every look at the page (field discovery, each field's turn, the solver's page text and screenshots, the
final read) the harness checks that the browser is still on the instance URL's origin (``check_origin``). If a
template's script took it elsewhere, the instance ends there (``LeftOrigin``): nothing more of that page is read
nor given to the solver, every field is reported skipped with ``LEFT_ORIGIN`` and the instance scores 0.

Time is bounded (``Limits``): a field's actions past ``field_seconds`` (from its first action) stop with the field's
error (``FieldTimeLimit``) and the instance goes on; an instance still running after ``instance_seconds`` has its
browser ended (``agents.browser.Deadline``: whatever command was stuck fails) and ends there like one that left its
origin, every field skipped with why; its caller then needs a new browser (``browser_ended``). ``current`` says
where the harness is (task, instance, field), for a run's heartbeat.

``run`` samples instances with a seeded generator and records the seed and the sample. The result is a plain
dict (``RunResult.as_dict``) in the evaluation output format of ``docs/agents.md``; ``agents.parallel`` runs
instances on several browsers.
"""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass, field
from functools import cached_property

from . import ceiling, page, scoring
from .actions import MAX_TEXT_CHARS, Actions
from .browser import Deadline
from .originguard import origin_of
from .turkle import TaskDir

log = logging.getLogger(__name__)


LEFT_ORIGIN = "the page navigated away to another origin"


@dataclass(frozen=True)
class Limits:
    """How long one field's actions and one instance may take (seconds; None: no limit), and the longest text
    typed into a field."""

    field_seconds: float | None = None
    instance_seconds: float | None = None
    text_chars: int = MAX_TEXT_CHARS


def over_time(limits: Limits, field: str | None) -> str:
    """Why an instance stopped at its time limit."""
    where = f" (in field {field!r})" if field else ""
    return f"the instance ran past its time limit of {limits.instance_seconds:g} s{where}; its browser was ended"


class LeftOrigin(Exception):
    """The browser is no longer on the instance's origin: the instance ends, nothing more of the page is read."""

    def __init__(self):
        super().__init__(LEFT_ORIGIN)


def on_origin(driver, url: str) -> bool:
    """Whether the browser's current page is on ``url``'s origin (scheme, host, port)."""
    return origin_of(url) is not None and origin_of(driver.current_url) == origin_of(url)


def check_origin(driver, url: str) -> None:
    """``LeftOrigin`` unless the browser's current page is on ``url``'s origin."""
    if not on_origin(driver, url):
        raise LeftOrigin()


@dataclass
class Field:
    """A form field of a task page, as found after loading it."""

    name: str
    type: str
    x: int = 0
    y: int = 0
    displayed: bool = True


@dataclass
class FieldRequest:
    """What a solver gets for one field. The page helpers cost a browser round trip each, so they are lazy."""

    task: str
    instance: int
    field: Field
    instructions: str
    actions: Actions
    gold: list | None = None  # the annotators' answers: given to solvers with ``uses_gold`` (the oracle) only
    usage: dict | None = None  # what the solver spent on the field (the llm solver: tokens, model seconds)
    url: str = ""  # the instance's page: the page helpers read only while the browser is on its origin

    def check_origin(self) -> None:
        """``LeftOrigin`` when the page left the instance's origin: a solver calls it before it reads the page
        itself (the helpers below do)."""
        if self.url:
            check_origin(self.driver, self.url)

    @property
    def name(self) -> str:
        return self.field.name

    @property
    def type(self) -> str:
        return self.field.type

    @property
    def driver(self):
        return self.actions.driver

    def page_html(self) -> str:
        self.check_origin()
        return page.page_html(self.driver)

    @cached_property
    def relevant_html(self) -> str:
        self.check_origin()
        return page.relevant_html(self.driver, self.name)

    def screenshot(self) -> bytes:
        """The viewport as a PNG, with the field scrolled to its middle."""
        self.actions.scroll_to_element(self.name)
        self.check_origin()
        return self.actions.capture_screen()


class StopRun(Exception):
    """Raised by a solver to stop the whole run (never one field's error): an endpoint that cannot be used, a spent
    budget (``budget=True``: the run ends cleanly with the instances it finished)."""

    def __init__(self, reason: str, budget: bool = False):
        super().__init__(reason)
        self.reason, self.budget = reason, budget


class Solver:
    """Fills one field at a time. Subclasses set ``name`` and implement ``solve``; ``uses_gold`` gives them the
    gold answers (only the oracle may)."""

    name = "solver"
    uses_gold = False

    def begin_instance(self, task: TaskDir, instance: int) -> None:
        """Called after the page loaded, before its first field."""

    def solve(self, request: FieldRequest) -> None:
        raise NotImplementedError

    def instance_answer(self) -> str | None:
        """What the solver answered for the instance just run, kept with it (the llm solver: the model's answer)."""
        return None

    def instance_unapplied(self) -> list[dict]:
        """What of its answer the solver could not apply to any field (``{"line", "field", "reason"}`` each)."""
        return []


@dataclass
class FieldResult:
    task: str
    instance: int
    field: str
    type: str
    score: float | None = None  # None: not counted (see ``skipped``)
    prediction: str | None = None
    skipped: str | None = None  # why the field is not scored
    error: str | None = None  # what the solver raised
    calls: list[str] = field(default_factory=list)  # the actions the solver took on this field
    usage: dict | None = None  # what the solver spent on it (FieldRequest.usage)
    shown_at_turn: bool = True  # displayed when its turn came (else the solver was not asked)
    ceiling: float | None = None  # the best annotator's score on it (``agents.ceiling``)
    shortfall: str | None = None  # why it scores below its ceiling
    # Why the control cannot hold an annotator's answer, by that answer as read (``"*"``: any answer).
    cannot_hold: dict[str, str] | None = None


@dataclass
class InstanceResult:
    task: str
    instance: int
    url: str
    metric: str
    fields: list[FieldResult]
    answer: str | None = None  # the solver's own record of the instance (Solver.instance_answer)
    ended: str | None = None  # why the instance ended early (``LEFT_ORIGIN``, ``over_time``)
    unapplied: list[dict] = field(default_factory=list)  # Solver.instance_unapplied
    ceiling: float | None = None  # the best single annotator's instance score (``agents.ceiling``)

    @property
    def score(self) -> float:
        counted = [(f.type, f.score) for f in self.fields if f.skipped is None]
        return scoring.instance_score(self.metric, counted)


@dataclass
class RunResult:
    """Everything a run produced; ``as_dict`` is the JSON written by commands and stored by jobs."""

    metric: str
    instances: list[InstanceResult] = field(default_factory=list)
    solver: str | None = None
    seed: int | None = None
    sampled: dict[str, list[int]] = field(default_factory=dict)

    def scored_fields(self) -> list[FieldResult]:
        return [f for result in self.instances for f in result.fields if f.skipped is None]

    def as_dict(self) -> dict:
        rows = [
            {"task": f.task, "instance": f.instance, "field": f.field, "type": f.type, "score": f.score}
            for f in self.scored_fields()
        ]
        ceilings = [{**row, "ceiling": f.ceiling} for row, f in zip(rows, self.scored_fields(), strict=True)]
        tasks = scoring.task_table(rows)
        names = list(dict.fromkeys(r.task for r in self.instances))
        summary = scoring.summary(names, tasks, [r.score for r in self.instances])
        every_task = {name: tasks.get(name, {"all": math.nan}) for name in names}
        data = {
            "metric": self.metric,
            "fields": [
                {**row, "score": scoring.json_number(row["score"]), "ceiling": scoring.json_number(row["ceiling"])}
                for row in ceilings
            ],
            "instances": [
                {
                    "task": r.task,
                    "instance": r.instance,
                    "score": r.score,
                    "ceiling": scoring.json_number(r.ceiling),
                    **({"ended": r.ended} if r.ended else {}),
                }
                for r in self.instances
            ],
            "tasks": {
                task: {key: scoring.json_number(v) for key, v in table.items()} for task, table in every_task.items()
            },
            "overall": summary["task_mean"],
            "overall_instances": summary["instance_mean"],
            "summary": summary,
            "ceiling": ceiling.table(ceilings, [r.ceiling for r in self.instances]),
            "shortfalls": [
                {"task": f.task, "instance": f.instance, "field": f.field, "type": f.type, "reason": f.shortfall}
                for f in self.scored_fields()
                if f.shortfall
            ],
            "skipped": [
                {"task": f.task, "instance": f.instance, "field": f.field, "type": f.type, "reason": f.skipped}
                for r in self.instances
                for f in r.fields
                if f.skipped is not None
            ],
            "errors": [
                {"task": f.task, "instance": f.instance, "field": f.field, "error": f.error}
                for r in self.instances
                for f in r.fields
                if f.error
            ],
        }
        if self.solver is not None:
            data.update(solver=self.solver, seed=self.seed, sampled=self.sampled)
        return data

    def action_sequences(self) -> list[dict]:
        """Per instance, the calls made on each field in order: with the oracle, TurkingBench's gold action
        sequences (``self.actions.modify_radio('q1', '3')`` ...)."""
        return [
            {
                "task": r.task,
                "instance": r.instance,
                "fields": [{"name": f.field, "type": f.type, "calls": f.calls} for f in r.fields if f.calls],
            }
            for r in self.instances
        ]


def order_fields(found: list[dict]) -> list[Field]:
    """The official order: by (y, x), then visible fields first (both sorts stable)."""
    fields = [
        Field(item["name"], item["type"], round(item["x"]), round(item["y"]), item["displayed"])
        for item in found
        if item.get("found") and item["name"] not in scoring.EXCLUDED_NAMES
    ]
    fields.sort(key=lambda f: (f.y, f.x))
    fields.sort(key=lambda f: f.displayed, reverse=True)
    return fields


def oracle_gold(field_type: str, raw: list) -> list:
    """The gold list the official oracle receives: NaN → ``""`` for checkbox and radio (``retrieve_gold_labels``)."""
    if field_type in ("checkbox", "radio"):
        return ["" if scoring.is_nan(answer) else answer for answer in raw]
    return list(raw)


class Harness:
    """Drives one browser through instances with one solver."""

    def __init__(self, driver, solver: Solver, metric: str = scoring.OFFICIAL, limits: Limits | None = None):
        if metric not in scoring.METRICS:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(scoring.METRICS)}")
        self.solver = solver
        self.metric = metric
        self.limits = limits or Limits()
        self.current: dict | None = None  # {"task", "instance", "field", "started"} while an instance runs
        self.use_driver(driver)

    def use_driver(self, driver) -> None:
        """Go on with this browser (a new one after ``browser_ended``)."""
        self.driver, self.browser_ended = driver, False
        self.actions = Actions(driver, max_text_chars=self.limits.text_chars)

    def run_instance(self, task: TaskDir, instance: int, url: str) -> InstanceResult:
        guard = getattr(self.driver, "origin_guard", None)
        if guard is not None:
            guard.allow_only(url)
        results: dict[str, FieldResult] = {}
        self.current = {"task": task.name, "instance": instance, "field": None, "started": time.monotonic()}
        deadline = Deadline(self.driver, self.limits.instance_seconds)
        try:
            with deadline:
                return self._run_instance(task, instance, url, results)
        except LeftOrigin:
            if not deadline.expired:
                log.warning("%s #%s: %s (%s)", task.name, instance, LEFT_ORIGIN, url)
                return self._ended(task, instance, url, results, LEFT_ORIGIN)
        except Exception:  # a command of the browser the deadline ended; anything else is raised
            if not deadline.expired:
                raise
        finally:
            if deadline.expired:
                self.browser_ended = True
            field_name, self.current = self.current["field"], None
        why = over_time(self.limits, field_name)
        log.warning("%s #%s: %s", task.name, instance, why)
        return self._ended(task, instance, url, results, why)

    def _ended(self, task: TaskDir, instance: int, url: str, results: dict[str, FieldResult], why: str):
        """The instance as far as it went: every field skipped with ``why`` (its value is not read), the solver's
        calls kept."""
        for name in task.field_names:
            result = results.setdefault(name, FieldResult(task.name, instance, name, ""))
            result.score, result.prediction, result.skipped = None, None, why
        result = InstanceResult(task.name, instance, url, self.metric, list(results.values()), ended=why)
        result.answer = self.solver.instance_answer()
        result.unapplied = self.solver.instance_unapplied()
        return result

    def _run_instance(self, task: TaskDir, instance: int, url: str, results: dict[str, FieldResult]) -> InstanceResult:
        gold = task.gold(instance)
        self.driver.get(url)
        check_origin(self.driver, url)
        found = page.find_fields(self.driver, task.field_names)
        fields = order_fields(found)
        self.solver.begin_instance(task, instance)
        results.update({f.name: FieldResult(task.name, instance, f.name, f.type) for f in fields})
        for item in found:  # reported, never solved nor scored (the official evaluator drops them silently)
            if not item.get("found"):
                results[item["name"]] = FieldResult(task.name, instance, item["name"], "", skipped="not on the page")
            elif item["name"] in scoring.EXCLUDED_NAMES:
                results[item["name"]] = FieldResult(task.name, instance, item["name"], item["type"], skipped="excluded")
        instructions = task.instructions(instance)
        for f in fields:
            check_origin(self.driver, url)
            self.current["field"] = f.name
            if page.is_displayed(self.driver, f.name):
                request = FieldRequest(task.name, instance, f, instructions, self.actions, url=url)
                if self.solver.uses_gold:
                    request.gold = oracle_gold(f.type, gold[f.name])
                self._solve(request, results[f.name])
            else:
                results[f.name].shown_at_turn = False
        check_origin(self.driver, url)
        self._score(fields, gold, results)
        result = InstanceResult(task.name, instance, url, self.metric, list(results.values()))
        ceiling.apply(result, gold, oracle=self.solver.uses_gold)
        result.answer = self.solver.instance_answer()
        result.unapplied = self.solver.instance_unapplied()
        return result

    def _solve(self, request: FieldRequest, result: FieldResult) -> None:
        before = page.snapshot_fields(self.driver, request.name)
        start = len(self.actions.history)
        self.actions.begin_field(self.limits.field_seconds)
        try:
            self.solver.solve(request)
        except (StopRun, LeftOrigin):
            result.calls = self.actions.history[start:]
            result.usage = request.usage
            raise
        except Exception as error:  # any failure of the solver: the field counts as untouched
            log.info("%s on %s #%s field %s: %s", self.solver.name, request.task, request.instance, request.name, error)
            result.error = f"{type(error).__name__}: {error}".strip()
            page.restore_fields(self.driver, request.name, before)
        result.calls = self.actions.history[start:]
        result.usage = request.usage

    def _score(self, fields: list[Field], gold: dict[str, list], results: dict[str, FieldResult]) -> None:
        reads = page.read_values(self.driver, [(f.name, f.type) for f in fields], self.metric == scoring.PAPER)
        for f, read in zip(fields, reads, strict=True):
            result = results[f.name]
            if f.type == "submit":
                result.skipped = "submit"
            elif not read["displayed"]:
                result.skipped = "not displayed"
            elif read["values"] is None or f.type not in scoring.SCORED_TYPES:
                result.skipped = f"no scoring rule for type {f.type!r}"
            else:
                result.cannot_hold = self._cannot_hold(f, gold[f.name], read)
                result.prediction = scoring.prediction_string(f.type, read["values"])
                result.score = scoring.field_score(self.metric, f.type, gold[f.name], result.prediction)
                if result.score is None:
                    result.skipped = "no annotator answered"

    def _cannot_hold(self, f: Field, gold: list, read: dict) -> dict[str, str] | None:
        """The annotators' answers this control cannot hold, and why (``FieldResult.cannot_hold``)."""
        if read.get("readonly"):
            return {"*": "read-only textarea, which the official reader skips: no answer in it is read"}
        answers = [a for a in gold if ceiling.is_number(a)] if f.type == "range" else []
        held = page.range_keeps(self.driver, f.name, [float(a) for a in answers]) if answers else None
        if not held:
            return None
        bounds = f"min {held['min'] or 0}, max {held['max'] or 100}, step {held['step'] or 1}"
        return {
            ceiling.annotator_prediction("range", a): f"the range ({bounds}) holds {kept} for the gold {float(a):g}"
            for a, kept in zip(answers, held["kept"], strict=True)
            if float(kept) != float(a)
        } or None


def sample_instances(tasks: list[TaskDir], per_task: int | None, seed: int) -> dict[str, list[int]]:
    """Up to ``per_task`` instances of each task (all when None), drawn with ``random.Random(seed)``, sorted."""
    rng = random.Random(seed)
    sampled = {}
    for task in tasks:
        count = len(task) if per_task is None else min(per_task, len(task))
        sampled[task.name] = sorted(rng.sample(range(len(task)), count))
    return sampled


def run(
    driver,
    solver: Solver,
    tasks: list[TaskDir],
    url_for,
    *,
    per_task: int | None = None,
    seed: int = 0,
    metric: str = scoring.OFFICIAL,
    instances: dict[str, list[int]] | None = None,
    progress=None,
) -> RunResult:
    """Run ``solver`` over ``tasks``: the given ``instances`` (task → indices) or a seeded sample of ``per_task``.

    ``url_for(task_name, instance)`` gives each instance's page. ``progress(done, total)`` is called after each."""
    harness = Harness(driver, solver, metric)
    sampled = instances if instances is not None else sample_instances(tasks, per_task, seed)
    result = RunResult(metric=metric, solver=solver.name, seed=seed, sampled=sampled)
    total, by_name = sum(len(indices) for indices in sampled.values()), {task.name: task for task in tasks}
    for name, indices in sampled.items():
        for index in indices:
            result.instances.append(harness.run_instance(by_name[name], index, url_for(name, index)))
            if progress:
                progress(len(result.instances), total)
    return result
