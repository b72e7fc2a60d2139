"""Django's admin for staff only: a signed-in person who is not staff gets the app's 403 page on every admin page,
where Django would show its sign-in form again ("You are authenticated as …, but are not authorized"). Anonymous
visitors still get the admin's (throttled) sign-in page. The default admin site (``annotation.apps.AdminConfig``)."""

import functools

from django.contrib import admin
from django.core.exceptions import PermissionDenied

NOT_STAFF = "The admin site is for staff accounts; yours is not one. Sign out first to sign in with a staff account."


class StaffAdminSite(admin.AdminSite):
    def refuse_non_staff(self, request) -> None:
        if request.user.is_authenticated and not self.has_permission(request):
            raise PermissionDenied(NOT_STAFF)

    def admin_view(self, view, cacheable=False):
        guarded = super().admin_view(view, cacheable)

        @functools.wraps(guarded)
        def staff_only(request, *args, **kwargs):
            self.refuse_non_staff(request)
            return guarded(request, *args, **kwargs)

        return staff_only

    def login(self, request, extra_context=None):
        self.refuse_non_staff(request)
        return super().login(request, extra_context)
