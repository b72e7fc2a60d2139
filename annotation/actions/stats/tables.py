"""Project statistics (``/projects/<name>/stats/``): the tables of docs/stats.md, aggregated in the database.

Every table is a handful of ``values().annotate(Count(...))`` queries over the project: the number of queries
is the same however many demonstrations, turns, batches or edits the project has. Python only walks the
per-demonstration rows (one per demo, never one per turn) to place each demo in its split, which is a function of
the demo's own facts (``annotation/lib/splits.py``), and to bin counts into histograms.

Demos still being recorded are left out of every table but the review outcomes (which counts them by status).
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import mean, median

from django.db.models import Case, CharField, Count, IntegerField, Max, Q, Sum, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Length, Lower
from lxml import html as lxml_html

from ...lib import splits as split_rules
from ...models import Assignment, AssignmentStatus, Batch, Demonstration, DemoStatus, Edit, SplitConfig, Turn, TurnType

# Mind2Web steps: browser turns acting on an element (workers/exports/exporters/mind2web: click, hover, submit → CLICK,
# textInput → TYPE, change → SELECT on a <select>, CLICK on a checkbox or radio, TYPE otherwise).
STEP_INTENTS = ("click", "hover", "submit", "textInput", "change")
TOGGLE_TYPES = ("checkbox", "radio")
TURN_BINS = (0, 10, 20, 50, 100, 200, 500, 1000)
STEP_BINS = (0, 1, 5, 10, 20, 50, 100)
UTTERANCE_BINS = (0, 1, 21, 51, 101, 201, 501)  # characters
INSTANCE_BINS = (0, 1, 2, 5, 10, 20, 50, 100, 1000)


@dataclass
class Table:
    """One statistics table: its rows, and which column its chart plots against the first (label) column."""

    key: str
    title: str
    group: str
    columns: list[str]
    rows: list[list] = field(default_factory=list)
    chart: str | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "title": self.title,
            "group": self.group,
            "columns": self.columns,
            "rows": self.rows,
            "note": self.note,
        }

    def column(self, name: str) -> list:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]


def histogram(values, edges) -> list[list]:
    """``[[bin label, count]]`` for ``values`` over ``edges`` (lower bounds; the last bin is open-ended)."""
    counts = Counter()
    for value in values:
        counts[sum(1 for edge in edges if value >= edge) - 1] += 1
    labels = [bin_label(edges, index) for index in range(len(edges))]
    return [[label, counts[index]] for index, label in enumerate(labels)]


def bin_label(edges, index: int) -> str:
    low = edges[index]
    if index == len(edges) - 1:
        return f"{low}+"
    high = edges[index + 1] - 1
    return str(low) if high == low else f"{low}–{high}"


def summary(values) -> list[list]:
    values = list(values)
    if not values:
        return [["count", 0], ["min", 0], ["median", 0], ["mean", 0], ["max", 0]]
    return [
        ["count", len(values)],
        ["min", min(values)],
        ["median", median(values)],
        ["mean", round(mean(values), 2)],
        ["max", max(values)],
    ]


def count_rows(counter: Counter, *more: Counter) -> list[list]:
    """Rows ``[key, count, *more counts]`` by descending first count, then key."""
    keys = sorted(counter, key=lambda key: (-counter[key], key))
    return [[key or "(none)", counter[key], *(other[key] for other in more)] for key in keys]


# --- Per-demonstration rows ----------------------------------------------------------------------------------


def demo_rows(project) -> list[dict]:
    """One row per demo of the project with its facts and its turn, chat and step counts (two queries: the demos,
    then the turns grouped by demo on one column, which is much cheaper than grouping by every demo field)."""
    demos = list(
        Demonstration.objects.filter(project=project)
        .order_by()
        .values("pk", "name", "status", "websites", "category", "subcategory", "region", "instructor_sees_screen")
    )
    counts = {
        row["demonstration_id"]: row
        for row in Turn.objects.filter(demonstration__project=project)
        .order_by()
        .values("demonstration_id")
        .annotate(
            turn_count=Count("pk"),
            chat_count=Count("pk", filter=Q(type=TurnType.CHAT)),
            step_count=Count("pk", filter=Q(type=TurnType.BROWSER, intent__in=STEP_INTENTS)),
        )
    }
    empty = {"turn_count": 0, "chat_count": 0, "step_count": 0}
    for demo in demos:
        found = counts.get(demo["pk"], empty)
        demo.update(turn_count=found["turn_count"], chat_count=found["chat_count"], step_count=found["step_count"])
    return demos


def facts(row: dict) -> split_rules.DemoFacts:
    return split_rules.DemoFacts(
        name=row["name"],
        websites=tuple(row["websites"] or ()),
        category=row["category"],
        subcategory=row["subcategory"],
        region=row["region"],
        instructor_sees_screen=row["instructor_sees_screen"],
    )


def split_table(rows, rules, scheme: str, key: str, title: str, group: str, unit: str, count: str) -> Table:
    demos, turns = Counter(), Counter()
    for row in rows:
        split = split_rules.ASSIGN[scheme](facts(row), rules)
        demos[split] += 1
        turns[split] += row[count]
    table_rows = [[split, demos[split], turns[split]] for split in split_rules.SPLITS[scheme]]
    return Table(key, title, group, ["split", "demos", unit], table_rows, chart="demos")


def fact_table(rows, fact: str, key: str, title: str) -> Table:
    """Demos and turns per value of one demo fact (a demo visiting several websites counts for each)."""
    demos, turns, chat = Counter(), Counter(), Counter()
    for row in rows:
        values = (row["websites"] or [""]) if fact == "websites" else [row[fact]]
        for value in dict.fromkeys(values):
            demos[value] += 1
            turns[value] += row["turn_count"]
            chat[value] += row["chat_count"]
    return Table(
        key,
        title,
        "WebLINX",
        [fact.removesuffix("s"), "demos", "turns", "chat turns"],
        count_rows(demos, turns, chat),
        chart="demos",
    )


def weblinx_tables(rows, rules) -> list[Table]:
    turn_counts = [row["turn_count"] for row in rows]
    return [
        split_table(
            rows,
            rules,
            "weblinx",
            "weblinx_splits",
            "Demos and turns per split (WebLINX scheme)",
            "WebLINX",
            "turns",
            "turn_count",
        ),
        fact_table(rows, "category", "categories", "Demos and turns per category"),
        fact_table(rows, "subcategory", "subcategories", "Demos and turns per subcategory"),
        fact_table(rows, "websites", "websites", "Demos and turns per website"),
        fact_table(rows, "region", "regions", "Demos and turns per region"),
        Table(
            "turns_per_demo",
            "Turns per demo",
            "WebLINX",
            ["turns", "demos"],
            histogram(turn_counts, TURN_BINS),
            chart="demos",
        ),
        Table(
            "turns_per_demo_summary", "Turns per demo: summary", "WebLINX", ["statistic", "value"], summary(turn_counts)
        ),
    ]


def mind2web_tables(rows, rules) -> list[Table]:
    tasks = Counter((row["websites"] or [""])[0] for row in rows)
    steps = Counter()
    for row in rows:
        steps[(row["websites"] or [""])[0]] += row["step_count"]
    step_counts = [row["step_count"] for row in rows]
    note = "Steps: browser turns acting on an element (the export may also drop a change that repeats a TYPE)."
    return [
        split_table(
            rows,
            rules,
            "mind2web",
            "mind2web_splits",
            "Tasks and steps per split (Mind2Web scheme)",
            "Mind2Web",
            "steps",
            "step_count",
        ),
        Table(
            "tasks_per_website",
            "Tasks per website (first website of each demo)",
            "Mind2Web",
            ["website", "tasks", "steps"],
            count_rows(tasks, steps),
            chart="tasks",
        ),
        Table(
            "steps_per_task",
            "Steps per task",
            "Mind2Web",
            ["steps", "tasks"],
            histogram(step_counts, STEP_BINS),
            chart="tasks",
            note=note,
        ),
        Table(
            "steps_per_task_summary",
            "Steps per task: summary",
            "Mind2Web",
            ["statistic", "value"],
            summary(step_counts),
        ),
    ]


def review_outcome_table(rows) -> Table:
    by_status = Counter(row["status"] for row in rows)
    table_rows = [[status.value, by_status[status.value]] for status in DemoStatus]
    return Table(
        "review_outcomes",
        "Review outcomes (demos per status)",
        "Review",
        ["status", "demos"],
        table_rows,
        chart="demos",
    )


# --- Per-turn aggregates (in the database, one scan of the project's turns) ---------------------------------


def project_turns(project):
    return Turn.objects.filter(demonstration__project=project).exclude(demonstration__status=DemoStatus.RECORDING)


def utterance_bucket():
    """The ``UTTERANCE_BINS`` index of a chat turn's length; -1 for browser turns."""
    whens = [When(length__gte=edge, then=Value(index)) for index, edge in reversed(list(enumerate(UTTERANCE_BINS)))]
    chat = Q(type=TurnType.CHAT)
    return Case(When(~chat, then=Value(-1)), *whens, default=Value(0), output_field=IntegerField())


def changed_element(path: str):
    """The acted element's ``path`` (lower case) for a change turn, where it decides the operation; else ''."""
    return Case(When(intent="change", then=Lower(KT(path))), default=Value(""), output_field=CharField())


def turn_profile(project) -> list[dict]:
    """The project's turns grouped by type, intent, speaker, utterance-length bin and (for changes) the element's
    tag and input type, with count, total and longest utterance length: a few dozen rows, from which the intent,
    utterance and operation tables are all read."""
    return list(
        project_turns(project)
        .alias(length=Length("utterance"))
        .order_by()
        .values(
            "type",
            "intent",
            "speaker",
            bucket=utterance_bucket(),
            tag=changed_element("arguments__element__tagName"),
            input_type=changed_element("arguments__element__attributes__type"),
        )
        .annotate(n=Count("pk"), characters=Sum("length"), longest=Max("length"))
    )


def intent_table(profile) -> Table:
    turns = Counter()
    for row in profile:
        if row["type"] == TurnType.BROWSER:
            turns[row["intent"]] += row["n"]
    return Table(
        "intents", "Browser actions per intent", "WebLINX", ["intent", "turns"], count_rows(turns), chart="turns"
    )


def utterance_tables(profile) -> list[Table]:
    turns, characters, longest, buckets = Counter(), Counter(), Counter(), Counter()
    for row in profile:
        if row["type"] == TurnType.CHAT:
            turns[row["speaker"]] += row["n"]
            characters[row["speaker"]] += row["characters"] or 0
            longest[row["speaker"]] = max(longest[row["speaker"]], row["longest"] or 0)
            buckets[row["bucket"]] += row["n"]
    speakers = [
        [speaker or "(none)", turns[speaker], round(characters[speaker] / turns[speaker], 1), longest[speaker]]
        for speaker in sorted(turns)
    ]
    lengths = [[bin_label(UTTERANCE_BINS, index), buckets[index]] for index in range(len(UTTERANCE_BINS))]
    return [
        Table(
            "utterances_per_speaker",
            "Chat turns and utterance length (characters) per speaker",
            "WebLINX",
            ["speaker", "turns", "mean length", "longest"],
            speakers,
            chart="turns",
        ),
        Table(
            "utterance_lengths",
            "Utterance lengths (characters)",
            "WebLINX",
            ["characters", "utterances"],
            lengths,
            chart="utterances",
        ),
    ]


def operation_of(intent: str, tag: str, input_type: str) -> str:
    if intent in ("click", "hover", "submit"):
        return "CLICK"
    if intent == "textInput":
        return "TYPE"
    if tag == "select":
        return "SELECT"
    return "CLICK" if tag == "input" and input_type in TOGGLE_TYPES else "TYPE"


def operation_table(profile) -> Table:
    """Mind2Web operations: the step intents, a change told apart by its element's tag and type."""
    operations = Counter()
    for row in profile:
        if row["type"] == TurnType.BROWSER and row["intent"] in STEP_INTENTS:
            operations[operation_of(row["intent"], row["tag"] or "", row["input_type"] or "")] += row["n"]
    rows = [[name, operations[name]] for name in ("CLICK", "TYPE", "SELECT")]
    return Table("operations", "Operations", "Mind2Web", ["operation", "steps"], rows, chart="steps")


# --- Form tasks (TurkingBench) -------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def template_field_types(template: str) -> tuple:
    """``((type, count), ...)`` of the form fields a template declares: inputs by type, selects, textareas."""
    if not template.strip():
        return ()
    root = lxml_html.fragment_fromstring(template, create_parent="div")
    types = Counter()
    for element in root.iter("input", "select", "textarea"):
        kind = (element.get("type") or "text").lower() if element.tag == "input" else element.tag
        if kind not in ("submit", "hidden", "button"):
            types[kind] += 1
    return tuple(sorted(types.items()))


def form_tables(project) -> list[Table]:
    batches = list(
        Batch.objects.filter(project=project)
        .order_by("name")
        .values("pk", "name", "html_template")
        .annotate(tasks=Count("tasks"))
    )
    done = defaultdict(Counter)
    assignments = Assignment.objects.filter(task__batch__project=project).order_by()
    for row in assignments.values("task__batch_id", "status").annotate(n=Count("pk")):
        done[row["task__batch_id"]][row["status"]] += row["n"]
    fields, batches_with = Counter(), Counter()
    for batch in batches:
        for kind, number in template_field_types(batch["html_template"]):
            fields[kind] += number
            batches_with[kind] += 1
    statuses = [status.value for status in AssignmentStatus]
    return [
        Table(
            "field_types",
            "Form field types",
            "TurkingBench",
            ["type", "fields", "batches"],
            count_rows(fields, batches_with),
            chart="fields",
        ),
        Table(
            "instances_per_task",
            "Instances per task (batch)",
            "TurkingBench",
            ["batch", "instances"],
            [[batch["name"], batch["tasks"]] for batch in batches],
            chart="instances",
        ),
        Table(
            "instances_histogram",
            "Tasks by number of instances",
            "TurkingBench",
            ["instances", "tasks"],
            histogram([batch["tasks"] for batch in batches], INSTANCE_BINS),
            chart="tasks",
        ),
        Table(
            "assignments_done",
            "Assignments per batch and status",
            "TurkingBench",
            ["batch", *statuses],
            [[batch["name"], *(done[batch["pk"]][s] for s in statuses)] for batch in batches],
            chart="submitted",
        ),
    ]


def edit_table(project) -> Table:
    grouped = (
        Edit.objects.filter(demonstration__project=project)
        .order_by()
        .values("kind")
        .annotate(edits=Count("pk"), demos=Count("demonstration", distinct=True), people=Count("author", distinct=True))
        .order_by("-edits", "kind")
    )
    rows = [[row["kind"], row["edits"], row["demos"], row["people"]] for row in grouped]
    return Table("edits", "Review edits per kind", "Review", ["kind", "edits", "demos", "people"], rows, chart="edits")


def project_stats(project) -> list[Table]:
    """Every statistics table of ``project``, in page order (a constant number of queries)."""
    rows = demo_rows(project)
    recorded = [row for row in rows if row["status"] != DemoStatus.RECORDING]
    rules = SplitConfig.for_project(project).rules()
    profile = turn_profile(project)
    return [
        *weblinx_tables(recorded, rules),
        intent_table(profile),
        *utterance_tables(profile),
        *mind2web_tables(recorded, rules),
        operation_table(profile),
        *form_tables(project),
        review_outcome_table(rows),
        edit_table(project),
    ]
