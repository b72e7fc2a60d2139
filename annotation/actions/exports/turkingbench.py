"""The filters of a TurkingBench export (the project's form batches): which batches, the review states of the
submitted work written as answer rows, the gold rows, and whether ``batch.csv`` cells are written verbatim.

The filters of the other formats (demo ``statuses``, a selection of ``demos``) mean nothing for form batches, and
these mean nothing for demonstrations: a request that sets the other format's filters is refused, naming the field.
"""

from dataclasses import dataclass, field

from ...models import Batch, BatchKind, ExportFormat, ReviewState
from ..errors import ValidationFailed

REVIEW_STATES = (ReviewState.APPROVED.value, ReviewState.PENDING.value, ReviewState.REJECTED.value)
DEFAULT_REVIEW_STATES = (ReviewState.APPROVED.value, ReviewState.PENDING.value)
DEFAULT_INCLUDE_GOLD = True  # a batch imported with its answers keeps them (import → export gives the task back)


@dataclass
class FormFilters:
    """A TurkingBench export's filters, checked; ``batches`` are the project's form batches, in name order."""

    batches: list = field(default_factory=list)
    review_states: list = field(default_factory=lambda: list(DEFAULT_REVIEW_STATES))
    include_gold: bool = DEFAULT_INCLUDE_GOLD
    exact_cells: bool = False


def refused(name: str, message: str, detail: str | None = None) -> ValidationFailed:
    return ValidationFailed(detail or f"{name}: {message}", [{"field": name, "message": message}])


def form_batches(project):
    return Batch.objects.filter(project=project, kind=BatchKind.FORM).order_by("name")


def check_batches(project, ids) -> list:
    """The project's form batches with these ids (none given: all of them); 400 naming ``batches[i]`` for an id
    that is not one (another project's batch reads the same as one that does not exist)."""
    if not ids:
        return list(form_batches(project))
    found = {batch.pk: batch for batch in form_batches(project).filter(pk__in=[i for i in ids if isinstance(i, int)])}
    for index, batch_id in enumerate(ids):
        if batch_id not in found:
            raise refused(f"batches[{index}]", f"{batch_id!r} is not a form batch of project {project.name}")
    return sorted({batch.pk: batch for batch in found.values()}.values(), key=lambda batch: batch.name)


def check_review_states(states, include_gold: bool) -> list:
    for index, state in enumerate(states):
        if state not in REVIEW_STATES:
            raise refused(f"review_states[{index}]", f"{state!r} is not one of: {', '.join(REVIEW_STATES)}")
    if not states and not include_gold:
        raise refused("review_states", "expected at least one review state, or include_gold (nothing to export)")
    return [state for state in REVIEW_STATES if state in states]  # one order whatever order they came in


def check_form_filters(project, batches=None, review_states=None, include_gold=None, exact_cells=None, statuses=None):
    """The filters of a TurkingBench export; ``None`` means not given (the defaults). ``statuses`` (demo
    statuses) is refused: form work has review states."""
    if statuses is not None:
        message = "demo statuses are for WebLINX and Mind2Web; a TurkingBench export takes review_states"
        raise refused("statuses", message)
    gold = DEFAULT_INCLUDE_GOLD if include_gold is None else bool(include_gold)
    states = DEFAULT_REVIEW_STATES if review_states is None else review_states
    return FormFilters(check_batches(project, batches), check_review_states(states, gold), gold, bool(exact_cells))


def check_no_form_filters(export_format, batches=None, review_states=None, include_gold=None, exact_cells=None):
    """400 naming the first TurkingBench filter set on an export of demonstrations."""
    given = {"batches": batches, "review_states": review_states is not None, "include_gold": include_gold}
    given["exact_cells"] = exact_cells
    for name, value in given.items():
        if value:
            label = ExportFormat(export_format).label
            raise refused(name, f"only for a TurkingBench export (this one is {label})")
