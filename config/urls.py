"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path

from annotation import auth_views

urlpatterns = [
    # The two sign-in forms, throttled (before the includes that would serve them unthrottled).
    path("admin/login/", auth_views.admin_login),
    path("accounts/login/", auth_views.login, name="login"),
    path("admin/", admin.site.urls),
    # Password reset only when mail is configured (404 otherwise), before the include that would serve it anyway.
    path("accounts/", include(auth_views.password_reset_urls)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    path("", include("annotation.urls")),
]

handler403 = "annotation.views.errors.permission_denied"
handler404 = "annotation.views.errors.page_not_found"
handler500 = "annotation.views.errors.server_error"
