"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path

from annotation.urls.manage import password_reset_urlpatterns
from annotation.views.manage import signin

urlpatterns = [
    # The two sign-in forms, throttled (before the includes that would serve them unthrottled).
    path("admin/login/", signin.admin_login),
    path("accounts/login/", signin.login, name="login"),
    path("admin/", admin.site.urls),
    # Password reset only when mail is configured (404 otherwise), before the include that would serve it anyway.
    path("accounts/", include(password_reset_urlpatterns)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    path("", include("annotation.urls")),
]

handler403 = "annotation.views.errors.permission_denied"
handler404 = "annotation.views.errors.page_not_found"
handler500 = "annotation.views.errors.server_error"
