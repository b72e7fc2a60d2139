"""Attack: a form batch's name is a TurkingBench export's task folder (``tasks/<name>/``). A name the upload accepts
(up to 200 characters, any script) must export: a folder name is at most 255 bytes on the file systems exports are
written to, so a longer one (86 CJK characters are 258 bytes) is refused at upload, not failing every export."""

import pytest

from annotation.actions.errors import ValidationFailed
from annotation.models import ExportJob
from tests.support.forms_data import make_batch
from workers.exports.jobs import run_export


@pytest.mark.parametrize("name", ["\u6f22" * 85, "\u6f22" * 86, "\u00e9" * 128, "\u00e9" * 200, "q" * 200])
def test_a_batch_name_the_upload_accepts_exports(alpha, owner, media_storage, name):
    if len(name.encode()) > 255:
        with pytest.raises(ValidationFailed, match="bytes in UTF-8; at most 255"):
            make_batch(alpha, owner, name=name)
        return
    make_batch(alpha, owner, name=name)
    job = ExportJob.objects.create(project=alpha, owner=owner, format="turkingbench")
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.error
