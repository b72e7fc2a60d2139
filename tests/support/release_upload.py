"""A release packed and uploaded as a lab does: ``POST /api/projects/<name>/imports/`` with the archive in ``file``."""

import io
import tarfile
import zipfile

from django.core.files.uploadedfile import SimpleUploadedFile


def tar_gz(root, top="weblinx") -> bytes:
    """``root`` as a ``.tar.gz`` under the folder ``top``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root, arcname=top)
    return buffer.getvalue()


def zipped(root) -> bytes:
    """``root``'s files as a ``.zip``, paths relative to it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def upload(client, data: bytes, release_format=None, project="alpha", name="release.tar.gz"):
    """The upload's answer; ``format`` sent only when given (the API's default is weblinx)."""
    body = {"file": SimpleUploadedFile(name, data)}
    if release_format is not None:
        body["format"] = release_format
    return client.post(f"/api/projects/{project}/imports/", body, format="multipart")
