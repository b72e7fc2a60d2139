"""Token authentication that says what to send when a client uses another ``Authorization`` scheme."""

from rest_framework import authentication, exceptions


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
        return super().authenticate(request)
