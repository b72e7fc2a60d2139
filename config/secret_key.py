"""The secret key: from ``SECRET_KEY``, else the file ``make run`` creates on its first run (``var/secret_key``,
mode 0600), else a development key that only ``DEBUG`` may run with (``config/checks.py`` refuses it otherwise).

Importable without Django set up: the settings use it before Django is configured.
"""

import os
import secrets
from pathlib import Path

FILE_NAME = "secret_key"
# Keys that are public (this repository's former default, Django's startproject prefix): signing with one lets
# anyone forge sessions, password-reset links and signed values.
DEVELOPMENT_KEY = "dev-only-insecure-key-set-SECRET_KEY-in-production"
KNOWN_DEVELOPMENT_KEYS = {DEVELOPMENT_KEY, ""}
INSECURE_PREFIXES = ("django-insecure-",)
MIN_LENGTH = 32


def is_development_key(key: str) -> bool:
    """A key known to the public or too short to be secret."""
    return key in KNOWN_DEVELOPMENT_KEYS or key.startswith(INSECURE_PREFIXES) or len(key) < MIN_LENGTH


def read_key_file(path: Path) -> str:
    """The key kept in ``path``, or "" when there is none."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def ensure_key_file(path: Path) -> tuple[str, bool]:
    """The key in ``path``, created (random, mode 0600) when missing. Returns ``(key, created)``.

    Written to a private temporary file and linked into place, so a process starting at the same moment either
    finds no file or the whole key, never a half-written one; the loser of a race reads the winner's key."""
    key = read_key_file(path)
    if key:
        return key, False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_urlsafe(64) + "\n")
    try:
        os.link(temporary, path)
        created = True
    except FileExistsError:
        created = False
    finally:
        temporary.unlink()
    return read_key_file(path), created


def secret_key(var_dir: Path) -> str:
    """``SECRET_KEY`` from the environment, else the key file under ``var_dir``, else the development key."""
    return os.environ.get("SECRET_KEY") or read_key_file(var_dir / FILE_NAME) or DEVELOPMENT_KEY
