"""The sample a first `make run` creates beyond its synthetic WebLINX demonstrations, so every feature has something
to show: a team (annotators, a reviewer, a researcher) whose sign-in is saved beside the admin's; a form batch that
several workers answered over the last days (results, per-worker statistics, activity); a Mind2Web project with
websites and seed tasks, proposals (accepted, rejected, pending) and a recorded demonstration task. Everything goes
through the actions the pages and the API call, with times relative to now, so heatmaps and "last 30 days" show it.
"""

import datetime as dt
import secrets

from django.utils import timezone

from annotation import actions, synth
from annotation.actions import mind2web
from annotation.actions.forms import BatchSettings, do_accept_next, do_create_form_batch, do_submit, parse_batch
from annotation.actions.manage import setup
from annotation.models import Project, Role

TEAM = {"ana": Role.ANNOTATOR, "ben": Role.ANNOTATOR, "cho": Role.ANNOTATOR, "rev": Role.REVIEWER}
TEAM["res"] = Role.RESEARCHER
MIND2WEB_PROJECT = "sample-mind2web"
TEMPLATE = """<h3>Is this review positive?</h3>
<p id="review">${review}</p>
<label><input type="radio" name="sentiment" value="positive" required> positive</label>
<label><input type="radio" name="sentiment" value="negative"> negative</label>
<label>Why? <input type="text" name="reason"></label>
"""
REVIEWS = [
    "The room was spotless and the staff friendly.",
    "Cold food, and we waited an hour.",
    "Fine location, but the bed was awful.",
    "Best ramen I have had in years.",
    "Tickets arrived late and the seats were wrong.",
    "Quick delivery, exactly as described.",
]
WEBSITES = [
    {"name": "exploretock", "url": "https://www.exploretock.com/", "domain": "Travel", "subdomain": "Restaurant"},
    {"name": "carmax", "url": "https://www.carmax.com/", "domain": "Shopping", "subdomain": "Auto"},
]
SEEDS = {
    "exploretock": ["Book a table for two at a sushi place in Seattle tonight", "Find a wine tasting in Napa"],
    "carmax": ["Find a used hybrid under $20,000 near Chicago", "Compare two SUVs with third-row seats"],
}
PROPOSALS = {
    "ana": ("exploretock", ["Reserve a brunch for four in Austin on Sunday", "Find a vegan tasting menu in Denver"]),
    "ben": ("carmax", ["Get a trade-in estimate for a 2015 Civic", "Find a red convertible under 30k miles"]),
}


def ensure_team(project: Project) -> tuple[dict, str]:
    """The sample team, members of ``project`` with their roles; one random password for all (returned)."""
    password, users = secrets.token_urlsafe(9), {}
    for username, role in TEAM.items():
        user, _ = setup.do_ensure_account(username, password)
        setup.do_ensure_member(project, user, role)
        users[username] = user
    return users, password


def answered_form_batch(project: Project, admin, users: dict) -> None:
    """A form batch of six reviews, three assignments each, answered by the three annotators on the last days."""
    csv = "review\n" + "".join(f'"{text}"\n' for text in REVIEWS)
    parsed = parse_batch(TEMPLATE.encode(), csv.encode(), "sentiment.csv")
    settings = BatchSettings(assignments_per_task=3, description="Label the sentiment of short reviews.")
    batch = do_create_form_batch(admin, project, "sentiment", parsed, settings)
    now = timezone.now()
    for day, username in enumerate(("ana", "ben", "cho")):
        when = now - dt.timedelta(days=5 - 2 * day, hours=3)
        for index in range(len(REVIEWS) - day):  # ben leaves one, cho two: the batch still has work to do
            assignment = do_accept_next(users[username], batch, now=when)
            positive = ("spotless", "Best", "Quick")
            sentiment = "positive" if any(word in assignment.task.inputs["review"] for word in positive) else "negative"
            if username == "cho" and index == 1:
                sentiment = "positive" if sentiment == "negative" else "negative"  # one disagreement to find
            when += dt.timedelta(minutes=2 + index)
            do_submit(assignment.pk, {"sentiment": sentiment, "reason": f"{username}'s reading"}, now=when)


def mind2web_project(admin, users: dict) -> Project:
    """Websites with seed tasks, two proposal rounds, reviews (two accepted, one rejected, the rest pending) and a
    demonstration of an accepted task recorded by its proposer."""
    project, _ = setup.do_ensure_project(
        MIND2WEB_PROJECT, "Sample Mind2Web", "Websites, task proposals and demonstrations."
    )
    setup.do_ensure_member(project, admin, Role.ADMIN)
    for username, role in TEAM.items():
        setup.do_ensure_member(project, users[username], role)
    sites = {}
    for fields in WEBSITES:
        site = mind2web.do_create_website(project, {**fields, "target_tasks": 10})
        mind2web.do_add_seed_tasks(site, SEEDS[site.name])
        sites[site.name] = site
    proposed = {}
    for username, (site_name, texts) in PROPOSALS.items():
        proposal_round = mind2web.do_start_round(users[username], sites[site_name])
        proposed[username] = mind2web.do_submit_round(users[username], proposal_round.pk, texts)
    reviewer = users["rev"]
    mind2web.do_screen(reviewer, proposed["ana"][0].pk, "accept")
    mind2web.do_screen(reviewer, proposed["ben"][0].pk, "accept")
    mind2web.do_screen(reviewer, proposed["ben"][1].pk, "reject")
    record_demonstration(project, users["ana"])
    return project


def record_demonstration(project: Project, user) -> None:
    """The proposer records their accepted task, as the recorder does in task mode (synthetic pages and frames)."""
    assignment = mind2web.do_take_from_pool(user, project)
    # Recorded in the three days before yesterday: never after now.
    spec = synth.generate_demo(7, 0, 16, 300, frames=True, epoch=synth.recent_epoch(timezone.now(), 3), spread_days=3)
    for data, kind in spec.blobs:
        actions.do_store_blob_bytes(data, kind, project, user)
    recorder = {key: spec.fields[key] for key in ("recording_start", "user_agent", "recorder_version")}
    demo, _ = mind2web.do_start_demonstration(user, assignment.pk, spec.client_id, **recorder)
    actions.do_ingest_turns(demo, spec.turns)
    actions.do_finish_recording(demo, spec.recording_end)
