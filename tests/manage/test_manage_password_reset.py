"""Password reset mails a link, so it is offered only when mail is configured (``EMAIL_HOST`` or ``EMAIL_BACKEND``,
``PASSWORD_RESET_ENABLED``): otherwise the sign-in page shows no link and every reset page is a 404. With mail, a
person resets their password from the link in the mail and signs in with the new one."""

import re

import pytest
from django.core import mail
from django.test import Client

pytestmark = pytest.mark.django_db
RESET_PAGES = ["/accounts/password_reset/", "/accounts/password_reset/done/", "/accounts/reset/MQ/set-password/"]
RESET_PAGES.append("/accounts/reset/done/")


def test_by_default_no_mail_is_configured_and_password_reset_is_not_offered(settings, owner):
    assert settings.PASSWORD_RESET_ENABLED is False
    client = Client()

    page = client.get("/accounts/login/").content.decode()
    assert "password_reset" not in page
    assert "Forgot your password" not in page
    for url in RESET_PAGES:
        assert client.get(url).status_code == 404, url
    assert client.post("/accounts/password_reset/", {"email": "owner@example.com"}).status_code == 404
    assert mail.outbox == []


def test_with_mail_a_person_resets_their_password_from_the_mailed_link(settings, owner):
    settings.PASSWORD_RESET_ENABLED = True  # EMAIL_HOST or EMAIL_BACKEND set; the test run keeps mails in memory
    owner.email = "owner@example.com"
    owner.save()
    client = Client()

    page = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/password_reset/"' in page
    assert client.post("/accounts/password_reset/", {"email": "owner@example.com"}).status_code == 302
    assert len(mail.outbox) == 1
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200
    new = {"new_password1": "A-new-Passw0rd!", "new_password2": "A-new-Passw0rd!"}
    assert client.post(form.redirect_chain[-1][0], new).status_code == 302

    assert Client().login(username="owner", password="A-new-Passw0rd!")
