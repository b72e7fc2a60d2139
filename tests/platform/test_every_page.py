"""Every page for every role, on the real server (uvicorn as `make run` starts it, two processes; a Celery worker),
over plain HTTP with each person's session (signed in through the login form) or API token.

The world (``support/every_page_world.py``): two projects in all three modes with several people per role, an outsider
(beta only) and a superuser, built through the platform by the people whose work it is. Then:

- as everyone (and anonymously), from ``/`` every link reachable breadth-first (``a``, ``iframe``, ``img``, ``link``,
  ``script``, GET forms as shown), same origin, a few URLs per URL pattern: no 5xx, no link shown to a person that
  answers them a 4xx, and following links changes nothing stored but caches;
- every URL pattern with an object in it (walked from the URL configuration, so a new pattern is covered or the test
  says to list it), filled with one's own project's objects, as one person per role: no 5xx, a refusal is a page or
  JSON, and someone of the project opens each;
- the same patterns filled with the other project's objects, or one of them among one's own, as each alpha role and
  the outsider, GET and POST: 404 or 403 (405 for a method a pattern does not take), never the object, never a 5xx;
  the admin's, the app's 403 page for everyone signed in who is not staff;
- every API list with each role's token, and the browsable API's own links.

Failures are collected and reported all at once: status, method, URL, who, and where a link was shown.
"""

import collections
import contextlib
import itertools
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlencode, urlsplit

import lxml.html
import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.test.utils import override_settings
from django.urls import Resolver404, resolve

from annotation.actions.forms import frames
from annotation.models import (
    AgentRun,
    Assignment,
    AssignmentStatus,
    Batch,
    BatchKind,
    Demonstration,
    DemoStatus,
    Evaluation,
    ExportJob,
    Invitation,
    Membership,
    ModelEndpoint,
    PredictionRun,
    ProblemMark,
    Project,
    ProjectInvitation,
    ProposalRound,
    ProposedTask,
    Qualification,
    Turn,
    VideoChunk,
    Website,
)
from annotation.views.moved import Moved
from devtools.processes import asgi_process, celery_worker, database_url
from tests.support.every_page_world import (
    CRAWLED,
    ROLES,
    SUPERUSER,
    World,
    build_over_http,
    sign_in_everyone,
    store_before_server,
)
from tests.support.site_client import Client, page_links
from tests.support.url_patterns import all_patterns

# The module's data are committed by its fixture (and flushed after the module); each test reads them.
pytestmark = [pytest.mark.processes, pytest.mark.django_db]

ANONYMOUS = "anonymous"
# The pattern tests ask as one person of each role (the crawl goes as everyone).
ONE_PER_ROLE = {"alpha": ["ada", "rex", "vera", "ann"], "beta": ["bea", "otto"]}
PER_ROUTE = 3  # URLs followed per URL pattern and person (query strings included): every page, a few of each
GENERIC_PER_ROUTE = 1  # the admin's and the browsable API's pages: the same generic views for every model
CRAWL_CAP = 600  # pages per person, at most
REDIRECTS = (301, 302, 303, 307, 308)


def enter_together(stack, *managers) -> list:
    """Enter context managers at once (processes that start in parallel), each exited by ``stack``."""
    with ThreadPoolExecutor(max_workers=len(managers)) as pool:
        futures = [pool.submit(manager.__enter__) for manager in managers]
    values, errors = [], []
    for manager, future in zip(managers, futures, strict=True):
        if future.exception() is None:
            stack.push(manager.__exit__)
            values.append(future.result())
        else:
            errors.append(future.exception())
    if errors:
        raise errors[0]
    return values


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    folder = tmp_path_factory.mktemp("every-page")
    media = folder / "media"
    storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(media)}}
    with django_db_blocker.unblock(), contextlib.ExitStack() as stack:
        # the world's model endpoints are on loopback (the stand-in model): allowed in it, in-process and in its
        # server and worker
        stack.enter_context(
            override_settings(STORAGES={**settings.STORAGES, "default": storage}, MODEL_ENDPOINTS_ALLOW_PRIVATE=True)
        )
        stack.callback(call_command, "flush", verbosity=0, interactive=False)
        stored = store_before_server()
        env = {
            "DATABASE_URL": database_url(connection.settings_dict),
            "MEDIA_ROOT": str(media),
            "EXPORT_TMP_DIR": str(folder / "exports-tmp"),
            "CELERY_QUEUE": f"every-page-{uuid.uuid4().hex[:8]}",
            "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1",
        }
        (url, _), _ = enter_together(
            stack, asgi_process(env, folder / "server.log", workers=2), celery_worker(env, folder / "worker.log")
        )
        built = World(url)
        sign_in_everyone(built, ROLES)
        build_over_http(built, stored)
        yield built


def report(failures: list, what: str) -> str:
    return f"{len(failures)} {what}:\n" + "\n".join(failures)


def test_the_world_is_built_through_the_platform(world):
    """Every step of the afternoon answered as its person expected (a refused step is a failure of its own)."""
    assert not world.setup_failures, report(world.setup_failures, "steps of the building went wrong")


# --- Following every link ---------------------------------------------------------------------------------------


def route_of(path: str) -> str:
    try:
        return resolve(urlsplit(path).path).route
    except Resolver404:
        return urlsplit(path).path


def crawl(world: World, client: Client, static: set) -> list:
    """Breadth-first from ``/``: ``[(url, status, how it was reached)]``; ``static``: the static files someone
    fetched already (the same for everyone)."""
    origin = urlsplit(world.url).netloc
    queue = collections.deque([("/", "the start")])
    seen, per_route, answers = {"/"}, collections.Counter(), []
    while queue and len(answers) < CRAWL_CAP:
        url, source = queue.popleft()
        response = client.get(url)
        answers.append((url, response.status, source))
        if response.status in REDIRECTS:
            found = [("redirect", response.location)]
        elif "text/html" in response.content_type:
            found = page_links(response.body, world.url + url)
        else:
            found = []
        for kind, link in found:
            parts = urlsplit(link if "://" in link else world.url + link)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            if parts.netloc != origin or path in seen or path in static or "logout" in parts.path:
                continue
            seen.add(path)
            if path.startswith(settings.STATIC_URL):
                static.add(path)
            route = route_of(path)
            if per_route[route] < (GENERIC_PER_ROUTE if route.startswith(("admin/", "api/")) else PER_ROUTE):
                per_route[route] += 1
                queue.append((path, f"{kind} on {url}"))
    return answers


# What following links may change, and why; any other table a GET changes is a failure.
WRITTEN_BY_BROWSING = {
    "django_session": "the sessions: a page shows its one-time messages once",
    "annotation_demoreview": "caches of the immutable capture, made on first view: its quality issues, and the "
    "screenshot suggestions the review page asks the worker for",
}
# (The navigator's page and the home page also issue the invitation link they show when a chat-mode recording has
# none: the building opened those pages first, so following links issues none.)


def stored_state() -> dict:
    """``{table: (rows, digest of the rows)}`` of every table, as committed."""
    with connection.cursor() as cursor:
        state = {}
        for table in connection.introspection.table_names(cursor):
            digest = "md5(coalesce(string_agg(md5(t::text), '' ORDER BY md5(t::text)), ''))"
            cursor.execute(f'SELECT count(*), {digest} FROM "{table}" t')
            state[table] = cursor.fetchone()
    return state


def expected_refusal(url: str, status: int, source: str) -> bool:
    """A 4xx a link may answer: a hidden link (a script shows it later, e.g. the session page's link to the review
    page once the recording ends); in the browsable API, its extra actions taking POST (405: the page shows the
    form to post) and a list that needs a parameter (400 naming it)."""
    if source.startswith("hidden"):
        return True
    if " on /api/" in source:
        return status == 405 or (status == 400 and urlsplit(url).path.lstrip("/") in LISTS_NEEDING_A_QUERY)
    return False


def test_every_link_from_the_home_page_works_for_every_role(world):
    people = [*CRAWLED, ANONYMOUS]
    before = stored_state()

    static = set()

    def crawled(username):
        client = Client(world.url) if username == ANONYMOUS else world.client(username)
        return username, crawl(world, client, static)

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(pool.map(crawled, people))
    after = stored_state()
    failures = [
        f"browsing changed the table {table}: {before[table]} → {after.get(table)}"
        for table in sorted(before)
        if before[table] != after.get(table) and table not in WRITTEN_BY_BROWSING
    ]
    for username, answers in results.items():
        role = ROLES.get(username, ANONYMOUS)
        for url, status, source in answers:
            if status >= 500 or (status >= 400 and not expected_refusal(url, status, source)):
                failures.append(f"{status} GET {url} as {username} ({role}), reached by {source}")
    assert not failures, report(failures, "links answered with an error or changed what is stored")
    reached = {name: len(answers) for name, answers in results.items()}
    assert all(20 < reached[name] < CRAWL_CAP for name in CRAWLED), reached  # the cap never cut a crawl short


# The header each role is shown (every project of the world collects Mind2Web tasks: it has websites).
SIGNED_IN = {"Work", "Projects", "API token", "API docs", "Mind2Web"}
HEADER = {
    "annotator": SIGNED_IN,
    "outsider": SIGNED_IN,
    "reviewer": SIGNED_IN | {"Review"},
    "researcher": SIGNED_IN | {"Review", "Agent runs"},
    "admin": SIGNED_IN | {"Review", "Agent runs"},
    "superuser": SIGNED_IN | {"Review", "Agent runs", "People", "Admin"},
}


def test_the_header_shows_each_role_what_it_can_use_and_the_admin_only_to_staff(world):
    """As everyone: the header's links are those of the person's roles (no Review for annotators), each opens;
    ``/admin/`` is the app's 403 page for everyone signed in but the superuser."""
    failures = []
    for username, role in CRAWLED.items():
        client = world.client(username)
        tree = lxml.html.document_fromstring(client.get("/").body)
        links = {a.text_content().strip(): a.get("href") for a in tree.xpath("//header[@class='top']/nav/a")}
        links.pop(username, None)  # the account page
        if set(links) != HEADER[role]:
            failures.append(f"{username} ({role}) is shown {sorted(links)}, expected {sorted(HEADER[role])}")
        failures += [
            f"{answer.status} GET {href} as {username} ({role}), a header link"
            for href in links.values()
            if (answer := client.get(href)).status not in (200, 302)
        ]
        admin = client.get("/admin/")
        if admin.status != (200 if role == "superuser" else 403):
            failures.append(f"{admin.status} GET /admin/ as {username} ({role})")
    assert not failures, report(failures, "header links or admin answers that do not fit the role")


# --- Every URL pattern with an object in it -----------------------------------------------------------------------

# Parameters that name no object (filled with a value the route takes; a pattern with only these is a list).
VALUES = {"format": ["json"], "fmt": ["csv"], "kind": ["exports", "evaluations"], "key": ["weblinx_splits"]}
VALUES["table"] = ["fields", "tasks"]  # a batch's agreement download (quality)
# Parameters that name an object (or its secret), by name.
OBJECTS = {
    "project": "project",
    "membership_id": "membership",
    "invitation_id": "project-invitation",
    "sha256": "blob",
    "turn_id": "turn",
    "batch_id": "batch",
    "task_id": "task",
    "assignment_id": "assignment",
    "token": "assignment-token",
    "code": "invitation",
    "run_id": "run",
    "prediction_id": "prediction",
    "endpoint_id": "endpoint",
    "row_id": "row",
    "website_id": "website",
    "round_id": "round",
    "proposal_id": "proposal",
    "id": "user",
    "content_type_id": "content-type",
    "qualification_id": "qualification",
    "mark_id": "problem-mark",
}
# The API's ``pk`` by viewset (its router basename).
VIEWSETS = {
    "export": "export",
    "evaluation": "evaluation",
    "agent-run": "run",
    "prediction-run": "prediction",
    "model-endpoint": "endpoint",
    "batch": "batch",
    "assignment": "assignment",
    "website": "website",
    "proposal-round": "round",
    "proposal": "proposal",
    "demonstration-task": "demonstration-task",
    "agreement": "batch",
    "decision": "submitted-assignment",
    "decision-alias": "submitted-assignment",
    "qualification": "qualification",
    "batch-quality": "batch",
}
# Frames authorised by a token in their query string: the token is the capability, so it is filled like an object.
QUERY_TOKENS = {"forms/tasks/<task_id>/iframe/": "task-token", "forms/assignments/<assignment_id>/view/": "view-token"}
# Patterns this test cannot fill with a project's object, and why. A new pattern it cannot fill fails the test until
# it is filled above or listed here.
UNFILLABLE = {
    "account/token/<change>": "the signed-in person's own API token (create, rotate, revoke): no project's object",
    "accounts/reset/<uidb64>/<token>/": "a password-reset link: one account's signed token, no project's object",
    "api/imports/<pk>/": "the world imports no release (it would change its demos): 403 and 404 in "
    "tests/exports/test_exports_import_api.py",
    "projects/<name>/recuration/<release_id>/": "an imported demo's release id, and the world imports no release: "
    "each role in tests/exports/test_exports_recuration_page.py",
    "api/projects/<name>/recuration/<release_id>/": "an imported demo's release id, and the world imports no release: "
    "each role in tests/exports/test_exports_recuration_page.py",
    "api/projects/<name>/replays/<task>/": "a recorded task's annotation_id, and the world records no traffic: "
    "roles, outsiders and hostile ids in tests/recordings/test_recordings_attack_replay.py",
    "join/<token>/": "an invitation link is the capability: whoever opens it may join (test_manage_invitations.py)",
    "people/<user_id>/<change>": "an account, no project's object: site admins only (test_manage_people.py)",
    "admin/auth/group/<object_id>/": "groups belong to no project (the admin refuses non-staff on every page)",
    "admin/auth/group/<object_id>/change/": "groups belong to no project",
    "admin/auth/group/<object_id>/delete/": "groups belong to no project",
    "admin/auth/group/<object_id>/history/": "groups belong to no project",
}
# Filled, but nobody opens them with a project's object (so nobody reading it is no sign of a wrong filling).
NOBODY_READS = {
    "admin/r/<content_type_id>/<object_id>/": "the admin's view-on-site: no model here has a public URL (a 404)",
}
ADMIN_PATHS = {  # how an admin model's rows belong to a project, where no foreign key says it
    "auth.user": "memberships__project",
    "authtoken.tokenproxy": "user__memberships__project",
    "annotation.blob": "rights__project",
}


def kind_of(pattern, param: str, values: dict) -> str | None:
    """What object (or value) ``param`` of ``pattern`` names; None when this test does not know."""
    if param == "token" and pattern.route in QUERY_TOKENS:
        return QUERY_TOKENS[pattern.route]
    if param == "sha256" and pattern.route.startswith("api/"):
        return "stored-blob"
    if param == "name" and pattern.route.startswith(("projects/", "api/projects/")):
        return "project"
    if param == "name":
        return "live-demo" if pattern.route.startswith("sessions/") else "demo"
    if param == "pk":
        return VIEWSETS.get(pattern.viewset_basename)
    if param == "object_id":
        return f"admin:{pattern.model_admin.model._meta.label_lower}" if pattern.model_admin else "admin:demo"
    if param == "job_id":
        return "evaluation" if "evaluations" in values.get("kind", pattern.route) else "export"
    return OBJECTS.get(param)


def project_objects(project: Project, other: Project) -> dict:
    """``{kind: [value, ...]}``: objects of ``project`` to fill patterns with (the first of each where a pattern
    names several objects, so they belong together; every one where it names one)."""
    demo = (
        Demonstration.objects.filter(project=project, turns__page__isnull=False, turns__screenshot__isnull=False)
        .exclude(status=DemoStatus.RECORDING)
        .order_by("pk")
        .first()
    )
    recording = Demonstration.objects.filter(project=project, status=DemoStatus.RECORDING).order_by("pk").first()
    turn = demo.turns.filter(page__isnull=False, screenshot__isnull=False).order_by("seq").first()
    snapshot = Turn.objects.filter(demonstration__project=project, arguments__properties__has_key="mhtml").first()
    shared = project_blobs(project) & project_blobs(other)  # the same bytes uploaded to both: each project's own
    form_batch = Batch.objects.forms().filter(project=project, tasks__assignments__isnull=False).first()
    task = form_batch.tasks.order_by("index").first()
    assignments = Assignment.objects.filter(task__batch__project=project, task__batch__kind=BatchKind.FORM)
    submitted = assignments.filter(status=AssignmentStatus.SUBMITTED).first()
    active = assignments.filter(status=AssignmentStatus.ACTIVE).first()
    demonstration_task = Assignment.objects.filter(
        task__batch__project=project, task__batch__kind=BatchKind.DEMONSTRATION, status=AssignmentStatus.ACTIVE
    ).first()
    proposal_round = ProposalRound.objects.filter(website__project=project).select_related("proposer").first()
    run = AgentRun.objects.filter(project=project).first()
    endpoint = ModelEndpoint.objects.filter(project=project).first()
    only_here = Membership.objects.filter(project=project, user__is_staff=False).exclude(
        user__memberships__project=other
    )
    found = {
        "project": [project.name],
        "demo": [demo.name],
        "live-demo": [demo.name, recording.name],
        "turn": [turn.pk],
        "blob": [turn.screenshot_id],
        "stored-blob": [  # every kind the recorder uploads: screenshot, page, bboxes, MHTML snapshot, video
            sha
            for sha in (
                snapshot.screenshot_id,
                snapshot.page_id,
                snapshot.bboxes_id,
                snapshot.arguments["properties"]["mhtml"],
                VideoChunk.objects.get(demonstration=snapshot.demonstration).blob_id,
            )
            if sha not in shared
        ],
        "invitation": [Invitation.objects.active().filter(demonstration__project=project).first().code],
        "membership": [Membership.objects.filter(project=project).first().pk],
        "project-invitation": [ProjectInvitation.objects.filter(project=project).order_by("pk").first().pk],
        "export": [ExportJob.objects.filter(project=project).first().pk],
        "evaluation": [Evaluation.objects.filter(project=project).first().pk],
        "batch": [form_batch.pk],
        "task": [task.pk],
        "task-token": [frames.preview_token(task)],
        "assignment": [submitted.pk, active.pk],
        "submitted-assignment": [submitted.pk],
        "qualification": [Qualification.objects.filter(project=project).first().pk],
        "assignment-token": [submitted.token, active.token],
        "view-token": [parse_qs(urlsplit(frames.view_url(submitted)).query)["token"][0]],
        "demonstration-task": [demonstration_task.pk],
        "run": [run.pk],
        "prediction": [PredictionRun.objects.filter(project=project).order_by("pk").first().pk],
        "endpoint": [endpoint.pk],
        "row": [run.instances.exclude(screenshot="").first().pk],
        "website": [Website.objects.filter(project=project).first().pk],
        "round": [proposal_round.pk],
        "proposal": [ProposedTask.objects.filter(website__project=project).first().pk],
        "user": [only_here.first().user_id],
        "content-type": [ContentType.objects.get_for_model(Demonstration).pk],
        "problem-mark": [ProblemMark.objects.filter(demonstration=demo).first().pk],
        "admin:demo": [demo.pk],
    }
    assert found["blob"][0] not in project_blobs(other), "the demo's screenshot is also the other project's"
    # Pages only their person opens: the worker's assignment and demonstration task, the proposer's round.
    found["owners"] = {
        "assignment": {submitted.worker.username, active.worker.username},
        "assignment-token": {submitted.worker.username, active.worker.username},
        "demonstration-task": {demonstration_task.worker.username},
        "round": {proposal_round.proposer.username},
    }
    found.update(admin_objects(project))
    return found


def project_blobs(project) -> set:
    return set(project.blob_rights.values_list("blob_id", flat=True))


def project_path(model, depth=4) -> str | None:
    """The lookup from ``model`` to its ``Project`` through foreign keys (``task__batch__project``), or None."""
    if model is Project:
        return ""
    frontier = [(model, "")]
    for _ in range(depth):
        following = []
        for current, path in frontier:
            for field in current._meta.concrete_fields:
                target = field.related_model if field.many_to_one or field.one_to_one else None
                if target is Project:
                    return f"{path}{field.name}"
                if target is not None:
                    following.append((target, f"{path}{field.name}__"))
        frontier = following
    return None


def admin_objects(project) -> dict:
    """``admin:<app.model>`` → [pk of one of ``project``'s rows] for every model the admin serves that has one."""
    objects = {}
    for model in admin.site._registry:
        label = model._meta.label_lower
        path = ADMIN_PATHS.get(label, project_path(model))
        if path is not None:
            row = model.objects.filter(**({path: project} if path else {"pk": project.pk})).order_by("pk").first()
            if row is not None:
                objects[f"admin:{label}"] = [row.pk]
    return objects


def checked_patterns() -> tuple[list, list]:
    """``[(pattern, params)]`` of the patterns with an object in them (query tokens among the params); and the
    routes of those this test cannot fill that ``UNFILLABLE`` does not list."""
    checked, unknown = [], []
    for pattern in all_patterns():
        params = [*pattern.params, *(["token"] if pattern.route in QUERY_TOKENS else [])]
        if all(p in VALUES or p in ("app_label", "url") for p in params) or pattern.route in UNFILLABLE:
            continue  # a list, the admin's catch-all, or listed
        if getattr(pattern.callback, "view_class", None) is Moved:
            continue  # an old path: 308 to its new one, which is checked (tests/quality/test_quality_old_paths.py)
        if None in [kind_of(pattern, p, {"kind": VALUES["kind"][0]}) for p in params if p not in VALUES]:
            unknown.append(pattern.route)
        else:
            checked.append((pattern, params))
    return checked, unknown


def fillings(pattern, params: list, sides: dict, mixed: bool) -> list:
    """``[(url, other kinds)]``: ``pattern`` filled with objects of ``sides["other"]`` (every object of the other
    project, unless a token is the capability; with ``mixed``, also each one among one's own)."""
    objects = [p for p in params if p not in VALUES]
    values = [p for p in params if p in VALUES]
    single = len(objects) == 1
    sets = [set(objects)]
    if mixed and any(kind_of(pattern, p, {"kind": "exports"}).endswith("token") for p in objects):
        sets = []  # the other project's token with its own object is the capability: not a refusal to check
    if mixed and not single:
        sets += [{param} for param in objects]
    found = []
    for chosen in itertools.product(*[VALUES[p] for p in values]):
        filled_values = dict(zip(values, chosen, strict=True))
        for others in sets:
            alternatives = []
            for param in objects:
                side, kind = sides["other" if param in others else "own"], kind_of(pattern, param, filled_values)
                if not side.get(kind):
                    pytest.fail(f"the world has no {kind} to fill {pattern.route} with: add one to the building")
                options = side[kind]
                alternatives.append(options if single else options[:1])
            for combination in itertools.product(*alternatives):
                filled = {**filled_values, **dict(zip(objects, combination, strict=True))}
                found.append((url_of(pattern, filled), sorted(others)))
    return found


def object_params(pattern) -> set:
    """The parameters of ``pattern`` that name an object (its query token included)."""
    return {p for p in [*pattern.params, *(["token"] if pattern.route in QUERY_TOKENS else [])] if p not in VALUES}


def url_of(pattern, filled: dict) -> str:
    path_values = {k: v for k, v in filled.items() if k in pattern.params}
    query = {k: v for k, v in filled.items() if k not in pattern.params}
    return pattern.url(path_values) + (f"?{urlencode(query)}" if query else "")


@pytest.fixture(scope="module")
def objects(world, django_db_blocker):
    with django_db_blocker.unblock():
        alpha, beta = Project.objects.get(name="alpha"), Project.objects.get(name="beta")
        return {"alpha": project_objects(alpha, beta), "beta": project_objects(beta, alpha)}


def test_every_pattern_is_filled_or_listed():
    _, unknown = checked_patterns()
    assert not unknown, (
        "URL patterns this test cannot fill with a project's object: fill them (OBJECTS, VIEWSETS) or list them in "
        f"UNFILLABLE with why: {unknown}"
    )


def test_every_page_of_ones_own_project_answers_every_role_without_an_error(world, objects):
    """Every pattern filled with one's own project's objects, as every person (the API with their token): never a
    5xx, a refusal is a page or JSON (not bare text), and each is read by someone (or the filling is wrong)."""
    requests = []
    for pattern, params in checked_patterns()[0]:
        for project, found in objects.items():
            owners = {name for p in params for name in found["owners"].get(kind_of(pattern, p, {}), ())}
            people = [SUPERUSER] if pattern.route.startswith("admin/") else {*ONE_PER_ROLE[project], SUPERUSER, *owners}
            for url, _ in fillings(pattern, params, {"own": found, "other": found}, mixed=False):
                requests += [(pattern, username, url) for username in people]

    def ask(item):
        pattern, username, url = item
        return pattern, username, url, world.client(username).get(url, api=url.startswith("/api/"))

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(ask, requests))
    failures, read = [], collections.defaultdict(set)
    for pattern, username, url, response in answers:
        read[(pattern.route, url)].add(response.status)
        who = f"{username} ({ROLES[username]})"
        if response.status >= 500:
            failures.append(f"{response.status} GET {url} as {who}")
        elif response.status >= 400 and not response.content_type.startswith(("text/html", "application/json")):
            failures.append(f"{response.status} GET {url} as {who} answered {response.content_type}: {response.text!r}")
    unread = [  # 405: a POST-only pattern; 409, 410: the object is there, in a state that refuses this
        f"{url} ({route}): {sorted(statuses)}"
        for (route, url), statuses in read.items()
        if all(s in (403, 404) or s >= 500 for s in statuses) and route not in NOBODY_READS
    ]
    assert not failures + unread, (
        report(failures, "pages of one's own project answered with an error")
        + "\n"
        + report(unread, "pages nobody of the project could open (no 2xx or 3xx for anyone)")
    )


def refused(response, admin: bool, outside: bool) -> bool:
    """The admin answers everyone signed in who is not staff with the app's 403 page, whatever the object. Elsewhere
    what lies wholly outside one's projects is a 404, never a 403 (its existence does not leak: docs/security.md);
    with one's own project in the URL, one's role there may be refused first (403)."""
    if admin:
        return response.status == 403 and 'data-status="403"' in response.text
    return response.status in ((404,) if outside else (403, 404))


def test_another_projects_objects_answer_404_or_403_to_every_role(world, objects):
    """Every pattern filled with the other project's objects, or with one of them among one's own, as each alpha
    role and the outsider: GET and POST (empty, with the CSRF token or the API token) are refused with 404 (403 for
    one's role in one's own project; 405 when the pattern does not take the method), never the object, never a
    5xx."""
    people = dict.fromkeys(ONE_PER_ROLE["alpha"], "alpha") | {"otto": "beta"}
    requests = []
    for pattern, params in checked_patterns()[0]:
        for username, own in people.items():
            sides = {"own": objects[own], "other": objects["beta" if own == "alpha" else "alpha"]}
            for url, kinds in fillings(pattern, params, sides, mixed=True):
                requests.append((pattern, username, url, kinds))

    def ask(item):
        pattern, username, url, kinds = item
        client, api = world.client(username), url.startswith("/api/")
        return pattern, username, url, kinds, client.request("GET", url, api=api), client.post(url, {}, api=api)

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(ask, requests))
    failures = []
    for pattern, username, url, kinds, got, posted in answers:
        admin, outside = pattern.route.startswith("admin/"), set(kinds) == object_params(pattern)
        allowed = () if admin else (405,)
        if not (
            all(refused(r, admin, outside) or r.status in allowed for r in (got, posted))
            and (refused(got, admin, outside) or refused(posted, admin, outside))
        ):
            body = (got.text if got.status != 405 else posted.text)[:150]
            failures.append(
                f"GET {got.status} / POST {posted.status} {url} as {username} ({ROLES[username]}), with the "
                f"other project's {', '.join(kinds)}: {body!r}"
            )
    assert not failures, report(failures, "requests for another project's objects not refused")


# --- The API's lists, with a token --------------------------------------------------------------------------------

# Lists that need a parameter to answer (a 400 naming it without).
LISTS_NEEDING_A_QUERY = {"api/websites/offered/": "project"}


def test_every_api_list_answers_every_role(world):
    """Every list of the API (a pattern without parameters), with each person's token: 200 (405 for a POST-only
    one); the details are in the tests above, with the token too."""
    lists = [p for p in all_patterns() if p.route.startswith("api/") and not p.params]

    def ask(item):
        username, pattern = item
        return username, pattern, world.client(username).get("/" + pattern.template, api=True)

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(ask, itertools.product([*ONE_PER_ROLE["alpha"], "otto", SUPERUSER], lists)))
    failures = []
    for username, pattern, response in answers:
        needed = LISTS_NEEDING_A_QUERY.get(pattern.route)
        if response.status in (200, 405) or (response.status == 400 and needed and needed in response.text):
            continue
        failures.append(f"{response.status} GET /{pattern.template} as {username} ({ROLES[username]})")
    assert not failures, report(failures, "API lists answered with an error")


def test_the_browsable_apis_own_links_work(world):
    """In a browser (the session, a browser's ``Accept``) every API list is the browsable API: its own links (the
    format links, the pages) answer."""
    client, failures = world.client("ada"), []
    for pattern in all_patterns():
        if not pattern.route.startswith("api/") or pattern.params or pattern.route in LISTS_NEEDING_A_QUERY:
            continue
        url = "/" + pattern.template
        page = client.get(url)
        links = {link for kind, link in page_links(page.body, world.url + url) if kind == "a[href]"}
        for link in sorted(links):
            parts = urlsplit(link)
            if parts.netloc == urlsplit(world.url).netloc and parts.path == url and parts.query:
                answer = client.get(f"{parts.path}?{parts.query}")
                if answer.status >= 400:
                    failures.append(f"{answer.status} GET {parts.path}?{parts.query} as ada, a link on {url}")
        if page.status >= 400 and page.status != 405:
            failures.append(f"{page.status} GET {url} as ada (the browsable API)")
    assert not failures, report(failures, "browsable API links answered with an error")


def test_model_endpoint_keys_are_on_no_agents_page(world, django_db_blocker):
    """The world's endpoint keys (added through the API and through the page) are on none of the agents pages, as
    the project's admin and both researchers read them: only whether a key is stored."""
    with django_db_blocker.unblock():
        endpoints = list(ModelEndpoint.objects.filter(project__name="alpha").values_list("pk", flat=True))
        keys = list(ModelEndpoint.objects.filter(project__name="alpha").exclude(key="").values_list("key", flat=True))
        runs = list(AgentRun.objects.filter(project__name="alpha").values_list("pk", flat=True))
    pages = ["/agents/runs/", "/projects/alpha/agents/endpoints/", "/projects/alpha/agents/new/"]
    pages += [f"/projects/alpha/agents/endpoints/{pk}/" for pk in endpoints] + [f"/agents/runs/{pk}/" for pk in runs]
    assert len(endpoints) >= 2  # the agents' world's two, and the predictions' own
    for username in ("ada", "rex", "rita"):
        for url in pages:
            response = world.client(username).get(url)
            assert response.status == 200, (url, username)
            assert "sk-world" not in response.text, (url, username)
            assert not [key for key in keys if key in response.text], (url, username)
        listed = world.client(username).get("/projects/alpha/agents/endpoints/").text
        assert listed.count("key stored") == len(keys)
