"""A project's model endpoints and the limits on the runs that ask them (the agents area): who may change an
endpoint, where it may point, and what a run may ask of it.

- **Owned**: the project's researchers and admins add endpoints and use any of them in runs; only the one who added
  an endpoint (its owner) or an admin of the project changes or removes it (``check_endpoint_changeable``, 403).
  Changing its URL removes its stored key unless a new key comes with the change, so a key is only ever sent to a
  URL given together with it.
- **Confined**: unless ``settings.MODEL_ENDPOINTS_ALLOW_PRIVATE``, a URL whose host is or resolves to a loopback,
  private, link-local, unspecified, multicast, reserved or other non-global address is refused when it is saved
  (400 naming ``url`` and the class of address), and the client checks the address it connects to again
  (``agents.netguard``).
- **Limits** (``ModelLimits``, per project, changed by its admins): the most tokens per answer, requests in flight,
  browsers, seconds per request and instances a run may ask for, and the most bytes of a reply read.
"""

import urllib.parse

from django.conf import settings
from django.db import IntegrityError, transaction

from agents import llm, netguard

from ..lib import redact
from ..models import ModelEndpoint, ModelLimits, Project, Role
from .errors import Conflict, Forbidden, ValidationFailed, invalid
from .exports.jobs import EXPORT_ROLES
from .manage.access import check_not_other_role as check_other_role
from .manage.access import check_project_role

ENDPOINT_FIELDS = ("url", "model", "key", "vision")
MAX_KEY_LENGTH = 4096
URL_CHANGE_NOTE = "Changing the URL removes the stored key unless a new key is given with it."
MODELS_CANNOT = "use agents and models (researchers and admins only)"  # what other roles of a project are told

# --- Endpoints ---------------------------------------------------------------------------------------------------


def check_project_for_models(user, project_name) -> Project:
    """The project where ``user`` may run agents and models, read or set its endpoints and limits: 404 for
    non-members, 403 naming the roles that may for its other roles."""
    return check_project_role(user, project_name, EXPORT_ROLES, MODELS_CANNOT)


def check_not_other_role(user, jobs, pk) -> None:
    """Forbidden when ``pk`` is one of ``jobs`` (agent or prediction runs, endpoints) in a project where ``user`` has
    a role that may not use models; the caller answers 404 otherwise."""
    check_other_role(user, jobs, pk, MODELS_CANNOT)


def check_endpoint_address(url: str) -> None:
    """400 naming ``url`` when its host is, or resolves to, an address model endpoints may not reach here."""
    if settings.MODEL_ENDPOINTS_ALLOW_PRIVATE:
        return
    parts = urllib.parse.urlsplit(url)
    if message := netguard.host_refusal(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)):
        raise invalid("url", message)


def check_endpoint_fields(url=None, model=None, key=None, vision=None, required=True) -> None:
    """400 naming the field: an http(s) URL with a host it may reach, a model name, a key that is text, vision a
    boolean. ``required=False`` (a change) checks only what is given (not None)."""
    if url is not None or required:
        if message := llm.check_url(url):
            raise invalid("url", message)
        if len(url) > 500:
            raise invalid("url", "at most 500 characters")
        if secret := secret_parameter(url):
            raise invalid("url", f"put the key in the key setting, not in the URL (its {secret!r} parameter)")
    if (model is not None or required) and (not isinstance(model, str) or not model.strip() or len(model) > 200):
        raise invalid("model", "expected the model's name (at most 200 characters)")
    if key is not None and (not isinstance(key, str) or len(key) > MAX_KEY_LENGTH or "\n" in key):
        raise invalid("key", f"expected the key as one line of at most {MAX_KEY_LENGTH} characters")
    if vision is not None and not isinstance(vision, bool):
        raise invalid("vision", "expected true or false")
    if url is not None:
        check_endpoint_address(url)


def may_change_endpoint(user, endpoint: ModelEndpoint) -> bool:
    """Whether ``user`` may change or remove ``endpoint``: the one who added it, or an admin of its project
    (superusers are admins everywhere). Other researchers use it in runs and read it (never its key)."""
    return endpoint.owner_id == user.pk or endpoint.project.role_of(user) == Role.ADMIN


def check_endpoint_changeable(user, endpoint: ModelEndpoint) -> None:
    """403 unless ``user`` may change or remove ``endpoint``; who may see it at all is checked before."""
    if not may_change_endpoint(user, endpoint):
        raise Forbidden(
            f"only the one who added model endpoint {endpoint.name!r} ({endpoint.owner.username}) or an admin of "
            f"project {endpoint.project.name!r} may change or remove it"
        )


def do_create_model_endpoint(user, project, name, url, model, key="", vision=False) -> ModelEndpoint:
    """A project's model endpoint, owned by ``user`` (409 when the name is taken). The key is stored, never shown
    back."""
    check_endpoint_fields(url, model, key, vision)
    try:
        with transaction.atomic():
            return ModelEndpoint.objects.create(
                project=project, owner=user, name=name, url=url, model=model, key=key or "", vision=bool(vision)
            )
    except IntegrityError:
        raise Conflict(f"project {project.name!r} already has a model endpoint {name!r}") from None


def do_change_model_endpoint(user, endpoint: ModelEndpoint, **changes) -> tuple[ModelEndpoint, bool]:
    """Change the given fields (its owner or a project admin): a key given replaces the stored one, ``""`` removes
    it, absent keeps it, except that a new URL without a key removes the stored key. Returns the endpoint and
    whether its key was removed because its URL changed."""
    check_endpoint_changeable(user, endpoint)
    changes = {name: value for name, value in changes.items() if name in ENDPOINT_FIELDS and value is not None}
    check_endpoint_fields(**changes, required=False)
    url_changed = "url" in changes and changes["url"] != endpoint.url
    key_removed = url_changed and "key" not in changes and endpoint.has_key
    if url_changed and "key" not in changes:
        changes["key"] = ""
    for name, value in changes.items():
        setattr(endpoint, name, value)
    endpoint.save(update_fields=list(changes) or None)
    return endpoint, key_removed


def do_delete_model_endpoint(user, endpoint: ModelEndpoint) -> None:
    """Remove an endpoint (its owner or a project admin); runs that used it keep their results."""
    check_endpoint_changeable(user, endpoint)
    endpoint.delete()


def endpoints_readable_by(user):
    """Endpoints of the projects where ``user`` is a researcher or admin (who may use them)."""
    return ModelEndpoint.objects.filter(project__in=Project.objects.for_user(user, EXPORT_ROLES)).select_related(
        "project", "owner"
    )


def check_endpoint_for_project(project, name) -> ModelEndpoint:
    """The project's endpoint named ``name``; 400 naming ``endpoint`` otherwise."""
    if not isinstance(name, str) or not name:
        raise invalid("endpoint", "the llm solver needs a model endpoint of the project (its name)")
    endpoint = ModelEndpoint.objects.filter(project=project, name=name).first()
    if endpoint is None:
        raise invalid("endpoint", f"project {project.name!r} has no model endpoint {name!r}")
    return endpoint


def chat_endpoint(endpoint: ModelEndpoint, temperature=0.0, max_tokens=1024, timeout=60.0, in_flight=1):
    """The ``agents.llm.Endpoint`` of a stored endpoint with a run's sampling settings, the site's address policy
    and the project's reply cap (``ValueError`` naming the setting when one is out of range)."""
    return llm.Endpoint(
        endpoint.url,
        endpoint.model,
        endpoint.key,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        in_flight=in_flight,
        allow_private=settings.MODEL_ENDPOINTS_ALLOW_PRIVATE,
        max_reply_bytes=ModelLimits.for_project(endpoint.project).max_reply_bytes,
    )


# --- Limits -------------------------------------------------------------------------------------------------------

# Each limit: (the run setting it caps, its label, the lowest and highest value an admin may set, whole number?).
LIMITS = {
    "max_tokens": ("max_tokens", "tokens per answer", 1, llm.MAX_TOKENS_LIMIT, True),
    "max_in_flight": ("in_flight", "requests in flight", 1, llm.MAX_IN_FLIGHT, True),
    "max_browsers": ("browsers", "browsers", 1, 16, True),
    "max_timeout": ("timeout", "seconds per request", 1, 3600, False),
    "max_instances": ("instances", "instances per run", 1, 10_000_000, True),
    "max_reply_bytes": (None, "bytes of a reply", 1024, llm.MAX_REPLY_BYTES_LIMIT, True),
}


def model_limits(project) -> ModelLimits:
    return ModelLimits.for_project(project)


def check_model_limits(changes: dict) -> None:
    """400 naming each limit out of its range (every bad one at once)."""
    problems = []
    for name, value in changes.items():
        _, _, low, high, whole = LIMITS[name]
        number = isinstance(value, int) if whole else isinstance(value, int | float)
        if isinstance(value, bool) or not number or not low <= value <= high:
            kind = "a whole number" if whole else "a number"
            problems.append({"field": name, "message": f"expected {kind} from {low} to {high}"})
    if problems:
        raise ValidationFailed("; ".join(f"{p['field']}: {p['message']}" for p in problems), problems)


def check_limits_changeable(user, project) -> None:
    if project.role_of(user) != Role.ADMIN:
        raise Forbidden(f"only an admin of project {project.name!r} may change its model limits")


def do_change_model_limits(user, project, **changes) -> ModelLimits:
    """Change the given limits of the project (its admins); None leaves a limit as it is."""
    check_limits_changeable(user, project)
    changes = {name: value for name, value in changes.items() if name in LIMITS and value is not None}
    check_model_limits(changes)
    with transaction.atomic():
        limits, _ = ModelLimits.objects.select_for_update().get_or_create(project=project)
        for name, value in changes.items():
            setattr(limits, name, value)
        limits.save()
    return limits


def check_within_limit(limits: ModelLimits, limit: str, value) -> None:
    """400 naming the run setting ``limit`` caps when ``value`` is above it (None: not asked for)."""
    setting, label, *_ = LIMITS[limit]
    cap = getattr(limits, limit)
    if value is not None and value > cap:
        shown = f"{cap:g}" if isinstance(cap, float) else cap
        raise invalid(
            setting,
            f"at most {shown} {label} in project {limits.project.name!r} (its model limits; an admin of the project "
            "may raise them)",
        )


def capped_default(limits: ModelLimits, limit: str, default):
    """A run setting's default, within the project's limit."""
    return min(default, getattr(limits, limit))


def secret_parameter(url: str) -> str | None:
    """The name of a query or fragment parameter of ``url`` that holds a secret (``?api_key=…``, the recorder's rule,
    ``annotation.lib.redact``): such a URL would show its key to every researcher of the project."""
    parts = urllib.parse.urlsplit(url)
    for name, _ in urllib.parse.parse_qsl(f"{parts.query}&{parts.fragment}", keep_blank_values=True):
        if redact.is_secret_parameter(name):
            return name
    return None
