"""A batch's new blob files, written while the batch is still being checked and moved into place once it is stored.

On local storage a checker thread writes each new blob, right after checking it, to a private file under
``blobs/.incoming/``; the batch's transaction then renames the files to their content addresses (an atomic
``os.replace`` on the same file system), files before rows as always. Writing in the checker threads overlaps the
writes with the other blobs' checks and the turns' validation, and writes each blob with one ``os.write`` from the
body's buffer (``Storage.save`` copied it into a ``BytesIO``, wrote it in 64 KiB pieces, and created its folders
again for every file). A refused batch unlinks what it staged: nothing reaches the content addresses, and a file is
only ever seen there whole; what a killed process staged is removed by ``sweep_staged`` (Celery beat) after an
hour. Other storages (S3) write as before, once the batch is accepted.

With ``BLOB_FSYNC`` (the default) a staged file's fsync starts as soon as it is written, the batch waits for them
all before its transaction, and the folders the renames wrote into are fsync'ed before its rows commit: a power
loss cannot leave a committed row naming a file the disk never got."""

import contextlib
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, default_storage
from django.core.files.storage.filesystem import safe_makedirs

from ...models import sha256_path
from ...store.blobstore import is_local

INCOMING = "blobs/.incoming"
# A staged file older than this is what a killed server process left (a batch is checked and stored in seconds).
STAGED_MAX_AGE = 3600

# Folders known to exist, so a write does not ask again (``os.makedirs`` stats each level). A folder removed
# behind our back is made again when a write finds it missing.
KNOWN_FOLDERS: set[str] = set()

# fsyncs (``BLOB_FSYNC``) run here, many at once: they wait on the disk, not the CPU (the GIL is released), and a
# journaling file system can commit concurrent ones together.
SYNCERS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="blob-fsync")


class Staging:
    """The files one batch wrote before it was accepted: ``stage`` from the checker threads, ``flush`` once every
    check passed, then ``place`` in the batch's transaction, ``discard`` always (it removes only what was not
    placed; leaving ``with Staging() as staging`` does it). With ``BLOB_FSYNC`` a blob's bytes are on disk before
    its file is renamed into place, and the rename before the batch's rows commit."""

    def __init__(self, storage=None):
        self.storage = storage or default_storage
        self.local, self.sync = is_local(self.storage), settings.BLOB_FSYNC
        self.files: dict[str, str] = {}  # sha256 → staged path
        self.syncing = []  # the staged files' fsyncs, started as they are written

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()

    def stage(self, sha256: str, data) -> None:
        """Write ``data`` to a private file now (local storage only; S3 is written when the batch is placed)."""
        if not self.local:
            return
        path = os.path.join(self.storage.path(INCOMING), f"{sha256}.{secrets.token_hex(8)}")
        write_file(path, data, self.storage)
        self.files[sha256] = path
        if self.sync:
            self.syncing.append(SYNCERS.submit(sync_path, path))

    def flush(self) -> None:
        """The staged files' bytes onto the disk (``BLOB_FSYNC``), all at once, before the batch's transaction."""
        for syncing in self.syncing:
            syncing.result()

    def place(self, blobs: list, pool) -> list[str]:
        """Store each of ``blobs`` under its content address and return the storage names: staged files are moved
        there, the others (S3, or a blob that was stored elsewhere when the batch was checked and is gone now)
        saved through the storage on ``pool``."""
        names = [sha256_path(blob.sha256) for blob in blobs]
        unstaged, moved = [], set()
        for blob, name in zip(blobs, names, strict=True):
            staged = self.files.pop(blob.sha256, None)
            if staged is None:
                unstaged.append((blob, name))
            else:
                target = self.storage.path(name)
                move_file(staged, target, self.storage)
                moved.add(os.path.dirname(target))
        saved = list(pool.map(lambda item: self.storage.save(item[1], ContentFile(bytes(item[0].data))), unstaged))
        if self.sync and self.local:  # the renames' folder entries, and any file just saved whole with its folders
            list(SYNCERS.map(sync_path, moved))
            list(SYNCERS.map(lambda name: sync_saved(self.storage, name), saved))
        placed = dict(zip((name for _, name in unstaged), saved, strict=True))
        return [placed.get(name, name) for name in names]

    def discard(self) -> None:
        for path in self.files.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.files.clear()


def write_file(path: str, data, storage: FileSystemStorage) -> None:
    """A new file at ``path`` holding ``data``, written from the caller's buffer, with the storage's permissions."""
    fd = open_new(path, storage)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if storage.file_permissions_mode is not None:
            os.fchmod(fd, storage.file_permissions_mode)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


def open_new(path: str, storage: FileSystemStorage) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    return in_folder(os.path.dirname(path), storage, lambda: os.open(path, flags, 0o666))


def move_file(source: str, target: str, storage: FileSystemStorage) -> None:
    in_folder(os.path.dirname(target), storage, lambda: os.replace(source, target))


def in_folder(folder: str, storage: FileSystemStorage, action):
    """``action()``, which makes an entry in ``folder``, once the folder exists; if it fails for a missing file
    (the folder was removed after it was known), the folder is made again and ``action`` tried once more."""
    ensure_folder(folder, storage)
    try:
        return action()
    except FileNotFoundError:
        ensure_folder(folder, storage, again=True)
        return action()


def ensure_folder(folder: str, storage: FileSystemStorage, again: bool = False) -> None:
    if folder in KNOWN_FOLDERS and not again:
        return
    missing = []  # the folders this call makes, deepest first
    parent = folder
    while not os.path.isdir(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    if storage.directory_permissions_mode is None:
        os.makedirs(folder, exist_ok=True)
    else:
        safe_makedirs(folder, storage.directory_permissions_mode, exist_ok=True)
    if missing and settings.BLOB_FSYNC:  # each new folder's entry in its parent, so a blob's path survives a crash
        for made in missing:
            sync_path(os.path.dirname(made))
    KNOWN_FOLDERS.add(folder)


def sync_saved(storage, name: str) -> None:
    """After ``storage.save(name, ...)`` on local storage (``BLOB_FSYNC``): the file's bytes and every folder entry
    from the storage's root down to it onto the disk (the storage may just have made those folders)."""
    if not (settings.BLOB_FSYNC and is_local(storage)):
        return
    path, root = storage.path(name), os.path.abspath(storage.location)
    sync_path(path)
    folder = os.path.dirname(path)
    while folder.startswith(root) and folder != root:
        sync_path(folder)
        folder = os.path.dirname(folder)
    sync_path(root)


def sync_path(path: str) -> None:
    """Flush a file's bytes, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep_staged(storage=None, max_age: float = STAGED_MAX_AGE) -> int:
    """Remove staged files older than ``max_age`` seconds: left by a server process killed between checking a batch
    and storing it (Celery beat: ``workers.sweep_staged_blobs``). Returns how many."""
    storage = storage or default_storage
    if not is_local(storage):
        return 0
    folder, removed = storage.path(INCOMING), 0
    with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                if entry.is_file() and entry.stat().st_mtime < time.time() - max_age:
                    os.unlink(entry.path)
                    removed += 1
    return removed
