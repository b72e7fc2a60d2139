"""Sign-in pages with throttling (``annotation.actions.manage.signin``): the app's login and the admin's; password reset
only when mail can be sent (``PASSWORD_RESET_ENABLED``)."""

from functools import wraps

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.shortcuts import render

from ...actions import TooManyRequests
from ...actions.manage.signin import check_sign_in_allowed, client_address
from ..page_errors import refusal_kept


def sign_in_throttled(view):
    """Refuse a posted sign-in (429, a page saying when to try again, ``Retry-After``) once its username and
    address have failed too often; everything else goes to ``view``."""

    @wraps(view)
    def throttled(request, *args, **kwargs):
        if request.method == "POST":
            with refusal_kept(TooManyRequests) as refusal:
                check_sign_in_allowed(request.POST.get("username", ""), client_address(request))
            if refusal:
                context = {"error": refusal.error}
                response = render(request, "registration/throttled.html", context, status=refusal.status)
                response["Retry-After"] = str(refusal.error.retry_after)
                return response
        return view(request, *args, **kwargs)

    return throttled


class SignInView(auth_views.LoginView):
    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "password_reset": settings.PASSWORD_RESET_ENABLED}


login = sign_in_throttled(SignInView.as_view())
admin_login = sign_in_throttled(admin.site.login)


def with_mail(view):
    """Password reset mails a link: without a configured mail backend its pages are a 404 (and the sign-in page
    offers no link), instead of a form that says a mail was sent when none can be."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        if not settings.PASSWORD_RESET_ENABLED:
            raise Http404("password reset is off: no mail is configured (EMAIL_HOST or EMAIL_BACKEND)")
        return view(request, *args, **kwargs)

    return checked
