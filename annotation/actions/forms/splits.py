"""The splits of a project's form tasks, and predictions checked against its form tasks (agent runs and TurkingBench
evaluations both take a split and score on these tasks).

Splits come from the project's TurkingBench split lists (``SplitConfig.form_task_splits``, filled by
``import_turkingbench --splits``): ``test_easy``, ``test_hard``, ``subjective_test`` name the official lists,
``train`` is every form batch no official list names, ``all`` every form batch; another stored list is a split
under its own name.
"""

from dataclasses import dataclass

from agents.turkle import SPLIT_FILES

from ...models import Batch, BatchKind, SplitConfig
from ..errors import ValidationFailed, invalid

OFFICIAL_LISTS = {split: file.removesuffix(".txt") for split, file in SPLIT_FILES.items()}


def split_names(project) -> list[str]:
    """The splits a run may take in ``project``."""
    lists = SplitConfig.for_project(project).form_task_splits or {}
    own = {stem: split for split, stem in OFFICIAL_LISTS.items()}
    return sorted({own.get(stem, stem) for stem in lists} | {"train", "all"})


def split_tasks(project, split: str) -> list[str]:
    """The names of the project's form batches in ``split`` (list order; ``train``/``all`` sorted by name)."""
    batches = list(
        Batch.objects.filter(project=project, kind=BatchKind.FORM).order_by("name").values_list("name", flat=True)
    )
    lists = SplitConfig.for_project(project).form_task_splits or {}
    if split == "all":
        return batches
    if split == "train":
        listed = {name for stem in OFFICIAL_LISTS.values() for name in lists.get(stem, [])}
        return [name for name in batches if name not in listed]
    stem = OFFICIAL_LISTS.get(split, split)
    if stem not in lists:
        raise invalid("split", f"unknown split {split!r}; this project has: {', '.join(split_names(project))}")
    present = set(batches)
    return [name for name in lists[stem] if name in present]


@dataclass
class FormTaskShape:
    """What checking predictions needs of a form batch (the ``agents.turkle.TaskDir`` attributes it reads)."""

    name: str
    template: str
    field_names: list
    count: int

    def __len__(self) -> int:
        return self.count


class ProjectFormTasks:
    """A project's form batches seen as an ``agents.turkle.Dataset`` by ``agents.offline.check_predictions``:
    task names, splits and each task's template, answer fields and instance count, from the database."""

    def __init__(self, project):
        self.project = project

    def task_names(self) -> list[str]:
        return split_tasks(self.project, "all")

    def split(self, split: str) -> list[str]:
        try:
            return split_tasks(self.project, split)
        except ValidationFailed as error:
            raise KeyError(error.errors[0]["message"]) from error

    def task(self, name: str) -> FormTaskShape:
        batch = Batch.objects.filter(project=self.project, kind=BatchKind.FORM, name=name).first()
        if batch is None:
            raise KeyError(f"unknown task {name!r}")
        fields = [column.removeprefix("Answer.") for column in batch.answer_columns]
        return FormTaskShape(batch.name, batch.html_template, fields, batch.tasks.count())


def check_turkingbench_predictions(project, predictions, split: str | None) -> None:
    """Every bad entry at once, by path (``predictions[3].fields.q1: unknown field``): a 400 before any job."""
    from agents.offline import PredictionError, check_predictions

    try:
        check_predictions(predictions, ProjectFormTasks(project), split or None)
    except PredictionError as error:
        raise ValidationFailed(f"predictions: {error}", error.errors) from error
