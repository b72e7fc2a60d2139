"""Token authentication that says what to send when a client uses another ``Authorization`` scheme, and that takes
the token the ASGI body guard has just checked instead of reading it again."""

from rest_framework import authentication, exceptions

from config.body_guard import CHECKED_TOKEN


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``. Another scheme (``Bearer``, ``Basic``, ...) is a 401 that names the right
    one, instead of DRF's "credentials were not provided" (which sends people looking for a missing header)."""

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if header and header[0].lower() != self.keyword.lower().encode():
            scheme = header[0].decode(errors="replace")[:20]
            raise exceptions.AuthenticationFailed(
                f"the {scheme!r} authorization scheme is not accepted: use `Authorization: Token <key>`"
            )
        checked = getattr(request._request, "scope", {}).get(CHECKED_TOKEN)
        if checked is not None and len(header) == 2 and header[1].decode(errors="replace") == checked.key:
            return checked.user, checked  # found with an active user by the guard, moments ago, for this request
        return super().authenticate(request)
