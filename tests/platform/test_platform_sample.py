"""The sample a first `make run` creates shows every feature, read as its people read it: the WebLINX demos are
dated within the last 200 days (the activity heatmap has work this year) and their actions carry other frames
(re-alignment has candidates on the review page); a team answered a form batch (several workers per task, in the
results CSV); a Mind2Web project has websites, proposals in every state and a recorded demonstration task."""

import csv
import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import Batch
from workers.management import sample
from workers.management.commands.runplatform import Command

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    (tmp_path / "admin-credentials.txt").write_text("username: admin\n")
    user = get_user_model().objects.create_superuser("admin", password="Admin-Passw0rd!")
    Command(stdout=io.StringIO()).ensure_sample(user, 2)
    return user


def signed_in(username, password) -> Client:
    client = Client()
    assert client.login(username=username, password=password)
    return client


def team_password(tmp_path) -> str:
    return re.search(r"sample team password: (\S+)", (tmp_path / "admin-credentials.txt").read_text())[1]


def test_the_sample_demos_are_recent_and_have_frames_to_realign(admin, tmp_path):
    client = signed_in("admin", "Admin-Passw0rd!")
    demos = client.get("/api/demonstrations/?project__name=sample").json()["results"]
    assert len(demos) == 2
    for demo in demos:
        start = timezone.datetime.fromisoformat(demo["recording_start"])
        assert 0 <= (timezone.now() - start).days <= 200
        page = client.get(f"/review/{demo['name']}/").content.decode()
        turns = json.loads(re.search(r'<script id="turns-data" type="application/json">(.*?)</script>', page, re.S)[1])
        framed = [turn for turn in turns if turn["frames"]]
        assert len(framed) > 10
        for turn in framed:
            assert {frame["label"] for frame in turn["frames"]} == {"before", "after"}
            assert turn["own_screenshot"] not in {frame["screenshot"] for frame in turn["frames"]}
    activity = client.get("/projects/sample/activity/").content.decode()
    assert 'class="month"' in activity


def test_the_sample_team_answered_a_form_batch_several_workers_per_task(admin, tmp_path):
    password = team_password(tmp_path)
    for username in sample.TEAM:
        signed_in(username, password)
    batch = Batch.objects.get(name="sentiment")
    results = signed_in("admin", "Admin-Passw0rd!").get(f"/work/batches/{batch.pk}/results.csv")
    assert results.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(results.streaming_content).decode())))
    team = get_user_model().objects.filter(username__in=["ana", "ben", "cho"])
    assert {row["WorkerId"] for row in rows} == {str(user.pk) for user in team}
    assert len(rows) == 6 + 5 + 4  # ben and cho leave some: the batch still has work


def test_the_sample_mind2web_project_has_websites_proposals_and_a_demonstration(admin, tmp_path):
    client = signed_in("rev", team_password(tmp_path))
    websites = client.get(f"/api/websites/?project={sample.MIND2WEB_PROJECT}").json()
    websites = websites["results"] if isinstance(websites, dict) else websites
    assert {site["name"] for site in websites} == {"exploretock", "carmax"}
    proposals = client.get("/api/proposals/").json()
    proposals = proposals["results"] if isinstance(proposals, dict) else proposals
    assert {p["status"] for p in proposals} == {"accepted", "rejected", "pending"}
    demos = signed_in("admin", "Admin-Passw0rd!").get(f"/api/demonstrations/?project__name={sample.MIND2WEB_PROJECT}")
    assert [demo["mode"] for demo in demos.json()["results"]] == ["task"]


def test_every_sample_demo_is_dated_in_the_past_on_the_api_and_the_review_list(admin, tmp_path):
    """The WebLINX demos and the Mind2Web demonstration task: recorded and finished before now, whatever the hour
    the sample is made at (the Mind2Web one was once drawn up to 200 days after three days ago)."""
    client = signed_in("admin", "Admin-Passw0rd!")
    now = timezone.now()
    demos = []
    for project in ("sample", sample.MIND2WEB_PROJECT):
        demos += client.get(f"/api/demonstrations/?project__name={project}").json()["results"]
    assert len(demos) == 3
    for demo in demos:
        start = timezone.datetime.fromisoformat(demo["recording_start"])
        end = timezone.datetime.fromisoformat(demo["recording_end"])
        assert start < end < now, demo["name"]
    listed = client.get("/review/").content.decode()
    shown = re.findall(r'<span class="nowrap">([-\d]+)</span> <span class="muted">([:\d]+)</span>', listed)
    assert len(shown) >= 2
    assert all(f"{day} {time}" <= timezone.localtime(now).strftime("%Y-%m-%d %H:%M") for day, time in shown)


def test_the_recent_corpus_ends_before_now_at_any_hour():
    """``synth_demos --recent``'s epoch: at a minute past midnight too, the last possible recording has ended."""
    import datetime as dt

    from annotation import synth

    for now in (dt.datetime(2026, 3, 1, 0, 1, tzinfo=dt.UTC), dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.UTC)):
        latest = synth.recent_epoch(now) + dt.timedelta(days=synth.SPREAD_DAYS)
        assert latest + dt.timedelta(hours=2) < now  # a sample recording lasts minutes
        spec = synth.generate_demo(1, 0, 40, 300, epoch=synth.recent_epoch(now))
        assert spec.recording_end < now
