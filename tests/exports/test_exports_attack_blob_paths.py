"""Attack: ``dataset.local_blob_path`` (blob files joined without the storage's safe join for sha256 names) gives
what the storage's own ``path`` gives for every name, whatever form the storage's location takes, and refuses what
it refuses (a chosen screenshot or release file name that is not a sha256 never reaches outside the storage)."""

import hashlib

import pytest
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import FileSystemStorage

from annotation.models.recordings import sha256_path
from workers.exports import dataset

SHA = hashlib.sha256(b"x").hexdigest()
NAMES = [SHA, SHA.upper(), SHA + "\n", "a" * 64, "ab", "", "ab/cd", "/etc/passwd" + "0" * 53, "x/../../../../etc"]


@pytest.mark.parametrize("location", ["media", "media/", "sub/../media", "./media//", "{tmp}/media", "{tmp}/media/"])
def test_a_blob_path_is_the_storages_own_for_every_name(tmp_path, monkeypatch, location):
    monkeypatch.chdir(tmp_path)
    storage = FileSystemStorage(location=location.format(tmp=tmp_path))
    monkeypatch.setattr(dataset, "default_storage", storage)
    path_of = dataset.local_blob_path(storage.path(""))
    for name in NAMES:
        try:
            expected = storage.path(sha256_path(name))
        except SuspiciousFileOperation:
            with pytest.raises(SuspiciousFileOperation):
                path_of(name)
            continue
        assert path_of(name) == expected, name
        assert expected.startswith(str(tmp_path / "media") + "/")


def test_a_name_that_climbs_out_of_the_storage_is_refused(tmp_path, monkeypatch):
    storage = FileSystemStorage(location=tmp_path / "media")
    monkeypatch.setattr(dataset, "default_storage", storage)
    with pytest.raises(SuspiciousFileOperation):
        dataset.local_blob_path(storage.path(""))("../../../../../../etc/passwd")
