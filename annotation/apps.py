from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AdminConfig(admin_apps.AdminConfig):
    """Django's admin with the platform's site: staff only, the app's 403 page for anyone else signed in
    (``INSTALLED_APPS`` names it instead of ``django.contrib.admin``)."""

    default = False  # the annotation app's own configuration stays AnnotationConfig
    default_site = "annotation.admin_site.StaffAdminSite"


class AnnotationConfig(AppConfig):
    """The domain: projects, demonstrations, turns and their files."""

    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
        from django.db.models.signals import post_delete, post_save, pre_save
        from PIL import Image
        from rest_framework.authtoken.models import Token

        import config.checks  # noqa: F401 (registers the settings checks)

        from .models import Membership

        # Pillow then refuses images over twice the limit wherever they are decoded (thumbnails, re-alignment)
        # and warns above it; ingest refuses anything above it before decoding (``check_image_pixels``).
        Image.MAX_IMAGE_PIXELS = settings.INGEST_MAX_IMAGE_PIXELS

        user_login_failed.connect(count_sign_in_failure, dispatch_uid="annotation.sign_in_failure")
        user_logged_in.connect(forget_sign_in_failures, dispatch_uid="annotation.sign_in_success")

        # Access ends the moment a grant ends, however it ends (``annotation/actions/manage/grants.py``).
        user = get_user_model()
        pre_save.connect(user_before_save, sender=user, dispatch_uid="annotation.grants.user_before")
        post_save.connect(user_saved, sender=user, dispatch_uid="annotation.grants.user_saved")
        post_save.connect(membership_changed, sender=Membership, dispatch_uid="annotation.grants.membership_saved")
        post_delete.connect(membership_changed, sender=Membership, dispatch_uid="annotation.grants.membership_gone")
        post_delete.connect(token_deleted, sender=Token, dispatch_uid="annotation.grants.token_deleted")
        user_logged_out.connect(signed_out, dispatch_uid="annotation.grants.signed_out")


def count_sign_in_failure(sender, credentials, request=None, **kwargs):
    """Every failed ``authenticate()`` of a request (sign-in page, admin, API token) counts for the throttle."""
    from .actions.manage.signin import client_address, do_note_sign_in_failure

    if request is not None:
        do_note_sign_in_failure(str(credentials.get("username", "")), client_address(request))


def forget_sign_in_failures(sender, request, user, **kwargs):
    """A successful sign-in of a session clears that username's failures from that address."""
    from .actions.manage.signin import client_address, do_forget_sign_in_failures

    if request is not None:
        do_forget_sign_in_failures(user.get_username(), client_address(request))


def user_before_save(sender, instance, update_fields=None, raw=False, **kwargs):
    from .actions.manage import grants

    if not raw:  # fixtures load as they are
        grants.note_user_before_save(instance, update_fields)


def user_saved(sender, instance, created, update_fields=None, raw=False, **kwargs):
    from .actions.manage import grants

    if not raw:
        grants.user_saved(instance, created, update_fields)


def membership_changed(sender, instance, created=False, raw=False, **kwargs):
    from .actions.manage import grants

    if not raw:
        grants.membership_changed(instance, created)


def token_deleted(sender, instance, **kwargs):
    from .actions.manage import grants

    grants.token_deleted(instance)


def signed_out(sender, request=None, user=None, **kwargs):
    from .actions.manage import grants

    grants.signed_out(user)
