"""People for tests: users with a role in a project, their API and page clients, and recordings they start."""

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.actions import do_start_recording
from annotation.models import Demonstration, DemoStatus, Membership


def server_password(user, password: str):
    """Give ``user`` a password a server process started by a test can check: the test process hashes with MD5
    (``fast_password_hashing``), which the server's settings do not accept. PBKDF2 with few iterations, to be quick."""
    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(password, hasher.salt(), iterations=1000)
    user.save(update_fields=["password"])
    return user


def make_user(username, project=None, role=None):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-Passw0rd!")
    if project is not None:
        Membership.objects.create(project=project, user=user, role=role)
    return user


def start_demo(
    navigator,
    project,
    instructor=None,
    sees_screen=True,
    mode="chat",
    task="Find the weather in Montreal",
    status=DemoStatus.RECORDING,
) -> Demonstration:
    """A demonstration started as the recorder starts one (a new client id each time), then given ``status``."""
    demo, _ = do_start_recording(
        navigator,
        project,
        f"client-{navigator.pk}-{Demonstration.objects.count()}",
        mode=mode,
        instructor=instructor,
        instructor_sees_screen=sees_screen,
        task_description=task,
    )
    if status != DemoStatus.RECORDING:
        Demonstration.objects.filter(pk=demo.pk).update(status=status)
        demo.refresh_from_db()
    return demo


def token_client(user) -> APIClient:
    """An API client authenticated the way the recorder is: ``Authorization: Token <key>``."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def signed_in(user) -> Client:
    """A page client signed in as ``user`` (a session, as a browser has)."""
    client = Client()
    client.force_login(user)
    return client
