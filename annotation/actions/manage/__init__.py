"""Projects, members and roles, personal API tokens, and signing in: ``access`` (the role check every area's actions
make: ``check_project_role``), ``projects`` (create, settings, members), ``tokens``, ``signin`` (throttling),
``invitations`` (invitation links to a project), ``people`` (accounts, for site admins)."""

from .access import check_project_role
from .invitations import (
    check_invitation,
    check_join_allowed,
    check_not_member,
    check_project_invitation,
    do_accept_invitation,
    do_create_invitation,
    do_join_with_new_account,
    do_mail_invitation,
    do_note_join_failure,
    do_revoke_invitation,
    mail_configured,
    open_invitations,
)
from .people import accounts, check_site_admin, do_create_account, do_set_active, is_site_admin
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
    do_set_record_traffic,
    do_update_project,
)
from .signin import check_sign_in_allowed, client_address, do_forget_sign_in_failures, do_note_sign_in_failure
from .tokens import do_create_token, do_revoke_token, do_rotate_token, token_of
