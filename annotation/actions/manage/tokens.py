"""Personal API tokens (DRF authtoken: one per user): made, rotated and revoked by their owner on the token page."""

from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from ..errors import Conflict


def token_of(user):
    return Token.objects.filter(user=user).first()


def do_create_token(user) -> Token:
    """A first token (409 when the user has one: rotate it instead)."""
    try:
        with transaction.atomic():
            return Token.objects.create(user=user)
    except IntegrityError:
        raise Conflict("you already have a token; rotate it to get a new key") from None


def do_rotate_token(user) -> Token:
    """A new key; the old one stops working at once."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def do_revoke_token(user) -> bool:
    """Delete the token; scripts and recorders using it get 401 from now on. False when there was none."""
    return bool(Token.objects.filter(user=user).delete()[0])
