"""The live session socket (``ws/sessions/<demo>/``) through the real ASGI application and the configured channel
layer (Redis when ``REDIS_URL`` is set, as in CI; in-memory otherwise).

Each test body is one coroutine run with ``async_to_sync``; database work inside it goes through
``database_sync_to_async`` like the consumer's own.
"""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.db import database_sync_to_async
from channels.layers import channel_layers, get_channel_layer
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation.actions import Conflict, do_ingest_turns, do_store_blob_bytes
from annotation.actions.events import session_group
from annotation.models import Demonstration, DemoStatus, Membership, Project, Role, Turn
from config.asgi import application
from tests.support import payloads
from tests.support.actors import make_user, signed_in, start_demo

pytestmark = pytest.mark.django_db(transaction=True)

SITE = b"http://testserver"
EXTENSION = b"chrome-extension://ojofndafcmbnamgfemifimjhmebbdglk"
BLOCKING_READ_S = RedisChannelLayer.brpop_timeout  # how long channels_redis waits on an idle channel


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """A new layer object per test (each test runs on its own event loop; channels_redis binds its locks to
    one), with nothing left in Redis or memory from an earlier test."""
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)
    layer = get_channel_layer()
    async_to_sync(layer.flush)()
    yield
    async_to_sync(layer.flush)()
    channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)


@pytest.fixture
def admin(alpha):
    return make_user("admin", alpha, Role.ADMIN)


@pytest.fixture
def demo(owner, alpha, instructor):
    return start_demo(owner, alpha, instructor)


@pytest.fixture
def blind_demo(owner, alpha, instructor):
    return start_demo(owner, alpha, instructor, sees_screen=False)


def session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def opened(demo_name: str, user=None, origin: bytes = SITE, cookie: bytes | None = None) -> WebsocketCommunicator:
    """A connected socket, signed in with ``user``'s session cookie (a new sign-in) or ``cookie`` when given (not
    joined yet)."""
    headers = [(b"origin", origin), (b"host", b"testserver")]
    if user is not None:
        cookie = await database_sync_to_async(session_cookie)(user)
    if cookie is not None:
        headers.append((b"cookie", cookie))
    socket = WebsocketCommunicator(application, f"/ws/sessions/{demo_name}/", headers=headers)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def joined(demo_name: str, user=None, after_seq=-1, token=None, origin: bytes = SITE, clock=None, cookie=None):
    """Join the session; returns ``(socket, welcome, caught-up turns)`` after ``synced``."""
    socket = await opened(demo_name, user, origin, cookie)
    message = {"type": "join", "after_seq": after_seq}
    if token is not None:
        message["token"] = token
    if clock is not None:
        message["clock"] = clock
    await socket.send_json_to(message)
    welcome = await socket.receive_json_from()
    assert welcome["type"] == "welcome", welcome
    turns = []
    while (message := await socket.receive_json_from())["type"] != "synced":
        assert message["type"] == "turn", message
        turns.append(message)
    return socket, welcome, turns


async def next_of(socket, kind: str, timeout=2) -> dict:
    """The next message of type ``kind``. Others read on the way wait in ``socket.inbox`` for their turn
    (an ``ack`` and the broadcast of the same message may arrive in either order)."""
    inbox = socket.__dict__.setdefault("inbox", [])
    for message in inbox:
        if message["type"] == kind:
            inbox.remove(message)
            return message
    while (message := await socket.receive_json_from(timeout=timeout))["type"] != kind:
        inbox.append(message)
    return message


async def only_presence_or_nothing(socket) -> None:
    """Assert nothing but presence notices is waiting or arrives for a short while."""
    waiting = socket.__dict__.setdefault("inbox", [])
    while not await socket.receive_nothing(timeout=0.3):
        waiting.append(await socket.receive_json_from())
    assert all(message["type"] == "presence" for message in waiting), waiting
    waiting.clear()


async def close_code(socket) -> int:
    output = await socket.receive_output(timeout=2)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def say(socket, client_id: str, utterance: str) -> dict:
    await socket.send_json_to({"type": "chat", "client_id": client_id, "utterance": utterance})
    return await next_of(socket, "ack")


def browser_batch(client_id: str, timestamp: float, seed: int = 1, project: str = "alpha") -> tuple[list[dict], str]:
    """A browser turn with blobs uploaded to ``project``, and the screenshot's sha256."""
    blobs = payloads.state_blobs(seed)
    for blob in blobs.values():
        do_store_blob_bytes(blob.data, blob.media_type, Project.objects.get(name=project))
    refs = payloads.state_refs(blobs)
    return [payloads.browser_turn(client_id, "click", timestamp, **refs)], refs["screenshot"]


async def ingest_browser_turn(demo, client_id: str, timestamp: float = 2.0, seed: int = 1) -> str:
    """Ingest one browser turn the way the recorder's upload does; returns its screenshot sha256."""
    turns, screenshot = await database_sync_to_async(browser_batch)(client_id, timestamp, seed)
    await database_sync_to_async(do_ingest_turns)(demo, turns)
    return screenshot


def run(scenario):
    async_to_sync(scenario)()


# --- Messages -------------------------------------------------------------------------------------------------


def test_messages_reach_both_sides_in_order_with_the_server_sequence(demo, owner, instructor):
    async def scenario():
        navigator, welcome, _ = await joined(demo.name, owner)
        teacher, teacher_welcome, _ = await joined(demo.name, instructor)
        assert (welcome["role"], teacher_welcome["role"]) == ("navigator", "instructor")
        assert welcome["invite"] is None  # it has its instructor: no invitation to show
        assert "invite" not in teacher_welcome
        acks = [await say(teacher, f"m{i}", f"step {i}") for i in range(3)]
        acks.append(await say(navigator, "n0", "done"))
        assert [(a["client_id"], a["seq"], a["duplicate"]) for a in acks] == [
            ("m0", 0, False),
            ("m1", 1, False),
            ("m2", 2, False),
            ("n0", 3, False),
        ]
        for socket in (navigator, teacher):
            got = [await next_of(socket, "turn") for _ in range(4)]
            assert [t["seq"] for t in got] == [0, 1, 2, 3]
            assert [(t["turn"]["speaker"], t["turn"]["utterance"]) for t in got] == [
                ("instructor", "step 0"),
                ("instructor", "step 1"),
                ("instructor", "step 2"),
                ("navigator", "done"),
            ]
            await only_presence_or_nothing(socket)
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)
    stored = list(demo.turns.order_by("seq").values_list("type", "speaker", "utterance", "timestamp"))
    assert [row[:3] for row in stored] == [
        ("chat", "instructor", "step 0"),
        ("chat", "instructor", "step 1"),
        ("chat", "instructor", "step 2"),
        ("chat", "navigator", "done"),
    ]
    times = [row[3] for row in stored]
    assert times == sorted(times)
    assert all(t >= 0 for t in times)


def test_a_resent_message_is_acknowledged_with_its_seq_and_stored_once(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        first = await say(teacher, "same-id", "open the weather site")
        assert (first["seq"], first["duplicate"]) == (0, False)
        assert (await next_of(navigator, "turn"))["seq"] == 0
        again = await say(teacher, "same-id", "open the weather site")
        assert (again["seq"], again["duplicate"]) == (0, True)
        await only_presence_or_nothing(navigator)  # a resend is not broadcast again
        await teacher.send_json_to({"type": "chat", "client_id": "same-id", "utterance": "something else"})
        error = await next_of(teacher, "error")
        assert (error["code"], error["client_id"]) == ("conflict", "same-id")
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)
    assert demo.turns.count() == 1


def test_hostile_frames_get_an_error_message_naming_the_field_and_the_socket_stays_usable(demo, owner):
    """JSON nested 100k deep (RecursionError in the parser), lone surrogates and 1e400 (which the database refuses)
    used to crash the consumer (close 1011)."""
    frames = [
        "[" * 100_000 + "]" * 100_000,
        '{"type": "chat", "client_id": "a", "utterance": "\\ud800"}',
        '{"type": "chat", "client_id": "b", "utterance": 1e400}',
        '{"type": "ping", "clock": ' + "[" * 80 + "]" * 80 + "}",
    ]

    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        errors = []
        for frame in frames:
            await navigator.send_to(text_data=frame)
            errors.append(await next_of(navigator, "error"))
        await navigator.send_json_to({"type": "chat", "client_id": "c", "utterance": "still here"})
        answers.extend([*errors, await next_of(navigator, "ack")])
        await navigator.disconnect()

    answers = []
    run(scenario)
    *errors, ack = answers
    assert [error["code"] for error in errors] == ["parse_error"] * 4
    assert [error["errors"][0]["field"] for error in errors[:3]] == ["body", "utterance", "utterance"]
    assert errors[3]["errors"][0]["field"].startswith("clock[0][0]")
    assert ack["seq"] == 0
    assert list(demo.turns.values_list("utterance", flat=True)) == ["still here"]


def test_invalid_messages_get_a_clear_error_and_store_nothing(demo, owner):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        await navigator.send_json_to({"type": "chat", "client_id": "x", "utterance": "   "})
        error = await next_of(navigator, "error")
        assert error["code"] == "validation_failed"
        assert [e["field"] for e in error["errors"]] == ["utterance"]
        await navigator.send_json_to({"type": "dance"})
        assert (await next_of(navigator, "error"))["code"] == "unknown_type"
        await navigator.send_to(text_data="not json")
        assert (await next_of(navigator, "error"))["code"] == "parse_error"
        await navigator.send_to(bytes_data=b"\x00\x01")
        assert (await next_of(navigator, "error"))["code"] == "unknown_type"
        await navigator.disconnect()

    run(scenario)
    assert demo.turns.count() == 0


def test_a_recorder_batch_arrives_in_order_after_commit_and_a_refused_batch_never(demo, owner, instructor):
    async def scenario():
        teacher, _, _ = await joined(demo.name, instructor)
        batch = [payloads.chat_turn("r0", "navigator", 1.0), payloads.browser_turn("r1", "scroll", 1.5)]
        batch.append(payloads.chat_turn("r2", "navigator", 2.0))
        await database_sync_to_async(do_ingest_turns)(demo, batch)
        got = [await next_of(teacher, "turn") for _ in range(3)]
        assert [(t["seq"], t["turn"]["client_id"]) for t in got] == [(0, "r0"), (1, "r1"), (2, "r2")]
        conflicting = [payloads.chat_turn("r3", "navigator", 3.0), {**batch[0], "utterance": "changed"}]
        with pytest.raises(Conflict):
            await database_sync_to_async(do_ingest_turns)(demo, conflicting)
        await only_presence_or_nothing(teacher)  # rolled back: nothing was sent
        await teacher.disconnect()

    run(scenario)


# --- Reconnecting ---------------------------------------------------------------------------------------------


def test_a_reconnecting_client_gets_what_it_missed_exactly_once_then_live_turns(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        await say(teacher, "i0", "search for weather")
        assert (await next_of(teacher, "turn"))["seq"] == 0
        await teacher.disconnect()
        await say(navigator, "n0", "searching")
        await ingest_browser_turn(demo, "click-1")
        await say(navigator, "n1", "found it")
        teacher, _, missed = await joined(demo.name, instructor, after_seq=0)
        assert [t["seq"] for t in missed] == [1, 2, 3]
        assert [t["turn"]["type"] for t in missed] == ["chat", "browser", "chat"]
        await say(navigator, "n2", "anything else?")
        live_turn = await next_of(teacher, "turn")
        assert (live_turn["seq"], live_turn["turn"]["utterance"]) == (4, "anything else?")
        await only_presence_or_nothing(teacher)
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_joining_while_messages_stream_in_delivers_each_once_and_in_order(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)

        async def stream():
            for i in range(20):
                await say(navigator, f"n{i}", f"step {i}")

        sending = asyncio.ensure_future(stream())
        while await database_sync_to_async(demo.turns.count)() < 5:
            await asyncio.sleep(0.01)
        teacher, _, caught_up = await joined(demo.name, instructor)  # catch-up and live broadcasts overlap
        await sending
        seqs = [turn["seq"] for turn in caught_up]
        while len(seqs) < 20:
            seqs.append((await next_of(teacher, "turn"))["seq"])
        assert seqs == list(range(20))
        await only_presence_or_nothing(teacher)
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_late_or_repeated_broadcasts_are_filled_from_the_database_and_never_repeated(demo, owner, instructor):
    async def scenario():
        teacher, _, _ = await joined(demo.name, instructor)
        # Store two turns without their broadcasts reaching the socket in order: deliver only the second one
        # (as when another batch's broadcast is late), then both again (as when one is delivered twice).
        await database_sync_to_async(do_ingest_turns)(demo, [payloads.chat_turn("a", "navigator", 1.0)])
        await database_sync_to_async(do_ingest_turns)(demo, [payloads.chat_turn("b", "navigator", 2.0)])
        assert [(await next_of(teacher, "turn"))["seq"] for _ in range(2)] == [0, 1]
        layer = get_channel_layer()
        late = {"seq": 2, "type": "chat", "timestamp": 3.0, "client_id": "c", "speaker": "navigator", "utterance": "c"}
        await database_sync_to_async(Turn.objects.bulk_create)(
            [Turn(demonstration=demo, client_id=f"{k}", seq=s, type="chat", timestamp=s, speaker="navigator",
                  utterance=k, content_sha256="x") for k, s in (("c", 2), ("d", 3))]
        )  # fmt: skip
        await layer.group_send(session_group(demo.name), {"type": "session.turns", "turns": [{**late, "seq": 3}]})
        assert [(await next_of(teacher, "turn"))["seq"] for _ in range(2)] == [2, 3]
        await layer.group_send(session_group(demo.name), {"type": "session.turns", "turns": [late, {**late, "seq": 3}]})
        await only_presence_or_nothing(teacher)
        await teacher.disconnect()

    run(scenario)


# --- Access ---------------------------------------------------------------------------------------------------


def test_a_join_with_a_bad_resume_point_is_answered_and_may_be_retried(demo, owner):
    async def scenario():
        socket = await opened(demo.name, owner)
        await socket.send_json_to({"type": "join", "after_seq": "yesterday"})
        error = await socket.receive_json_from()
        assert (error["code"], error["errors"][0]["field"]) == ("validation_failed", "after_seq")
        await socket.send_json_to({"type": "join", "after_seq": -1})
        assert (await socket.receive_json_from())["type"] == "welcome"
        await socket.disconnect()

    run(scenario)


def test_a_socket_without_credentials_is_closed_4401(demo):
    async def scenario():
        socket = await opened(demo.name)
        await socket.send_json_to({"type": "join", "after_seq": -1})
        assert await close_code(socket) == 4401

    run(scenario)


def test_a_bad_token_is_closed_4401_and_a_good_one_joins_from_the_extension_origin(demo, owner):
    token = Token.objects.create(user=owner).key

    async def scenario():
        socket = await opened(demo.name, origin=EXTENSION)
        await socket.send_json_to({"type": "join", "token": "not-a-token"})
        assert await close_code(socket) == 4401
        panel, welcome, _ = await joined(demo.name, token=token, origin=EXTENSION)
        assert welcome["role"] == "navigator"
        assert (await say(panel, "p0", "on it"))["seq"] == 0
        await panel.disconnect()

    run(scenario)


def test_anything_before_join_or_no_join_in_time_is_closed_4401(demo, owner, settings):
    settings.LIVE_JOIN_TIMEOUT_SECONDS = 0.2

    async def scenario():
        socket = await opened(demo.name, owner)
        await socket.send_json_to({"type": "chat", "client_id": "x", "utterance": "hi"})
        assert await close_code(socket) == 4401
        silent = await opened(demo.name, owner)
        assert await close_code(silent) == 4401

    run(scenario)
    assert demo.turns.count() == 0


@pytest.mark.parametrize("who", ["outsider", "teammate", "reviewer"])
def test_people_without_a_place_in_the_session_are_closed_4403(demo, who, request):
    user = request.getfixturevalue(who)

    async def scenario():
        socket = await opened(demo.name, user)
        await socket.send_json_to({"type": "join"})
        assert await close_code(socket) == 4403

    run(scenario)


def test_an_unknown_demonstration_is_closed_4403_like_someone_elses(owner, outsider, beta):
    other = start_demo(outsider, beta)

    async def scenario():
        for name in ("nosuchdemo", other.name):
            socket = await opened(name, owner)
            await socket.send_json_to({"type": "join"})
            assert await close_code(socket) == 4403
            assert await socket.receive_nothing(timeout=0.1)  # nothing said about which case it was

    run(scenario)


async def handshake(demo, owner, origin: bytes, host: bytes = b"testserver", scheme: str = "ws") -> bool:
    """Whether a signed-in socket with these ``Origin`` and ``Host`` headers is accepted."""
    cookie = await database_sync_to_async(session_cookie)(owner)
    headers = [(b"origin", origin), (b"host", host), (b"cookie", cookie)]
    socket = WebsocketCommunicator(application, f"/ws/sessions/{demo.name}/", headers=headers)
    socket.scope["scheme"] = scheme
    connected, _ = await socket.connect()
    await socket.disconnect()
    return connected


def test_a_foreign_origin_is_refused_before_anything_happens(demo, owner):
    async def scenario():
        for origin in (b"http://evil.example", b"chrome-extension://abcdefghijklmnopabcdefghijklmnop", b"null"):
            assert not await handshake(demo, owner, origin)
        assert not await handshake(demo, owner, b"http://testserver", host=b"evil.example")  # not an allowed host

    run(scenario)


def test_a_page_of_another_port_on_the_same_host_is_refused(demo, owner):
    async def scenario():
        assert await handshake(demo, owner, b"http://127.0.0.1:8000", host=b"127.0.0.1:8000")
        assert await handshake(demo, owner, b"http://[::1]:8000", host=b"[::1]:8000")
        assert await handshake(demo, owner, b"https://localhost", host=b"localhost", scheme="wss")
        assert not await handshake(demo, owner, b"http://127.0.0.1:9999", host=b"127.0.0.1:8000")
        assert not await handshake(demo, owner, b"http://127.0.0.1", host=b"127.0.0.1:8000")
        assert not await handshake(demo, owner, b"http://localhost", host=b"localhost", scheme="wss")

    run(scenario)


def test_an_origin_listed_in_csrf_trusted_origins_is_accepted(demo, owner, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://demos.example.org"]

    async def scenario():
        assert await handshake(demo, owner, b"https://demos.example.org", host=b"127.0.0.1:8000")
        assert not await handshake(demo, owner, b"https://demos.example.org:8443", host=b"127.0.0.1:8000")

    run(scenario)


def test_a_project_admin_observes_but_does_not_speak(demo, admin, owner):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        observer, welcome, _ = await joined(demo.name, admin)
        assert welcome["role"] == "observer"
        assert welcome["sees_screen"]
        await say(navigator, "n0", "hello")
        assert (await next_of(observer, "turn"))["turn"]["utterance"] == "hello"
        await observer.send_json_to({"type": "chat", "client_id": "o0", "utterance": "psst"})
        assert (await next_of(observer, "error"))["code"] == "forbidden"
        await navigator.disconnect()
        await observer.disconnect()

    run(scenario)
    assert demo.turns.count() == 1


# --- The no-vision rule ---------------------------------------------------------------------------------------


def test_screen_content_of_a_no_vision_demo_reaches_the_navigator_but_never_the_instructor(
    blind_demo, owner, instructor
):
    async def scenario():
        navigator, _, _ = await joined(blind_demo.name, owner)
        teacher, welcome, _ = await joined(blind_demo.name, instructor)
        assert welcome["sees_screen"] is False
        screenshot = await ingest_browser_turn(blind_demo, "click-1")
        seen = (await next_of(navigator, "turn"))["turn"]
        assert (seen["screenshot"], seen["url"]) == (screenshot, payloads.URL)
        blind = await next_of(teacher, "turn")
        assert blind == {"type": "turn", "seq": 0, "turn": {"seq": 0, "type": "browser", "timestamp": 2.0}}
        await teacher.disconnect()
        # Catching up after a reconnect is filtered the same way.
        teacher, _, missed = await joined(blind_demo.name, instructor)
        assert missed == [blind]
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_the_instructor_of_a_demo_with_vision_sees_the_screen(demo, owner, instructor):
    async def scenario():
        teacher, welcome, _ = await joined(demo.name, instructor)
        assert welcome["sees_screen"] is True
        screenshot = await ingest_browser_turn(demo, "click-1")
        turn = (await next_of(teacher, "turn"))["turn"]
        assert (turn["type"], turn["intent"], turn["url"], turn["screenshot"]) == (
            "browser",
            "click",
            payloads.URL,
            screenshot,
        )
        await teacher.disconnect()

    run(scenario)


# --- Presence and the end -------------------------------------------------------------------------------------


def test_each_side_sees_the_other_arrive_and_leave(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        arrived = await navigator.receive_json_from()
        assert (arrived["type"], arrived["role"], arrived["present"]) == ("presence", "instructor", True)
        already = await teacher.receive_json_from()
        assert (already["type"], already["role"], already["present"]) == ("presence", "navigator", True)
        await teacher.disconnect()
        left = await navigator.receive_json_from()
        assert (left["role"], left["present"]) == ("instructor", False)
        await navigator.disconnect()

    run(scenario)


def test_an_idle_socket_stays_open_longer_than_the_channel_layers_blocking_read(demo, owner):
    """With Redis, channels_redis blocks 5 s per read; a client socket timeout as short as that crashed idle
    consumers (and dropped the connection) every few seconds."""

    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        # Idle past one whole blocking read: nothing happens that could be waited on (the read ends empty), and its
        # 5 s is channels_redis' own constant, which no setting shortens.
        await asyncio.sleep(BLOCKING_READ_S + 1.5)
        await navigator.send_json_to({"type": "ping"})
        assert (await next_of(navigator, "pong"))["type"] == "pong"
        await navigator.disconnect()

    run(scenario)


def test_a_person_with_two_connections_is_gone_only_when_both_are_closed(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        first, _, _ = await joined(demo.name, instructor)
        arrived = await navigator.receive_json_from()
        assert (arrived["role"], arrived["present"]) == ("instructor", True)
        second, _, _ = await joined(demo.name, instructor)  # a second tab
        assert await navigator.receive_nothing(timeout=0.3)  # already here: not announced again
        for tab in (first, second):
            already = await next_of(tab, "presence")
            assert (already["role"], already["present"]) == ("navigator", True)
            assert await tab.receive_nothing(timeout=0.3)  # one's own other tab is no news
        await first.disconnect()
        assert await navigator.receive_nothing(timeout=0.3)  # still here in the other tab
        assert await second.receive_nothing(timeout=0.3)
        await second.disconnect()
        left = await navigator.receive_json_from()
        assert (left["role"], left["user"], left["present"]) == ("instructor", "instructor", False)
        await navigator.disconnect()

    run(scenario)


def test_ending_the_demonstration_finishes_it_and_tells_everyone(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        await say(teacher, "i0", "thanks, that's all")
        await teacher.send_json_to({"type": "end"})
        for socket in (navigator, teacher):
            assert (await next_of(socket, "ended"))["status"] == "recorded"
        await navigator.send_json_to({"type": "chat", "client_id": "late", "utterance": "wait"})
        assert (await next_of(navigator, "error"))["code"] == "conflict"
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)
    demo.refresh_from_db()
    assert demo.status == DemoStatus.RECORDED
    assert demo.recording_end is not None
    assert demo.turns.count() == 1


# --- One clock, and ending without losing the recorder's queue -----------------------------------------------


def elapsed(demo) -> float:
    """Seconds since the recording started, by this (the server's) clock."""
    return (timezone.now() - demo.recording_start).total_seconds()


def chat_times(demo) -> dict:
    return dict(demo.turns.filter(type="chat").values_list("client_id", "timestamp"))


SKEW = 30.0  # the navigator's machine is 30 s ahead of the server


def test_chat_turns_of_both_sides_land_on_the_navigators_recording_clock(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner, clock=elapsed(demo) + SKEW)
        teacher, _, _ = await joined(demo.name, instructor, clock=elapsed(demo) + 500)  # ignored: not the recorder
        before = elapsed(demo)
        await say(teacher, "i0", "open the weather site")
        await say(navigator, "n0", "on it")
        after = elapsed(demo)
        await navigator.disconnect()
        await teacher.disconnect()
        return before, after

    before, after = async_to_sync(scenario)()
    times = chat_times(demo)
    for client_id in ("i0", "n0"):
        assert before + SKEW - 0.5 <= times[client_id] <= after + SKEW + 0.01, times
    assert times["i0"] <= times["n0"]


def test_a_ping_updates_the_offset_and_chat_times_never_go_back(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner, clock=elapsed(demo) + SKEW)
        await say(navigator, "n0", "first")
        await navigator.send_json_to({"type": "ping", "clock": elapsed(demo) + 2 * SKEW})
        assert (await next_of(navigator, "pong"))["type"] == "pong"
        await say(navigator, "n1", "second, with the clock further ahead")
        await navigator.send_json_to({"type": "ping", "clock": 0})  # the navigator's clock jumped back
        await next_of(navigator, "pong")
        await say(navigator, "n2", "third")
        await navigator.send_json_to({"type": "ping", "clock": "soon"})
        error = await next_of(navigator, "error")
        assert (error["code"], error["errors"][0]["field"]) == ("validation_failed", "clock")
        await navigator.disconnect()
        return elapsed(demo)

    now = async_to_sync(scenario)()
    times = chat_times(demo)
    assert times["n0"] < now + SKEW + 0.01
    assert now + 2 * SKEW - 1 <= times["n1"] <= now + 2 * SKEW + 0.01
    assert times["n2"] == times["n1"]  # not before the earlier message, though the offset is now negative


def test_without_a_navigator_reading_chat_turns_are_on_the_server_clock(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)  # the web fallback page: no clock
        before = elapsed(demo)
        await say(navigator, "n0", "hello")
        await navigator.disconnect()
        return before, elapsed(demo)

    before, after = async_to_sync(scenario)()
    assert before - 0.01 <= chat_times(demo)["n0"] <= after + 0.01


def test_after_the_instructor_ends_the_recorders_queue_is_still_accepted_and_relayed(demo, owner, instructor):
    """The instructor ends while the recorder (30 s ahead) still has a browser turn from before the end queued;
    it is stored and relayed; a turn from after the end is refused; the recorder's own finish is harmless."""

    async def scenario():
        navigator, _, _ = await joined(demo.name, owner, clock=elapsed(demo) + SKEW)
        teacher, _, _ = await joined(demo.name, instructor)
        captured_at = elapsed(demo) + SKEW  # on the recorder's clock, just before the end
        await teacher.send_json_to({"type": "end"})
        assert (await next_of(navigator, "ended"))["status"] == "recorded"
        await ingest_browser_turn(demo, "queued", timestamp=round(captured_at, 3))
        relayed = await next_of(navigator, "turn")
        assert relayed["turn"]["client_id"] == "queued"
        assert (await next_of(teacher, "turn"))["turn"]["client_id"] == "queued"
        with pytest.raises(Conflict, match="turns after its end are refused"):
            await ingest_browser_turn(demo, "too-late", timestamp=round(elapsed(demo) + SKEW + 10, 3), seed=2)
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)
    demo.refresh_from_db()
    end = (demo.recording_end - demo.recording_start).total_seconds()
    assert SKEW < end < elapsed(demo) + SKEW  # the end is on the navigator's clock
    assert list(demo.turns.values_list("client_id", flat=True)) == ["queued"]
    api = Client()
    api.force_login(owner)
    body = {"recording_end": "2030-01-01T00:00:00Z"}
    finished = api.post(f"/api/recordings/{demo.name}/finish/", body, content_type="application/json")
    assert finished.status_code == 200
    assert finished.json()["status"] == "recorded"
    assert Demonstration.objects.get(pk=demo.pk).recording_end == demo.recording_end  # the first end stays


def test_the_socket_shows_the_invitation_revokes_it_and_hides_it_once_used(owner, alpha, teammate):
    demo = start_demo(owner, alpha)

    async def scenario():
        navigator, welcome, _ = await joined(demo.name, owner)
        first = welcome["invite"]
        assert first
        assert welcome["invite_expires_at"]
        await navigator.send_json_to({"type": "revoke_invite"})
        renewed = await next_of(navigator, "invite")
        assert renewed["invite"] not in (None, first)
        gone = await database_sync_to_async(join_page_status)(teammate, first)
        assert gone == 410
        assert await database_sync_to_async(join_page_status)(teammate, renewed["invite"], post=True) == 302
        assert (await next_of(navigator, "invite"))["invite"] is None  # used: nothing to show any more
        teacher, teacher_welcome, _ = await joined(demo.name, teammate)
        assert "invite" not in teacher_welcome
        await navigator.send_json_to({"type": "revoke_invite"})
        assert (await next_of(navigator, "invite"))["invite"] is None
        await only_presence_or_nothing(teacher)  # the instructor never hears of invitations
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def join_page_status(user, code: str, post: bool = False) -> int:
    client = Client()
    client.force_login(user)
    url = f"/sessions/join/{code}"
    return (client.post(url) if post else client.get(url)).status_code


# --- Access ends when a grant ends --------------------------------------------------------------------------------
#
# Each change is made the way people make it (the members, people, token and account pages), through the real
# channel layer; the socket that lost its place is closed with a code and a reason, the others go on.

NO_ACCESS = (4403, "you no longer have access to this session")
ROLE_CHANGED = (4403, "your place in this session changed: join again")
SIGNED_OUT = (4401, "your sign-in ended (password changed or signed out): sign in again to join")
DEACTIVATED = (4401, "your account was deactivated")
TOKEN_GONE = (4401, "your API token was revoked or replaced: make a new one on the token page")


@pytest.fixture
def lead(alpha):
    """A second project admin, who manages the members (a project keeps one admin)."""
    return make_user("lead", alpha, Role.ADMIN)


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")


def cookie_of(client: Client) -> bytes:
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def post(client: Client, path: str, data: dict | None = None) -> int:
    """A form posted on a page (a redirect when it worked); the page's transaction commits before it answers."""
    return await database_sync_to_async(lambda: client.post(path, data or {}).status_code)()


async def post_as(user, path: str, data: dict | None = None) -> int:
    return await post(await database_sync_to_async(signed_in)(user), path, data)


def membership_path(user, change: str) -> str:
    return f"/projects/alpha/members/{Membership.objects.get(user=user, project__name='alpha').pk}/{change}"


async def members_page(admin, user, change: str, data: dict | None = None) -> int:
    return await post_as(admin, await database_sync_to_async(membership_path)(user, change), data)


async def closed_with(socket) -> tuple[tuple[int, str], list[dict]]:
    """Read up to the socket's close: ``((code, reason), the messages that came before it)``."""
    before = socket.__dict__.setdefault("inbox", [])
    while (output := await socket.receive_output(timeout=10))["type"] != "websocket.close":
        before.append(json.loads(output["text"]))
    return (output["code"], output.get("reason")), before


def stored_utterances(demo) -> list[str]:
    return list(Turn.objects.filter(demonstration=demo).order_by("seq").values_list("utterance", flat=True))


def test_a_removed_observer_is_closed_and_the_others_keep_talking(demo, owner, instructor, admin, lead):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        watcher, welcome, _ = await joined(demo.name, admin)
        assert welcome["role"] == "observer"
        assert await members_page(lead, admin, "remove") == 302
        closed, before = await closed_with(watcher)
        assert closed == NO_ACCESS
        assert not [message for message in before if message["type"] == "turn"]
        await say(teacher, "t0", "open the weather site")
        for socket in (navigator, teacher):
            assert (await next_of(socket, "turn"))["turn"]["utterance"] == "open the weather site"
        gone = await next_of(navigator, "presence")
        while gone["user"] != "admin" or gone["present"]:
            gone = await next_of(navigator, "presence")
        # Added again, she follows again (from the start); made a researcher, she is closed again.
        assert await post_as(lead, "/projects/alpha/members/add", {"username": "admin", "role": "admin"}) == 302
        watcher, _, caught_up = await joined(demo.name, admin)
        assert [t["turn"]["utterance"] for t in caught_up] == ["open the weather site"]
        assert await members_page(lead, admin, "role", {"role": "researcher"}) == 302
        assert (await closed_with(watcher))[0] == NO_ACCESS
        # A role change that leaves a place as it was: the navigator made admin goes on.
        assert await members_page(lead, owner, "role", {"role": "admin"}) == 302
        await say(navigator, "n0", "on it")
        await say(navigator, "n1", "found it")
        assert [(await next_of(teacher, "turn"))["seq"] for _ in range(2)] == [1, 2]
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)
    assert stored_utterances(demo) == ["open the weather site", "on it", "found it"]


def test_a_removed_instructor_cannot_write_even_when_the_news_is_lost(demo, owner, instructor, admin):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        watcher, _, _ = await joined(demo.name, admin)
        await say(teacher, "t0", "search for weather")
        # Removed behind the application's back (a database shell): no event reaches the sockets.
        await database_sync_to_async(delete_membership_rows)(instructor)
        await teacher.send_json_to({"type": "chat", "client_id": "t1", "utterance": "now click the first result"})
        closed, before = await closed_with(teacher)
        assert closed == NO_ACCESS
        assert not [message for message in before if message["type"] == "ack"]
        await navigator.send_json_to({"type": "ping"})
        assert (await next_of(navigator, "pong"))["type"] == "pong"
        # The observer removed the same way cannot end the demonstration either.
        await database_sync_to_async(delete_membership_rows)(admin)
        await watcher.send_json_to({"type": "end"})
        assert (await closed_with(watcher))[0] == NO_ACCESS
        await say(navigator, "n0", "still recording")
        await navigator.disconnect()

    run(scenario)
    demo.refresh_from_db()
    assert demo.status == DemoStatus.RECORDING
    assert stored_utterances(demo) == ["search for weather", "still recording"]


def test_a_silent_observer_removed_without_news_stops_receiving_within_the_recheck(
    demo, owner, instructor, admin, settings
):
    """The third outside review: access was checked again only when the socket wrote; a client that never writes
    kept receiving turns and the new invitation link. Now every relay checks when the last check is older than
    LIVE_ACCESS_RECHECK_SECONDS (0 here: every relay) and an invitation link is relayed only after a check."""
    settings.LIVE_ACCESS_RECHECK_SECONDS = 0

    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        teacher, _, _ = await joined(demo.name, instructor)
        watcher, _, _ = await joined(demo.name, admin)
        await say(teacher, "t0", "search for weather")
        assert (await next_of(watcher, "turn"))["turn"]["utterance"] == "search for weather"
        await database_sync_to_async(delete_membership_rows)(admin)  # no event reaches the sockets
        await say(teacher, "t1", "my card is 4111")
        closed, before = await closed_with(watcher)
        assert closed == NO_ACCESS
        assert not [message for message in before if message["type"] in ("turn", "invite")]
        assert (await next_of(navigator, "turn"))["turn"]["utterance"] == "search for weather"
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_a_superuser_made_an_ordinary_account_is_closed(demo, owner, root):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        watcher, welcome, _ = await joined(demo.name, root)
        assert welcome["role"] == "observer"

        def demote():
            root.is_superuser = False
            root.save()

        await database_sync_to_async(demote)()
        assert (await closed_with(watcher))[0] == NO_ACCESS
        await navigator.disconnect()

    run(scenario)


def delete_membership_rows(user) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Membership._meta.db_table} WHERE user_id = %s", [user.pk])


def test_rotating_or_revoking_a_token_closes_the_sockets_joined_with_it(demo, owner, instructor):
    async def scenario():
        browser = await database_sync_to_async(signed_in)(owner)
        assert await post(browser, "/account/token/create") == 302
        key = await database_sync_to_async(lambda: Token.objects.get(user=owner).key)()
        panel, _, _ = await joined(demo.name, token=key, origin=EXTENSION)
        page, _, _ = await joined(demo.name, cookie=cookie_of(browser))
        teacher, _, _ = await joined(demo.name, instructor)
        for change in ("rotate", "revoke"):
            assert await post(browser, f"/account/token/{change}") == 302
            assert (await closed_with(panel))[0] == TOKEN_GONE
            await say(page, f"{change}-page", "the web page goes on")
            assert (await next_of(teacher, "turn"))["turn"]["client_id"] == f"{change}-page"
            refused = await opened(demo.name, origin=EXTENSION)
            await refused.send_json_to({"type": "join", "after_seq": -1, "token": key})
            assert await close_code(refused) == 4401
            if change == "rotate":
                key = await database_sync_to_async(lambda: Token.objects.get(user=owner).key)()
                panel, _, _ = await joined(demo.name, token=key, origin=EXTENSION)
        await page.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_a_deactivated_account_is_closed_everywhere_and_the_others_go_on(demo, owner, instructor, root):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        key = await database_sync_to_async(lambda: Token.objects.create(user=instructor).key)()
        teacher, _, _ = await joined(demo.name, instructor)
        panel, _, _ = await joined(demo.name, instructor, token=key)
        assert await post_as(root, f"/people/{instructor.pk}/deactivate") == 302
        for socket in (teacher, panel):
            assert (await closed_with(socket))[0] == DEACTIVATED
        await say(navigator, "n0", "the instructor left")
        assert (await next_of(navigator, "turn"))["turn"]["client_id"] == "n0"
        assert await post_as(root, f"/people/{instructor.pk}/activate") == 302
        refused = await opened(demo.name)
        await refused.send_json_to({"type": "join", "after_seq": -1, "token": key})
        assert await close_code(refused) == 4401  # the token went with the deactivation
        teacher, _, caught_up = await joined(demo.name, instructor)  # signed in again
        assert [t["turn"]["utterance"] for t in caught_up] == ["the instructor left"]
        await say(teacher, "t0", "welcome back")
        assert (await next_of(navigator, "turn"))["turn"]["client_id"] == "t0"
        await navigator.disconnect()
        await teacher.disconnect()

    run(scenario)


def test_a_password_change_closes_the_sockets_of_other_sign_ins_and_of_the_token(demo, owner, instructor):
    async def scenario():
        navigator, _, _ = await joined(demo.name, owner)
        laptop = await database_sync_to_async(signed_in)(instructor)
        phone = await database_sync_to_async(signed_in)(instructor)
        key = await database_sync_to_async(lambda: Token.objects.create(user=instructor).key)()
        on_laptop, _, _ = await joined(demo.name, cookie=cookie_of(laptop))
        panel, _, _ = await joined(demo.name, token=key, origin=EXTENSION)
        old, new = "instructor-Passw0rd!", "Fresh-Passw0rd-42"
        changed = {"old_password": old, "new_password1": new, "new_password2": new}
        assert await post(phone, "/account/", changed) == 302
        assert (await closed_with(on_laptop))[0] == SIGNED_OUT
        assert (await closed_with(panel))[0] == TOKEN_GONE
        # The browser that changed it joins again with its new cookie; signing out there closes that socket too.
        on_phone, _, _ = await joined(demo.name, cookie=cookie_of(phone))
        await say(on_phone, "p0", "new password, same session")
        assert (await next_of(navigator, "turn"))["turn"]["client_id"] == "p0"
        other_phone = await database_sync_to_async(lambda: signed_in(get_user_model().objects.get(pk=instructor.pk)))()
        still, _, _ = await joined(demo.name, cookie=cookie_of(other_phone))
        assert await post(phone, "/accounts/logout/") == 302
        assert (await closed_with(on_phone))[0] == SIGNED_OUT
        await say(still, "p1", "the other sign-in goes on")
        assert (await next_of(navigator, "turn"))["turn"]["client_id"] == "p1"
        await navigator.disconnect()
        await still.disconnect()

    run(scenario)
