"""Projects, members and roles, personal API tokens, and signing in: ``access`` (the role check every area's actions
make: ``check_project_role``), ``projects`` (create, settings, members), ``tokens``, ``signin`` (throttling)."""

from .access import check_project_role
from .projects import (
    CHOICE_FIELDS,
    MANAGE_ROLES,
    MAX_CHOICES,
    can_create_projects,
    check_keeps_an_admin,
    check_membership,
    check_project_admin,
    check_role,
    clean_choices,
    do_add_member,
    do_change_role,
    do_create_project,
    do_remove_member,
    do_update_project,
)
from .signin import check_sign_in_allowed, client_address, do_forget_sign_in_failures, do_note_sign_in_failure
from .tokens import do_create_token, do_revoke_token, do_rotate_token, token_of
