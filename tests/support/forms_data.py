"""Form-task test data: the real TurkingBench tasks (``TURKINGBENCH_DATA``) and small hand-written batches.

The real tasks are read from the directory ``TURKINGBENCH_DATA`` names (``.ci/run`` sets it to
``../shared/data/turkingbench``). Without the variable, tests that need them skip with a message naming it: the
only skip the suite allows.
"""

import os
import threading
from pathlib import Path

import pytest
from django.db import connections

from annotation.actions.forms import BatchSettings, do_create_form_batch, parse_batch

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = "TURKINGBENCH_DATA"


def turkingbench_root() -> Path:
    """The TurkingBench data directory, or a skip naming ``TURKINGBENCH_DATA`` when it is not set."""
    raw = os.environ.get(VARIABLE)
    if not raw:
        pytest.skip(
            f"{VARIABLE} is not set: point it at the TurkingBench tasks (.ci/run uses ../shared/data/turkingbench)"
        )
    path = Path(raw)
    path = path if path.is_absolute() else (ROOT / path).resolve()
    assert (path / "tasks").is_dir(), f"{VARIABLE}={raw} has no tasks/ folder"
    return path


def task_dirs() -> list[Path]:
    return sorted(p for p in (turkingbench_root() / "tasks").iterdir() if (p / "batch.csv").is_file())


def task_dir(name: str) -> Path:
    return turkingbench_root() / "tasks" / name


# A small template with every control kind: text, textarea, radio, a checkbox group, select and range.
TEMPLATE = """<h3>Question about ${topic}</h3>
<p id="sentence">${sentence}</p>
<label>Short answer <input type="text" name="short"></label>
<textarea name="long"></textarea>
<label><input type="radio" name="polarity" value="pos"> positive</label>
<label><input type="radio" name="polarity" value="neg"> negative</label>
<label><input type="checkbox" name="tags" value="a"> a</label>
<label><input type="checkbox" name="tags" value="b"> b</label>
<label><input type="checkbox" name="tags" value="c"> c</label>
<select name="level"><option value="">choose</option><option value="low">low</option>
<option value="high">high</option></select>
<input type="range" name="score" min="0" max="10" value="5">
"""
CSV = "topic,sentence\nweather,It rains.\nsport,They won.\nfood,It is spicy.\n"


def make_batch(project, user=None, template=TEMPLATE, csv_text=CSV, name="questions", **settings):
    """A stored form batch from text, through the same parse and action as an upload."""
    parsed = parse_batch(template.encode(), csv_text.encode(), f"{name}.csv")
    return do_create_form_batch(user, project, name, parsed, BatchSettings(**settings))


def run_at_once(functions):
    """Run each function in its own thread (own database connection), released together; returns results."""
    barrier, results, errors = threading.Barrier(len(functions)), [None] * len(functions), []

    def run(index, function):
        try:
            barrier.wait(timeout=30)
            results[index] = function()
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results
