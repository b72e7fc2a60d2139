"""``ingest_parallel``'s in-process baseline: one worker doing, with no HTTP, the verification and storage the server
does for one client's uploads (``python -m bench.checks SHARE``, one per client, all at once).

``SHARE`` is a pickle ``{"username", "warm": [demo], "demos": [demo]}``, each demo ``{"start", "batches",
"finish", "turns"}``: the bodies the client sends (the start's and finish's JSON, each batch gzipped, without
the blobs the client uploaded before). Per demo, as the server's views do: the start's body parsed and checked
(``RecordingStartSerializer``, ``check_project_for_recording``) and ``do_start_recording``; per batch
``check_demo_for_bundle`` and ``do_ingest_bundle`` (inflate, sha256, image, bboxes and HTML checks, the turns
validated, files written and fsynced, rows in one transaction, the live session told); ``FinishSerializer``,
``check_demo_writable`` and ``do_finish_recording``. The warm-up demos first, then ``ready`` on stdout; the timed
demos once a line comes on stdin, then ``done``; then, untimed, every demo is read back (status, turn count)."""

import asyncio
import json
import os
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace


def upload(user, demo: dict) -> str:
    from annotation import actions
    from api.recordings.serializers import FinishSerializer, RecordingStartSerializer

    start = RecordingStartSerializer(data=json.loads(demo["start"]), context={"request": SimpleNamespace(user=user)})
    start.is_valid(raise_exception=True)
    fields = dict(start.validated_data)
    project = actions.check_project_for_recording(user, fields.pop("project"))
    name = actions.do_start_recording(user, project, **fields)[0].name
    for body in demo["batches"]:
        recording = actions.check_demo_for_bundle(user, name)
        actions.do_ingest_bundle(recording, body, actions.BUNDLE_MEDIA_TYPE, "gzip", user)
    finish = FinishSerializer(data=json.loads(demo["finish"]))
    finish.is_valid(raise_exception=True)
    recording = actions.check_demo_writable(user, name)
    actions.do_finish_recording(recording, finish.validated_data.get("recording_end"))
    return name


async def uploads(user, demos: list) -> list[str]:
    """The demos uploaded one after another on a thread of asgiref's, as the server runs its views: the live
    notifications' ``async_to_sync`` then runs on this event loop (without one it would start an event loop, and a
    Redis connection, per batch)."""
    from asgiref.sync import sync_to_async

    return [await sync_to_async(upload)(user, demo) for demo in demos]


def main(path: str) -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup(set_prefix=False)
    from django.contrib.auth import get_user_model

    from annotation.models import Demonstration

    share = pickle.loads(Path(path).read_bytes())
    user = get_user_model().objects.get(username=share["username"])
    asyncio.run(uploads(user, share["warm"]))
    print("ready", flush=True)
    sys.stdin.readline()
    names = asyncio.run(uploads(user, share["demos"]))
    print("done", flush=True)
    for name, demo in zip(names, share["demos"], strict=True):
        stored = Demonstration.objects.get(name=name)
        if (stored.status, stored.turns.count()) != ("recorded", demo["turns"]):
            print(f"{name} stored as {stored.status} with {stored.turns.count()} turns", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
