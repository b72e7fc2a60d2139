"""System checks of the deployment's settings, registered by ``annotation.apps`` and run by every management
command, by ``runplatform`` (``make run``) before it starts anything, and by the ASGI application when it loads."""

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from .secret_key import is_development_key

TAG = "secret_key"


@checks.register(TAG)
def check_secret_key(app_configs=None, **kwargs):
    """Refuse a known or weak secret key unless ``DEBUG`` is on: with a public key anyone can forge sessions and
    every other signed value."""
    if settings.DEBUG or not is_development_key(settings.SECRET_KEY):
        return []
    return [
        checks.Error(
            "SECRET_KEY is a known development key (or shorter than 32 characters) and DEBUG is off.",
            hint="Set SECRET_KEY to a long random value (e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(64))'), or run `make run` once, which keeps one in var/secret_key.",
            id="config.E001",
        )
    ]


def refuse_insecure_start() -> None:
    """Raise ``ImproperlyConfigured`` when the settings checks above fail (a server must not start)."""
    errors = [message for message in checks.run_checks(tags=[TAG]) if message.is_serious()]
    if errors:
        raise ImproperlyConfigured("; ".join(f"{error.id}: {error.msg} {error.hint}" for error in errors))
