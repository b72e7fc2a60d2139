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
