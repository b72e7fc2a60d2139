"""Benchmark metrics: score model predictions against an exported benchmark, one pure module per format.

- ``weblinx``: the official WebLINX evaluator's per-turn metrics (intent match, element IoU, chrF, URL F1) and
  its aggregation (intent match, element group, text group, overall), reimplemented without the ``weblinx``
  package (which the tests use as the oracle).
- ``mind2web``: element accuracy, operation F1, step and task success, macro-averaged per task.

Both raise ``PredictionError`` for predictions that cannot be scored and ``DatasetError`` for a benchmark
directory that cannot be read; both are ``ValueError``.
"""


class MetricsError(ValueError):
    """Scoring cannot proceed; the message says what to fix."""


class PredictionError(MetricsError):
    """A prediction is malformed or does not match the benchmark; the message names its index and field."""


class DatasetError(MetricsError):
    """The benchmark data (splits, replays, records) is missing or malformed."""


def describe_prediction(index: int, field: str, problem: str) -> PredictionError:
    """The error for prediction ``index``: ``prediction 3: field 'turn_index' ...``."""
    return PredictionError(f"prediction {index}: field {field!r} {problem}")


def require_field(prediction, index: int, field: str, types: tuple, type_name: str, label: str = ""):
    """``prediction[field]`` if present and of one of ``types`` (bool never counts as int), else PredictionError.

    ``label`` names the field in the message when it is nested (``operation.op``).
    """
    if not isinstance(prediction, dict):
        raise PredictionError(f"prediction {index}: expected an object, got {type(prediction).__name__}")
    if field not in prediction:
        raise describe_prediction(index, label or field, "is missing")
    value = prediction[field]
    if isinstance(value, bool) or not isinstance(value, types):
        raise describe_prediction(index, label or field, f"must be {type_name}, got {type(value).__name__}")
    return value


def mean(values) -> float | None:
    """The arithmetic mean, or None for no values (the official evaluators' NaN)."""
    values = list(values)
    return sum(values) / len(values) if values else None
