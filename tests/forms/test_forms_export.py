"""The TurkingBench export of form batches: the 28 real tasks round-trip (import → export gives back each
batch.csv's instances and answers, equal as the platform reads them; cells a spreadsheet would run written with a
leading '), submitted work as answer rows, the split lists, and the same export as an export job."""

import io
import re
import tarfile

import pandas as pd
import pytest
from django.core.management import call_command

from agents.turkle import read_batch
from annotation.actions import forms
from annotation.models import ExportJob, JobStatus
from tests.support.forms_data import make_batch, task_dir, task_dirs, turkingbench_root
from workers.exports.jobs import run_export


def export(tmp_path, project="tb", *, gold=True, exact=False):
    out = tmp_path / "export"
    args = ["--format", "turkingbench", "--project", project, "--out", str(out), *(["--gold"] if gold else [])]
    args += ["--exact-cells"] if exact else []
    call_command("export_dataset", *args, stdout=io.StringIO())
    return out


NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# The real tasks with cells a spreadsheet would run: hashes beginning with +, "--NO SUBJECT--", "-3_Very_Informal".
WITH_FORMULA_CELLS = {"ATOMIC - Object Rationale", "Annotation subj_obj", "Word Formality Annotation"}


def spreadsheet_safe(value):
    """A cell as the export writes it (an independent statement of docs/security.md's rule, for pandas' values)."""
    runs = isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(value)
    return "'" + value if runs else value


def test_import_then_export_gives_back_the_28_real_tasks(db, tmp_path):
    """Each batch.csv comes back as the platform's readers read it (``agents.turkle``, as the official evaluator
    reads the original); byte for byte, but for a leading ' on the cells a spreadsheet would run (3 tasks)."""
    root = turkingbench_root()
    call_command(
        "import_turkingbench", *[str(d) for d in task_dirs()], project="tb", splits=str(root / "splits"),
        stdout=io.StringIO(),
    )  # fmt: skip
    out = export(tmp_path)
    escaped = set()
    for path in task_dirs():
        exported = out / "tasks" / path.name
        original = pd.read_csv(path / "batch.csv", low_memory=False)
        pd.testing.assert_frame_equal(original, read_batch(exported / "batch.csv"), obj=path.name)
        raw = pd.read_csv(exported / "batch.csv", low_memory=False)  # as a spreadsheet or TurkingBench's tools see it
        pd.testing.assert_frame_equal(original.map(spreadsheet_safe), raw, obj=path.name)
        if (exported / "batch.csv").read_bytes() != (path / "batch.csv").read_bytes():
            escaped.add(path.name)
        assert (exported / "template.html").read_bytes() == (path / "template.html").read_bytes()
    assert escaped == WITH_FORMULA_CELLS  # every other batch.csv even byte for byte
    for split in (root / "splits").glob("*.txt"):
        assert (out / "splits" / split.name).read_text().split() == split.read_text().split()


def test_with_exact_cells_every_real_task_comes_back_byte_for_byte(db, tmp_path):
    """For TurkingBench's own tools: no cell escaped, so the 3 tasks with cells beginning with + or - too."""
    call_command("import_turkingbench", *[str(d) for d in task_dirs()], project="tb", stdout=io.StringIO())
    out = export(tmp_path, exact=True)
    for path in task_dirs():
        assert (out / "tasks" / path.name / "batch.csv").read_bytes() == (path / "batch.csv").read_bytes(), path.name


def test_without_gold_only_submitted_work_is_exported_with_multi_values_joined(alpha, owner, teammate, tmp_path):
    batch = make_batch(alpha, assignments_per_task=2, csv_text="topic,sentence,Answer.short\nw,s,gold\n")
    for worker, answers in ((owner, {"short": "a", "tags": ["b", "a"]}), (teammate, {"short": "c", "extra": "e"})):
        forms.do_submit(forms.do_accept_next(worker, batch).pk, answers)
    without = pd.read_csv(export(tmp_path / "1", "alpha", gold=False) / "tasks" / batch.name / "batch.csv", dtype=str)
    assert list(without.columns) == ["topic", "sentence", "Answer.short", "Answer.extra", "Answer.tags"]
    assert without.fillna("").to_dict("records") == [
        {"topic": "w", "sentence": "s", "Answer.short": "a", "Answer.extra": "", "Answer.tags": "b|a"},
        {"topic": "w", "sentence": "s", "Answer.short": "c", "Answer.extra": "e", "Answer.tags": ""},
    ]
    with_gold = pd.read_csv(export(tmp_path / "2", "alpha") / "tasks" / batch.name / "batch.csv", dtype=str)
    assert list(with_gold["Answer.short"]) == ["gold", "a", "c"]


def test_the_export_job_writes_the_turkingbench_archive(db, researcher, alpha, api_for):
    call_command(
        "import_turkingbench", str(task_dir("Formalize sentence")), str(task_dir("Event effect")), project="alpha",
        splits=str(turkingbench_root() / "splits"), stdout=io.StringIO(),
    )  # fmt: skip
    client = api_for(researcher)
    bad = client.post(
        "/api/exports/", {"project": "alpha", "format": "turkingbench", "splits": ["nope"]}, format="json"
    )
    assert bad.status_code == 400
    assert "evaluation_tasks_easy" in bad.json()["errors"][0]["message"]
    body = {"project": "alpha", "format": "turkingbench", "include_gold": True, "splits": ["evaluation_tasks_easy"]}
    created = client.post("/api/exports/", body, format="json")
    assert created.status_code == 202, created.json()
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert job.status == JobStatus.DONE, job.error
    assert job.counts["batches"] == 2
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = {member.name.split("/", 1)[1] for member in tar.getmembers() if member.isfile()}
    assert {"tasks/Formalize sentence/batch.csv", "tasks/Event effect/template.html"} <= names
    assert "splits/evaluation_tasks_easy.txt" in names
    assert "splits/evaluation_tasks_hard.txt" not in names
    assert "manifest.json" in names


def test_the_turkingbench_export_needs_a_project(db, tmp_path):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="needs --project"):
        call_command("export_dataset", format="turkingbench", out=str(tmp_path / "x"), stdout=io.StringIO())
