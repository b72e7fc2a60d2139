"""A project's afternoon in all three modes, for the every-page test (``tests/platform/test_every_page.py``).

Two projects: ``alpha`` with an admin, two researchers, two reviewers and three annotators; ``beta`` with its own
admin and the outsider (an annotator of beta only); and a site superuser. What is in the database before the
server starts is stored through the same actions the API calls (synthetic recordings, websites with seed tasks,
TurkingBench batches); everything else is done over HTTP on the real server by the person whose work it is
(recording with the API's blobs and an MHTML snapshot, reviews and second reviews, invitations, proposals and their
review, demonstrations, form assignments, splits, pay rates, exports, evaluations and agent runs, run by a real
worker).

Every request of the building that does not answer as a person expects is kept in ``World.setup_failures``: the
test reports them with the rest, so one refused step does not hide every page behind it.
"""

import io
import os
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from annotation import actions, synth
from annotation.models import Batch, Demonstration, DemoStatus, Membership, Project, Role
from devtools.standin_model import StandInModel
from tests.support import forms_data
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, write_task
from tests.support.forms_data import make_batch
from tests.support.mind2web_data import website
from tests.support.payloads import BlobFile, browser_turn, chat_turn, intent_arguments, state_blobs, state_refs
from tests.support.review_data import mediarecorder_webm
from tests.support.site_client import Client
from workers.management.commands.synth_demos import ingest_demo

PASSWORD = "net-Passw0rd!"
MHTML = (
    b"From: <Saved by Blink>\r\nSnapshot-Content-Location: https://www.example.com/\r\nSubject: Page\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n\ttype="text/html";\r\n'
    b'\tboundary="----MultipartBoundary--n----"\r\n\r\n------MultipartBoundary--n----\r\n'
    b"Content-Type: text/html\r\n\r\n<html><body>snapshot</body></html>\r\n------MultipartBoundary--n------\r\n"
)

# Who is who: {project: {role: [usernames]}}. ``otto`` is the outsider (beta only); ``bea`` runs beta.
PEOPLE = {
    "alpha": {
        Role.ADMIN: ["ada"],
        Role.RESEARCHER: ["rex", "rita"],
        Role.REVIEWER: ["vera", "vic"],
        Role.ANNOTATOR: ["ann", "abe", "amy"],
    },
    "beta": {Role.ADMIN: ["bea"], Role.ANNOTATOR: ["otto"]},
}
SUPERUSER = "root"
# The people the test signs in as, by the role it reports (the outsider is beta's annotator).
CRAWLED = {
    "ada": "admin",
    "rex": "researcher",
    "rita": "researcher",
    "vera": "reviewer",
    "vic": "reviewer",
    "ann": "annotator",
    "abe": "annotator",
    "amy": "annotator",
    "otto": "outsider",
    SUPERUSER: "superuser",
}
ROLES = {**CRAWLED, "bea": "beta's admin"}
# Small real TurkingBench tasks (``TURKINGBENCH_DATA``): two in alpha, one in beta.
ALPHA_TASKS = ("Intuitive physics", "Winogrande plausiblity")
BETA_TASKS = ("Goal feasibility",)


@dataclass
class World:
    url: str
    clients: dict = field(default_factory=dict)  # username → signed-in Client (with its API token)
    setup_failures: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, username) -> Client:
        return self.clients[username]

    def fail(self, message: str) -> None:
        with self.lock:
            self.setup_failures.append(message)

    def expect(self, response, statuses, what: str):
        """Keep ``response`` as a failure of the building unless its status is one of ``statuses``."""
        if response.status not in statuses:
            detail = response.text[:300].replace("\n", " ")
            self.fail(f"{response.status} {response.method} {response.url} ({what}): {detail}")
        return response


# --- Before the server: people and what the actions store ---------------------------------------------------


def make_people() -> dict:
    """Projects, members (one password hash for all: hashing is the slow part), API tokens, the superuser."""
    alpha = Project.objects.create(
        name="alpha",
        title="Alpha",
        category_choices=["travel", "news"],
        subcategory_choices=["hotels"],
        region_choices=["Europe"],
    )
    beta = Project.objects.create(name="beta", title="Beta")
    projects = {"alpha": alpha, "beta": beta}
    encoded = make_password(PASSWORD)
    users = {}
    for project_name, roles in PEOPLE.items():
        for role, names in roles.items():
            for username in names:
                user = get_user_model().objects.create(username=username, password=encoded)
                Membership.objects.create(project=projects[project_name], user=user, role=role)
                users[username] = user
    users[SUPERUSER] = get_user_model().objects.create(
        username=SUPERUSER, password=encoded, is_superuser=True, is_staff=True
    )
    for user in users.values():
        Token.objects.create(user=user)
    return {"projects": projects, "users": users}


def record_synthetic(project, navigator, instructor, seed: int, index: int, finish=True) -> Demonstration:
    """One synthetic chat-mode recording stored as the API stores it (``synth_demos``: blobs, start, turns, and
    its end unless it is still under way)."""
    spec = synth.generate_demo(seed, index, turns=10, elements=synth.MIN_ELEMENTS)
    if finish:
        return ingest_demo(spec, navigator, project, instructor)[0]
    for data, kind in spec.blobs:
        actions.do_store_blob_bytes(data, kind, project, navigator)
    demo, _ = actions.do_start_recording(navigator, project, spec.client_id, instructor=instructor, **spec.fields)
    actions.do_ingest_turns(demo, spec.turns)
    return demo


def store_before_server() -> dict:
    """Everything stored through the actions: people, synthetic recordings, websites, form batches."""
    made = make_people()
    alpha, beta = made["projects"]["alpha"], made["projects"]["beta"]
    u = made["users"]
    demos = {
        # alpha: five finished recordings (their reviews come later, over HTTP) and two under way.
        "a1": record_synthetic(alpha, u["ann"], u["abe"], seed=11, index=0),
        "a2": record_synthetic(alpha, u["abe"], u["amy"], seed=11, index=1),
        "a3": record_synthetic(alpha, u["amy"], u["ann"], seed=11, index=2),
        "a4": record_synthetic(alpha, u["ann"], None, seed=11, index=3),
        "a5": record_synthetic(alpha, u["abe"], u["ann"], seed=11, index=4),
        "a-live": record_synthetic(alpha, u["amy"], u["abe"], seed=11, index=5, finish=False),
        "a-invite": record_synthetic(alpha, u["ann"], None, seed=11, index=6, finish=False),
        "a-join": record_synthetic(alpha, u["amy"], None, seed=11, index=7, finish=False),
        # beta: one finished, one under way taking an instructor.
        "b1": record_synthetic(beta, u["otto"], None, seed=29, index=0),  # bea validates it: not its instructor
        "b-invite": record_synthetic(beta, u["otto"], None, seed=29, index=1, finish=False),
    }
    sites = {
        "alpha": [website(alpha, "exploretock", target=20), website(alpha, "resy", target=20)],
        "beta": [website(beta, "opentable", target=20)],
    }
    import_form_tasks()
    make_batch(alpha, u["rex"], name="questions", assignments_per_task=3)
    make_batch(beta, u["bea"], name="questions")
    prediction_runs(alpha, u["rex"], u["rita"])
    prediction_runs(beta, u["bea"], u["bea"])
    return {**made, "demos": demos, "sites": sites}


def prediction_runs(project, rex, rita) -> None:
    """A model endpoint and two finished prediction runs (one with an unreadable answer) for the prediction pages:
    the endpoint is never asked here (``test_agents_predictions_api.py`` runs the job against the stand-in)."""
    from annotation.actions.endpoints import do_create_model_endpoint
    from annotation.models import JobStatus, PredictionRun

    endpoint = do_create_model_endpoint(
        rex, project, "local", "http://127.0.0.1:9/v1", "stand-in", key=f"sk-{project.name}-secret"
    )
    settings = {"temperature": 0.0, "max_tokens": 64, "timeout": 5.0, "in_flight": 1, "candidates": 5}
    for owner, score in ((rex, 0.5), (rita, 0.25)):
        # as the worker leaves a finished run (made here directly: the world's demonstrations are validated later,
        # over HTTP, and a run needs validated ones to be made)
        run = PredictionRun.objects.create(
            project=project, owner=owner, format="mind2web", split="train", endpoint=endpoint,
            endpoint_name=endpoint.name, model=endpoint.model, **settings,
        )  # fmt: skip
        PredictionRun.objects.filter(pk=run.pk).update(
            status=JobStatus.DONE,
            progress=1.0,
            predictions=[{"annotation_id": "a", "action_index": 0, "backend_node_id": None, "operation": {}}],
            failures=[{"annotation_id": "a", "action_index": 1, "answer": "<b>no</b>", "error": "no 'Answer'"}],
            usage={"items": 2, "answers": 2, "cached": 0, "tokens_in": 10, "tokens_out": 4, "seconds": 0.1},
            results={"aggregate": {"element_accuracy": score, "operation_f1": score, "step_success_rate": score}},
        )


def import_form_tasks() -> None:
    """TurkingBench tasks imported as ``import_turkingbench`` does: real ones from ``TURKINGBENCH_DATA`` (with its
    split lists), or without it the hand-written form of ``tests/support/agents_data.py`` (so the test never skips)."""

    def run(dirs, project, user, **options):
        call_command(
            "import_turkingbench", *map(str, dirs), project=project, user=user, stdout=io.StringIO(), **options
        )

    if os.environ.get(forms_data.VARIABLE):
        splits = str(forms_data.turkingbench_root() / "splits")
        run([forms_data.task_dir(name) for name in ALPHA_TASKS], "alpha", "ada", assignments=3, splits=splits)
        run([forms_data.task_dir(name) for name in BETA_TASKS], "beta", "bea")
        return
    with tempfile.TemporaryDirectory() as folder:
        task = write_task(Path(folder), "Form task", FORM, FORM_HEADER, FORM_ROWS)
        run([task], "alpha", "ada", assignments=3)
        run([task], "beta", "bea")


# --- Over HTTP: each person does their part ------------------------------------------------------------------


def sign_in_everyone(world: World, users: dict) -> None:
    tokens = dict(Token.objects.filter(user__username__in=users).values_list("user__username", "key"))

    def sign_in(username):  # in threads: the server checks passwords (the slow part) on both cores
        client = Client(world.url, name=username, token=tokens[username])
        world.expect(client.sign_in(username, PASSWORD), (302,), f"{username} signs in")
        return username, client

    with ThreadPoolExecutor(max_workers=4) as pool:
        world.clients.update(pool.map(sign_in, list(users)))


def upload_recording(world: World, username: str, project: str) -> str:
    """A recording as the recorder uploads it: blobs (screenshot, page, bboxes, an MHTML snapshot), start, turns
    (chat and browser, one with the snapshot), finish. Returns the demo's name."""
    client = world.client(username)
    blobs = state_blobs(seed=len(project) * 40 + ord(project[0]))  # each project's own screenshot and page
    snapshot = BlobFile(MHTML.replace(b"snapshot", f"snapshot of {project}".encode()), "multipart/related")
    for blob in [*blobs.values(), snapshot]:
        world.expect(
            client.request(
                "PUT",
                f"/api/blobs/{blob.sha256}?project={project}",
                blob.data,
                {"Content-Type": blob.media_type},
                api=True,
            ),
            (200, 201),
            "blob upload",
        )
    started = world.expect(
        client.post_json(
            "/api/recordings/",
            {"project": project, "client_id": f"net-{uuid.uuid4().hex[:8]}", "task_description": "Book a hotel"},
        ),
        (201,),
        "start a recording",
    )
    name = started.json()["name"]
    with_snapshot = intent_arguments("click")
    with_snapshot["properties"] = {**with_snapshot.get("properties", {}), "mhtml": snapshot.sha256}
    turns = [
        chat_turn("c0", "instructor", 0.2),
        chat_turn("c1", "navigator", 0.4),
        browser_turn("b0", "load", 1.0, **state_refs(blobs)),
        browser_turn("b1", "click", 2.0, arguments=with_snapshot, **state_refs(blobs)),
        browser_turn("b2", "textInput", 3.0, **state_refs(blobs)),
    ]
    world.expect(client.post_json(f"/api/recordings/{name}/turns/", {"turns": turns}), (200, 201), "turns")
    video = BlobFile(mediarecorder_webm([(200, 30, 30), (30, 200, 30)], seconds_each=0.5), "video/webm")
    world.expect(
        client.request(
            "PUT", f"/api/blobs/{video.sha256}?project={project}", video.data, {"Content-Type": "video/webm"}, api=True
        ),
        (200, 201),
        "video upload",
    )
    chunk = {"index": 0, "blob": video.sha256, "started_at": 0.5}
    world.expect(client.post_json(f"/api/recordings/{name}/video/", chunk), (200, 201), "video chunk")
    world.expect(client.post_json(f"/api/recordings/{name}/finish/", {}), (200,), "finish the recording")
    return name


def review_op(world: World, username: str, name: str, **body):
    """One operation of the review page (``POST /review/<name>/edit``) at the demo's current revision."""
    client = world.client(username)
    state = world.expect(client.get(f"/review/{name}/revision"), (200,), "read the revision")
    revision = state.json().get("revision") if state.status == 200 else None
    return world.expect(
        client.post_json(f"/review/{name}/edit", {"revision": revision, **body}, api=False), (200,), body["op"]
    )


def first_turn(world: World, name: str, kind="browser") -> int:
    return Demonstration.objects.get(name=name).turns.filter(type=kind).order_by("seq").first().pk


def review_everything(world: World, demos: dict, uploaded: str) -> None:
    """alpha's reviews as two reviewers and the admin do them, leaving every status but recording: in review (with
    edits and comments), validated, returned with a comment, rejected, recorded, unsure and discarded; and a Mind2Web
    verification (a refined task)."""
    a1, a2, a3, a4, a5 = (demos[k].name for k in ("a1", "a2", "a3", "a4", "a5"))
    review_op(world, "vera", a1, op="edit_text", turn=first_turn(world, a1, "chat"), text="Hello, please book it")
    review_op(world, "vera", a1, op="delete", turn=first_turn(world, a1))
    review_op(world, "vic", a1, op="comment", text="Checked the first half")
    review_op(world, "vic", a2, op="transition", action="validate")
    review_op(world, "vera", a3, op="transition", action="return", comment="Please redo the search step")
    review_op(world, "vera", a4, op="transition", action="reject", comment="Off task")
    review_op(world, "vic", a5, op="set_unsure", unsure=True)
    review_op(world, "ada", uploaded, op="edit_metadata", fields={"refined_task": "Book a hotel in Kyoto"})
    review_op(world, "vic", a5, op="edit_metadata", fields={"discarded": True})
    review_op(world, "bea", demos["b1"].name, op="transition", action="validate")


def mark_problems(world: World) -> None:
    """A problem marked on the task of every recorded demo, by alpha's reviewer and beta's admin."""
    for username, project in (("vera", "alpha"), ("bea", "beta")):
        names = Demonstration.objects.filter(project__name=project).exclude(status=DemoStatus.RECORDING)
        for name in names.values_list("name", flat=True):
            body = {"kind": "task_infeasible", "note": "The site no longer sells this"}
            answer = world.client(username).post_json(f"/api/review/{name}/problems/", body)
            world.expect(answer, (201,), "mark a problem")


def second_reviews(world: World, demos: dict, before: bool) -> None:
    """alpha sends every decided demo to a second reviewer (its admin sets the share before the reviews); after
    them, vic gives one of his second reviews (a4, rejected by vera) and leaves the other waiting, as vera does
    hers (docs/quality.md)."""
    if before:
        body = {"second_review_percent": 100}
        sent = world.client("ada").post_json("/api/quality/demos/alpha/", body, method="PATCH")
        world.expect(sent, (200,), "set the second-review share")
        return
    a4 = demos["a4"].name
    body = {"decision": "reject", "invalid_turns": [first_turn(world, a4)], "comment": "Off task indeed"}
    world.expect(world.client("vic").post_json(f"/api/quality/second-reviews/{a4}/", body), (200,), "second review")


def invitations(world: World, demos: dict) -> None:
    """The navigator's page issues the invitation link: one is revoked (a new one shows), one is used by another
    annotator who joins as the instructor, beta's stays open."""
    live = demos["a-invite"].name
    world.expect(world.client("ann").get(f"/sessions/{live}/navigate"), (200,), "navigator page")
    world.expect(world.client("ann").post(f"/sessions/{live}/invitation/revoke"), (302,), "revoke the invitation")
    world.expect(world.client("otto").get(f"/sessions/{demos['b-invite'].name}/navigate"), (200,), "beta's navigator")
    page = world.expect(world.client("amy").get(f"/sessions/{demos['a-join'].name}/navigate"), (200,), "navigator")
    link = lxml.html.document_fromstring(page.body).get_element_by_id("invite-url").get("value")
    world.expect(world.client("abe").get(link), (200,), "the invitation page")
    world.expect(world.client("abe").post(link), (302,), "join as the instructor")


def project_invitations(world: World) -> None:
    """Invitation links to a project: alpha's admin makes two on the members page and one through the API, revokes
    one; the third is used by a new person, who joins alpha as an annotator; beta's admin makes one (left open)."""
    for role in ("reviewer", "annotator"):
        made = world.client("ada").post("/projects/alpha/invitations/new", {"role": role, "days": 7})
        world.expect(made, (302,), "make an invitation link")
    page = world.expect(world.client("ada").get("/projects/alpha/members/"), (200,), "members page")
    link = lxml.html.document_fromstring(page.body).get_element_by_id("invitation-link").get("value")
    answer = world.client("ada").post_json("/api/projects/alpha/invitations/", {"role": "annotator", "days": 3})
    world.expect(answer, (201,), "an invitation link through the API")
    revoke = world.client("ada").post_json(f"/api/projects/alpha/invitations/{answer.json()['id']}/", {}, "DELETE")
    world.expect(revoke, (200,), "revoke an invitation link")
    joining = Client(world.url, name="ivy")
    world.expect(joining.get(link), (200,), "the invitation page")
    fields = {"username": "ivy", "password1": PASSWORD, "password2": PASSWORD}
    world.expect(joining.post(link, fields), (302,), "a new person joins by link")
    made = world.client("bea").post("/projects/beta/invitations/new", {"role": "annotator", "days": 7})
    world.expect(made, (302,), "beta's invitation link")


def propose_and_review(world: World, sites: dict) -> None:
    """Rounds by three annotators on alpha's two websites and by beta's people; reviews: three accepted (the
    second and third accept of a project included), one rejected, the rest pending."""
    proposals = {}
    for username, site, texts in (
        ("ann", sites["alpha"][0], ["Reserve a wine tasting in Sonoma for six", "Find a vegan bakery in Portland"]),
        ("abe", sites["alpha"][0], ["Cancel my booking at a steakhouse in Miami"]),
        ("amy", sites["alpha"][1], ["Find a ramen place in Tokyo open after midnight", "Join a waitlist in Paris"]),
        ("otto", sites["beta"][0], ["Book a table for eight in Lisbon on Friday", "Find a seafood place in Oslo"]),
    ):
        client = world.client(username)
        started = world.expect(client.post_json("/api/proposal-rounds/", {"website": site.pk}), (201,), "start a round")
        if started.status != 201:
            continue
        submitted = world.expect(
            client.post_json(f"/api/proposal-rounds/{started.json()['id']}/submit/", {"tasks": texts}),
            (201,),
            "submit proposals",
        )
        if submitted.status == 201:
            proposals[username] = [p["id"] for p in submitted.json()["proposals"]]
    decisions = [
        ("vera", proposals.get("ann", [None])[0], "accept"),
        ("vic", proposals.get("abe", [None])[0], "accept"),
        ("vera", proposals.get("amy", [None])[0], "accept"),
        ("vic", proposals.get("ann", [None, None])[1], "reject"),
        ("bea", proposals.get("otto", [None])[0], "accept"),
        ("bea", proposals.get("otto", [None, None])[1], "reject"),
    ]
    for username, proposal, decision in decisions:
        if proposal is not None:
            world.expect(
                world.client(username).post_json(f"/api/proposals/{proposal}/screen/", {"decision": decision}),
                (200,),
                f"{decision} a proposal",
            )


def demonstrate(world: World, username: str, finish: bool) -> None:
    """Start the person's first demonstration task from the recorder's list, record a little, maybe finish."""
    client = world.client(username)
    listed = world.expect(client.get("/api/demonstration-tasks/", api=True), (200,), "list demonstration tasks")
    tasks = listed.json() if listed.status == 200 else []
    if not tasks:
        world.fail(f"{username} has no demonstration task to record")
        return
    started = world.expect(
        client.post_json(f"/api/demonstration-tasks/{tasks[0]['id']}/start/", {"client_id": f"m2w-{username}"}),
        (201,),
        "start a demonstration",
    )
    if started.status != 201:
        return
    name = started.json()["name"]
    turns = [browser_turn("d0", "load", 0.5), browser_turn("d1", "click", 1.5)]
    world.expect(client.post_json(f"/api/recordings/{name}/turns/", {"turns": turns}), (200, 201), "demo turns")
    if finish:
        world.expect(client.post_json(f"/api/recordings/{name}/finish/", {}), (200,), "finish the demonstration")


def frame_form(page) -> tuple[str, list]:
    """The task frame's form: its action and the answers a person gives (the first option of each field)."""
    root = lxml.html.document_fromstring(page.body)
    form = root.get_element_by_id("mturk_form") if root.xpath("//*[@id='mturk_form']") else root.find(".//form")
    answers, seen = [], set()
    for element in form.iter("input", "select", "textarea"):
        name, kind = element.get("name"), (element.get("type") or "text").lower()
        if not name or kind in ("hidden", "submit", "button") or name in seen:
            continue
        seen.add(name)
        if element.tag == "select":
            options = [o.get("value") for o in element.iter("option") if o.get("value")]
            answers.append((name, options[0] if options else "x"))
        elif kind in ("radio", "checkbox"):
            answers.append((name, element.get("value", "on")))
        else:
            answers.append((name, "an answer"))
    return form.get("action"), answers


def work_on(world: World, username: str, batch_id: int, then: str) -> None:
    """Accept the batch's next task on the work page, open the assignment's frame, then ``submit`` the answers,
    ``return`` the task, or leave it in progress (``keep``)."""
    client = world.client(username)
    accepted = world.expect(client.post(f"/work/batches/{batch_id}/accept/"), (302,), "accept a task")
    if "/work/assignments/" not in accepted.location:
        world.fail(f"{username} got no assignment in batch {batch_id}: {accepted.location}")
        return
    assignment = accepted.location.rstrip("/").rsplit("/", 1)[-1]
    page = world.expect(client.get(accepted.location), (200,), "assignment page")
    frames = lxml.html.document_fromstring(page.body).xpath("//iframe/@src")
    if then == "submit" and frames:
        frame = world.expect(client.get(frames[0]), (200,), "task frame")
        action, answers = frame_form(frame)
        world.expect(client.post(action or frames[0], answers, api=True), (200,), "submit the answers")
    elif then == "return":
        world.expect(client.post(f"/work/assignments/{assignment}/return"), (302,), "return the task")


def manage_batches(world: World, batches: dict) -> None:
    """The batches' managers at work (page forms and the API): alpha's first batch gets more time and one more
    assignment per task, is paused and resumed, its instructions edited; beta's stays paused."""
    alpha, beta = batches["alpha"][0], batches["beta"][0]
    rex, rita, ada, bea = (world.client(name) for name in ("rex", "rita", "ada", "bea"))
    extend = {"allotted_minutes": "90", "active_extra_minutes": "30"}
    world.expect(rex.post(f"/work/batches/{alpha}/extend", extend), (302,), "extend a batch")
    world.expect(rita.post_json(f"/api/batches/{alpha}/add-assignments/", {"count": 1}), (200,), "add assignments")
    world.expect(ada.post(f"/work/batches/{alpha}/pause", {}), (302,), "pause a batch")
    world.expect(ada.post(f"/work/batches/{alpha}/resume", {}), (302,), "resume a batch")
    instructions = {"description": "Read the whole question first."}
    world.expect(rita.post_json(f"/api/batches/{alpha}/instructions/", instructions), (200,), "edit instructions")
    world.expect(bea.post_json(f"/api/batches/{beta}/pause/", {}), (200,), "pause a batch (API)")


def quality_review(world: World) -> None:
    """Researchers review submitted form work (approve one, reject one with a reason, over the API and the review
    page); admins create a qualification and grant it; a batch's quality settings are set."""
    for reviewer, project in (("rex", "alpha"), ("bea", "beta")):
        client = world.client(reviewer)
        listed = world.expect(client.get("/api/decisions/?review=pending", api=True), (200,), "list submitted work")
        rows = listed.json()["results"] if listed.status == 200 else []
        if not rows:
            world.fail(f"{reviewer} found no submitted assignment to review in {project}")
            continue
        world.expect(client.post_json(f"/api/decisions/{rows[0]['id']}/approve/", {}), (200,), "approve work")
        if len(rows) > 1:  # beta has one submission only
            decision = {"decision": "reject", "feedback": "Please read the instructions.", "assignment": rows[1]["id"]}
            page = f"/work/batches/{rows[1]['batch']}/decisions/decide"
            world.expect(client.post(page, decision), (302,), "reject work on the review page")
        settings = {"gold_rate": 0.2, "gold_threshold": 0.3, "gold_min_answers": 5}
        world.expect(
            client.post_json(f"/api/batch-quality/{rows[0]['batch']}/", settings, method="PATCH"), (200,), "settings"
        )
    for admin, project, worker in (("ada", "alpha", "ann"), ("bea", "beta", "otto")):
        client = world.client(admin)
        made = world.expect(
            client.post_json("/api/qualifications/", {"project": project, "name": "careful"}), (201,), "qualification"
        )
        if made.status == 201:
            grant = {"worker": worker, "score": 0.9}
            world.expect(client.post_json(f"/api/qualifications/{made.json()['id']}/grant/", grant), (200,), "grant")


def settings_and_rates(world: World) -> None:
    """Each project's admin sets its split configuration (API) and pay rates (page)."""
    rates = {
        "currency": "USD",
        "recording_per_hour": "7.50",
        "review_per_hour": "8",
        "form_task_per_hour": "6",
        "overhead_per_hour": "5",
        "per_validated_demo": "1",
        "per_submitted_assignment": "0.5",
        "idle_gap_minutes": "10",
    }
    split = {"held_out_websites": ["www.bbc.com"], "held_out_domains": ["travel"]}
    for admin, project in (("ada", "alpha"), ("bea", "beta")):
        client = world.client(admin)
        world.expect(client.post_json(f"/api/projects/{project}/splits/", split, method="PUT"), (200,), "splits")
        world.expect(client.post(f"/projects/{project}/pay/rates/", rates), (302,), "pay rates")


def evaluation(world: World, username: str, project: str) -> tuple:
    """An evaluation of a prediction for a validated demo of ``project``, in the demo's split (read from the API)."""
    listed = world.client(username).get(f"/api/demonstrations/?project__name={project}&status=validated", api=True)
    demo = world.expect(listed, (200,), "list validated demos").json()["results"][0]
    prediction = {"demo_name": demo["name"], "turn_index": 1, "output_predicted": 'click(uid="u")'}
    body = {"project": project, "format": "weblinx", "split": demo["split"], "predictions": [prediction]}
    return username, "/api/evaluations/", body


def start_jobs(world: World, jobs) -> list[tuple[str, str]]:
    """Start each ``(username, API path, body)``; ``[(username, job URL)]``."""
    started = []
    for username, path, body in jobs:
        response = world.expect(world.client(username).post_json(path, body), (201, 202), f"start {path}")
        if response.status in (201, 202):
            started.append((username, f"{path}{response.json()['id']}/"))
    return started


def start_agent_runs(world: World) -> list[tuple[str, str]]:
    """A do-nothing agent run in each project (each opens the real pages in the worker's Chromium: started first,
    they run while the people work)."""
    return start_jobs(
        world,
        [
            ("rex", "/api/agent-runs/", {"project": "alpha", "split": "all", "solver": "do-nothing", "instances": 1}),
            ("bea", "/api/agent-runs/", {"project": "beta", "split": "all", "solver": "do-nothing", "instances": 1}),
        ],
    )


def start_llm_run(world: World, model) -> list[tuple[str, str]]:
    """A model endpoint in each project (its key write-only) and an llm agent run on alpha's, against the stand-in model
    server ``model`` on loopback (its answers are prose: every field's error is recorded, the run is done)."""
    for username, project in (("rex", "alpha"), ("bea", "beta")):
        endpoint = {"project": project, "name": "stand-in", "url": model.url, "model": "stand-in", "key": "sk-world"}
        added = world.client(username).post_json("/api/model-endpoints/", endpoint)
        world.expect(added, (201,), "add a model endpoint")
    endpoints_page = "/projects/alpha/agents/endpoints/"  # and one through the page (the key write-only there too)
    page = {"name": "web-form", "url": model.url, "model": "stand-in", "key": "sk-world-web"}
    world.expect(world.client("rita").post(endpoints_page, page), (302,), "add a model endpoint on its page")
    run = {"project": "alpha", "split": "all", "solver": "llm", "endpoint": "stand-in", "instances": 1}
    return start_jobs(world, [("rex", "/api/agent-runs/", run)])


def start_exports(world: World) -> list[tuple[str, str]]:
    """Exports (WebLINX, Mind2Web, TurkingBench) and evaluations, in both projects."""
    return start_jobs(
        world,
        [
            ("rex", "/api/exports/", {"project": "alpha", "format": "weblinx", "statuses": ["recorded", "validated"]}),
            (
                "rita",
                "/api/exports/",
                {"project": "alpha", "format": "mind2web", "statuses": ["recorded", "validated"]},
            ),
            ("rita", "/api/exports/", {"project": "alpha", "format": "turkingbench"}),
            ("bea", "/api/exports/", {"project": "beta", "format": "weblinx", "statuses": ["recorded"]}),
            evaluation(world, "rex", "alpha"),
            evaluation(world, "bea", "beta"),
        ],
    )


def wait_for_jobs(world: World, started: list, timeout=240) -> None:
    deadline = time.monotonic() + timeout
    for username, url in started:
        while True:
            body = world.client(username).get(url, api=True).json()
            if body["status"] in ("done", "failed", "cancelled"):
                if body["status"] != "done":
                    world.fail(f"{url} ended {body['status']}: {body.get('error', '')}")
                break
            if time.monotonic() > deadline:
                world.fail(f"{url} still {body['status']} after {timeout} s")
                break
            time.sleep(0.2)


def build_over_http(world: World, stored: dict) -> None:
    """What the people do on the running platform, in the order an afternoon goes."""
    demos, batches = stored["demos"], {}
    for batch in Batch.objects.forms().select_related("project"):
        batches.setdefault(batch.project.name, []).append(batch.pk)
    model = StandInModel(default="nonsense")  # served until the jobs are done
    threading.Thread(target=model.serve_forever, name="world-standin-model", daemon=True).start()
    runs = start_agent_runs(world) + start_llm_run(world, model)
    uploaded = upload_recording(world, "ann", "alpha")
    upload_recording(world, "otto", "beta")
    second_reviews(world, demos, before=True)
    review_everything(world, demos, uploaded)
    mark_problems(world)
    review_op(world, "ann", demos["a3"].name, op="transition", action="resubmit")  # returned, fixed, sent back
    review_op(world, "vera", demos["a3"].name, op="transition", action="return", comment="One more step")
    second_reviews(world, demos, before=False)
    invitations(world, demos)
    project_invitations(world)
    propose_and_review(world, stored["sites"])
    demonstrate(world, "ann", finish=False)  # under way: the recorder still lists it
    demonstrate(world, "abe", finish=True)
    demonstrate(world, "otto", finish=False)
    for username, then in (("ann", "submit"), ("abe", "submit"), ("amy", "return"), ("ann", "keep")):
        for batch_id in batches["alpha"][:2]:
            work_on(world, username, batch_id, then)
    work_on(world, "amy", batches["alpha"][0], "submit")  # a third worker: agreement among three (quality)
    work_on(world, "otto", batches["beta"][0], "submit")
    work_on(world, "bea", batches["beta"][0], "keep")
    manage_batches(world, batches)
    quality_review(world)
    settings_and_rates(world)
    wait_for_jobs(world, runs + start_exports(world))
    model.shutdown()
    model.server_close()
