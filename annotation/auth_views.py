"""Sign-in pages with throttling (``annotation.actions.signin``): the app's login and the admin's."""

from functools import wraps

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.shortcuts import render

from .actions import TooManyRequests
from .actions.signin import check_sign_in_allowed, client_address


def sign_in_throttled(view):
    """Refuse a posted sign-in (429, a page saying when to try again, ``Retry-After``) once its username and
    address have failed too often; everything else goes to ``view``."""

    @wraps(view)
    def throttled(request, *args, **kwargs):
        if request.method == "POST":
            try:
                check_sign_in_allowed(request.POST.get("username", ""), client_address(request))
            except TooManyRequests as error:
                response = render(request, "registration/throttled.html", {"error": error}, status=error.status)
                response["Retry-After"] = str(error.retry_after)
                return response
        return view(request, *args, **kwargs)

    return throttled


login = sign_in_throttled(auth_views.LoginView.as_view())
admin_login = sign_in_throttled(admin.site.login)
