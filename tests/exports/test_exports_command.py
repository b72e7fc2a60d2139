"""`manage.py export_dataset`: which demos it writes for each --status, what the official weblinx package loads
from it, and its errors (unknown project, non-empty output directory)."""

import json
import uuid

import pytest
import weblinx
from django.core.management import CommandError, call_command

from annotation.models import Demonstration, DemoStatus
from tests.support.corpus import ingest_corpus
from workers.exports.exporters.mind2web import NAMESPACE


@pytest.fixture
def demos(db):
    """Five demos, one per exportable status (and one still recording, never exported)."""
    rows = ingest_corpus(project="cmd", demos=6, turns=12, elements=20)
    statuses = [
        DemoStatus.VALIDATED,
        DemoStatus.RECORDED,
        DemoStatus.IN_REVIEW,
        DemoStatus.RETURNED,
        DemoStatus.REJECTED,
        DemoStatus.RECORDING,
    ]
    for demo, status in zip(rows, statuses, strict=True):
        Demonstration.objects.filter(pk=demo.pk).update(status=status)
    return {status: demo.name for demo, status in zip(rows, statuses, strict=True)}


def exported_names(out):
    return sorted(path.name for path in (out / "demonstrations").iterdir())


def test_validated_demos_only_by_default(demos, tmp_path):
    out = tmp_path / "weblinx"
    call_command("export_dataset", "--format", "weblinx", "--out", str(out), "--project", "cmd")
    assert exported_names(out) == [demos[DemoStatus.VALIDATED]]
    demo = weblinx.Demonstration(demos[DemoStatus.VALIDATED], base_dir=str(out / "demonstrations"))
    assert demo.is_valid()


def test_all_adds_every_status_but_recording_and_marks_rejected_demos(demos, tmp_path):
    out = tmp_path / "weblinx"
    call_command("export_dataset", "--format", "weblinx", "--out", str(out), "--status", "all")
    expected = sorted(name for status, name in demos.items() if status != DemoStatus.RECORDING)
    assert exported_names(out) == expected
    for status, name in demos.items():
        invalid = out / "demonstrations" / name / "invalid.json"
        assert invalid.exists() == (status == DemoStatus.REJECTED), status
    returned = demos[DemoStatus.RETURNED]
    assert weblinx.Demonstration(returned, base_dir=str(out / "demonstrations")).is_valid()
    splits = json.loads((out / "splits.json").read_text())
    assert returned in {name for names in splits.values() for name in names}


def test_mind2web_leaves_rejected_demos_out(demos, tmp_path):
    out = tmp_path / "mind2web"
    call_command("export_dataset", "--format", "mind2web", "--out", str(out), "--status", "all")
    written = set()
    for split in ("train", "test_task", "test_website", "test_domain"):  # quality.json beside them is no split
        written |= {task["annotation_id"] for task in json.loads((out / f"{split}.json").read_text())}
    kept = [name for status, name in demos.items() if status not in (DemoStatus.RECORDING, DemoStatus.REJECTED)]
    assert written == {str(uuid.uuid5(NAMESPACE, name)) for name in kept}


def test_errors_name_the_problem_and_leave_the_directory_alone(demos, tmp_path):
    with pytest.raises(CommandError, match=r"no project 'nope' \(projects: cmd\)"):
        call_command("export_dataset", "--format", "weblinx", "--out", str(tmp_path / "a"), "--project", "nope")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="is not empty"):
        call_command("export_dataset", "--format", "weblinx", "--out", str(full))
    assert (full / "keep.txt").read_text() == "mine"
    call_command("export_dataset", "--format", "weblinx", "--out", str(full), "--overwrite")
    assert not (full / "keep.txt").exists()
    assert exported_names(full) == [demos[DemoStatus.VALIDATED]]
