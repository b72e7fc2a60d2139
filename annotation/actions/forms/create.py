"""Storing a checked form batch (web upload, REST, ``import_turkingbench``): one batch and its tasks, all or nothing."""

import difflib
from dataclasses import dataclass
from pathlib import Path

import orjson
from django.db import IntegrityError, connection, transaction

from agents import vendor

from ...lib.agreement import known_answers
from ...models import Batch, BatchKind, SplitConfig, Task
from ..errors import ActionError, Conflict, ValidationFailed, invalid
from .figures import figures_changed
from .parse import ParsedBatch, check_batch_name, parse_batch

BULK = 2000
COPY_ROWS = 10_000  # tasks per write into the COPY stream
MTURK_METADATA = ("Title", "Description", "Keywords")  # HIT metadata columns; templates rarely show them


@dataclass
class BatchSettings:
    """What the uploader chooses besides the files."""

    assignments_per_task: int = 1
    allotted_seconds: int = 24 * 3600
    published: bool = True
    active: bool = True
    description: str = ""
    source_name: str = ""
    workers: tuple = ()  # users
    worker_groups: tuple = ()

    def check(self) -> None:
        for field_name in ("assignments_per_task", "allotted_seconds"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**31 - 1:
                raise invalid(field_name, "must be a whole number of at least 1")


def warnings_for(parsed: ParsedBatch) -> list[str]:
    """Things the uploader should know that do not stop the upload."""
    notes = []
    if parsed.info.uses_crowd_elements:
        notes.append(
            "the template uses <crowd-*> elements (MTurk Crowd HTML Elements); they are not rendered, so fields "
            "inside them cannot be answered here (nor in Turkle)"
        )
    used = {*parsed.info.fields, *MTURK_METADATA}
    extra = [c for c in parsed.columns if not c.startswith("Answer.") and c not in used]
    if extra:
        notes.append(f"{len(extra)} CSV column(s) are not used by the template: {', '.join(extra[:10])}")
    return notes + answer_warnings(parsed) + script_warnings(parsed.template)


def shown_names(names: list, limit: int = 10) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def answer_warnings(parsed: ParsedBatch) -> list[str]:
    """Gold answers that can never be scored: ``Answer.*`` columns with no field of that name in the template's
    markup (a near name is suggested), and answers whose fields are all hidden inputs (never displayed, so never
    scored)."""
    notes = []
    answers = [column.removeprefix("Answer.") for column in parsed.answer_columns]
    names = sorted(parsed.info.control_names)
    missing = [name for name in answers if name not in parsed.info.control_names]
    if missing:
        shown = []
        for name in missing[:10]:
            near = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
            shown.append(f"{name} (the template has {near[0]!r})" if near else name)
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        scripted = "<script" in parsed.template.lower()
        consequence = (
            "unless the template's scripts create them (check the preview), they cannot be answered or scored"
            if scripted
            else "they can never be answered or scored (the template has no script that could create them)"
        )
        notes.append(
            f"{len(missing)} of {len(answers)} Answer.* column(s) have no input, select or textarea of that name in "
            f"the template: {consequence}: {', '.join(shown)}{more}"
        )
    present = [name for name in answers if name in parsed.info.control_names]
    hidden = [name for name in present if name in parsed.info.hidden_names]
    if present and len(hidden) == len(present):
        notes.append(
            f"every answer field the template has is a hidden input, never displayed and so never scored: this "
            f"task has nothing scorable unless its scripts show other fields: {shown_names(hidden)}"
        )
    return notes


def script_warnings(template: str) -> list[str]:
    """External scripts and styles that no vendored copy serves (they load only where the Internet is reachable
    and ``TEMPLATE_SCRIPTS`` allows it)."""
    unmapped = [asset["url"] for asset in vendor.external_assets(template) if asset["local"] is None]
    if not unmapped:
        return []
    return [
        f"{len(unmapped)} external script(s) or stylesheet(s) have no vendored copy and will not load where the "
        f"Internet is blocked: {shown_names(unmapped)}"
    ]


def insert_tasks(pairs: list) -> None:
    """``[(batch, parsed tasks), ...]`` in one ``COPY`` on PostgreSQL (a bulk INSERT quotes large JSON values
    slowly), else in bulk. A task whose CSV rows hold a non-blank ``Answer.*`` value is gold, with those values as
    its known answers (``annotation.lib.agreement.known_answers``)."""
    if connection.vendor != "postgresql":
        rows = (new_task(batch, task) for batch, tasks in pairs for task in tasks)
        Task.objects.bulk_create(rows, batch_size=BULK)
        return
    columns = ["batch_id", "index", "inputs", "gold", "taken", "submitted", "completed", "is_gold", "gold_answers"]
    quoted = ", ".join('"' + column + '"' for column in columns)
    statement = f"COPY {Task._meta.db_table} ({quoted}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for batch, tasks in pairs:
            for start in range(0, len(tasks), COPY_ROWS):
                copy.write(b"".join(copy_line(batch.pk, task) for task in tasks[start : start + COPY_ROWS]))


def new_task(batch: Batch, task) -> Task:
    known = known_answers(task.gold)
    fields = {"inputs": task.inputs, "gold": task.gold, "is_gold": bool(known), "gold_answers": known}
    return Task(batch=batch, index=task.index, **fields)


def copy_line(batch_id: int, task) -> bytes:
    """One task as a line of COPY's text format. orjson's JSON has no raw tab, newline or carriage return (it
    escapes them), so only its backslashes need COPY's escaping."""
    inputs, gold = orjson.dumps(task.inputs), orjson.dumps(task.gold)
    known = known_answers(task.gold) if task.gold else {}
    return b"%d\t%d\t%s\t%s\t0\t0\tf\t%s\t%s\n" % (  # not taken, submitted or completed
        batch_id,
        task.index,
        inputs.replace(b"\\", b"\\\\"),
        gold.replace(b"\\", b"\\\\"),
        b"t" if known else b"f",
        orjson.dumps(known).replace(b"\\", b"\\\\"),
    )


def name_taken(project, name: str) -> Conflict:
    return Conflict(
        f"project {project.name!r} already has a batch named {name!r}",
        [{"field": "name", "message": "already used in this project"}],
    )


def check_names_free(project, names: list) -> None:
    """Names unique among themselves and new in the project (one query)."""
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise name_taken(project, twice[0])
    taken = Batch.objects.filter(project=project, name__in=names).values_list("name", flat=True).first()
    if taken is not None:
        raise name_taken(project, taken)


def new_batch(user, project, name: str, parsed: ParsedBatch, settings: BatchSettings) -> Batch:
    return Batch(
        project=project,
        name=name,
        kind=BatchKind.FORM,
        description=settings.description,
        source_name=settings.source_name,
        html_template=parsed.template,
        template_fields=list(parsed.info.fields),
        has_submit_button=parsed.info.has_submit_button,
        uses_crowd_elements=parsed.info.uses_crowd_elements,
        external_scripts=vendor.external_assets(parsed.template),
        import_warnings=warnings_for(parsed),
        csv_filename=parsed.csv_filename[:255],
        csv_columns=parsed.columns,
        assignments_per_task=settings.assignments_per_task,
        allotted_seconds=settings.allotted_seconds,
        published=settings.published,
        active=settings.active,
        tasks_total=len(parsed.tasks),
        created_by=user if user is not None and user.is_authenticated else None,
    )


def do_create_form_batches(user, project, items: list) -> list[Batch]:
    """Store ``[(name, parsed, settings), ...]`` as batches with their tasks, all in one transaction and a handful
    of queries (one INSERT of the batches, one COPY of every task); on any error nothing is stored."""
    for name, _, settings in items:
        check_batch_name(name)
        settings.check()
    check_names_free(project, [name for name, _, _ in items])
    try:
        with transaction.atomic():
            batches = Batch.objects.bulk_create([new_batch(user, project, *item) for item in items])
            for batch, (_, _, settings) in zip(batches, items, strict=True):
                if settings.workers:
                    batch.workers.set(settings.workers)
                if settings.worker_groups:
                    batch.worker_groups.set(settings.worker_groups)
            insert_tasks([(batch, parsed.tasks) for batch, (_, parsed, _) in zip(batches, items, strict=True)])
            figures_changed(*[batch.pk for batch in batches])  # their figures' first version: reads need not write
    except IntegrityError:  # the same name raced in from another upload
        raise Conflict(f"project {project.name!r} already has a batch of one of these names") from None
    return batches


def do_create_form_batch(user, project, name: str, parsed: ParsedBatch, settings: BatchSettings) -> Batch:
    """Store the batch and one task per instance in one transaction (nothing is stored on any error)."""
    return do_create_form_batches(user, project, [(name, parsed, settings)])[0]


# --- TurkingBench task directories ----------------------------------------------------------------------------


def read_task_dir(path: Path) -> ParsedBatch:
    """A TurkingBench task directory (``template.html`` + ``batch.csv``), checked; errors name the directory."""
    missing = [name for name in ("template.html", "batch.csv") if not (path / name).is_file()]
    if missing:
        raise ValidationFailed(f"{path}: missing {', '.join(missing)}")
    try:
        return parse_batch((path / "template.html").read_bytes(), (path / "batch.csv").read_bytes(), "batch.csv")
    except ActionError as error:
        raise type(error)(f"{path.name}: {error.detail}", error.errors) from None


def read_split_lists(folder: Path) -> dict:
    """``{file stem: [task names]}`` from TurkingBench's ``splits/*.txt`` (one task name a line)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValidationFailed(f"{folder}: not a directory of split lists")
    lists = {}
    for path in sorted(folder.glob("*.txt")):
        names = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
        lists[path.stem] = [name for name in names if name]
    return lists


def do_store_split_lists(project, lists: dict) -> SplitConfig:
    """Keep the TurkingBench split lists as the project's setting (replacing lists of the same name)."""
    config = SplitConfig.for_project(project)
    config.form_task_splits = {**config.form_task_splits, **lists}
    config.save(update_fields=["form_task_splits", "updated_at"])
    return config
