"""Project membership checks shared by the actions: which project a user may act in, with which role."""

from ...models import Project
from ..errors import Forbidden, NotFound


def check_project_role(user, project_name, roles, cannot: str) -> Project:
    """The project ``user`` is a member of with one of ``roles``: 404 when they are not a member (whether it exists
    is not revealed), 403 naming what their role ``cannot`` do otherwise."""
    project = Project.objects.for_user(user).filter(name=project_name).first()
    if project is None:
        raise NotFound(f"no project {project_name!r} among yours", [{"field": "project", "message": "not found"}])
    if not project.has_role(user, roles):
        raise Forbidden(f"your role in {project_name!r} cannot {cannot}")
    return project


def check_not_other_role(user, objects, pk, cannot: str) -> None:
    """Forbidden, naming what the role ``cannot`` do, when ``pk`` is one of ``objects`` (jobs, runs, endpoints) in a
    project where ``user`` is a member: the caller found it outside what the role may read and answers 404 otherwise
    (outside your projects nothing is revealed)."""
    if not (str(pk).isascii() and str(pk).isdigit()):  # "²" is a digit int() refuses
        return
    found = objects.filter(pk=int(pk), project__in=Project.objects.for_user(user)).select_related("project").first()
    if found is not None:
        raise Forbidden(f"your role in {found.project.name!r} cannot {cannot}")
