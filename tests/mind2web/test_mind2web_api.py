"""The Mind2Web collection API: websites (create, import, access), seed tasks, proposal rounds (quota, seeded
draw, limits, screening), the review queue, demonstration tasks for the recorder, and verification counts."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.test import Client
from django.utils import timezone

from annotation.actions import Conflict, forms, mind2web
from annotation.models import (
    Assignment,
    AssignmentStatus,
    Batch,
    BatchKind,
    DemoMode,
    Demonstration,
    ProposalRound,
    ProposalStatus,
    Role,
    SeedSource,
    Task,
    Website,
)
from tests.support.actors import make_user, token_client
from tests.support.forms_data import run_at_once
from tests.support.loopback import loopback_server
from tests.support.mind2web_data import SEEDS, propose, review, start_round, website


def anonymous_get(url):
    return Client().get(url)


WEBSITE = {"project": "alpha", "name": "exploretock", "url": "https://www.exploretock.com/", "domain": "Travel"}


# --- Websites -----------------------------------------------------------------------------------------------


def test_a_researcher_adds_a_website_with_a_default_target_of_20(api_for, researcher):
    response = api_for(researcher).post("/api/websites/", {**WEBSITE, "subdomain": "Restaurant"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["target_tasks"], body["accepted"], body["seed_count"]) == ("exploretock", 20, 0, 0)
    assert body["project"] == "alpha"
    assert body["subdomain"] == "Restaurant"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"url": "not a url"}, "url"),
        ({"url": "ftp://x.example/"}, "url"),
        ({"name": ""}, "name"),
        ({"domain": None}, "domain"),
        ({"target_tasks": 0}, "target_tasks"),
        ({"target_tasks": "many"}, "target_tasks"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_website_is_a_400_naming_the_field(api_for, researcher, change, field):
    response = api_for(researcher).post("/api/websites/", {**WEBSITE, **change}, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert not Website.objects.exists()


def test_a_website_name_is_unique_in_its_project(api_for, researcher):
    client = api_for(researcher)
    assert client.post("/api/websites/", WEBSITE, format="json").status_code == 201
    response = client.post("/api/websites/", WEBSITE, format="json")
    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "name"


def test_only_researchers_and_admins_add_websites_and_outsiders_learn_nothing(api_for, owner, reviewer, outsider):
    assert api_for(owner).post("/api/websites/", WEBSITE, format="json").status_code == 403
    assert api_for(reviewer).post("/api/websites/", WEBSITE, format="json").status_code == 403
    assert api_for(outsider).post("/api/websites/", WEBSITE, format="json").status_code == 404


def test_members_read_the_websites_of_their_projects_only(api_for, site, owner, outsider):
    assert [w["name"] for w in api_for(owner).get("/api/websites/").json()["results"]] == ["exploretock"]
    assert api_for(owner).get(f"/api/websites/{site.pk}/").json()["seed_count"] == len(SEEDS)
    assert api_for(outsider).get("/api/websites/").json()["results"] == []
    assert api_for(outsider).get(f"/api/websites/{site.pk}/").status_code == 404


def test_a_null_is_blank_and_a_wrong_type_is_named_when_changing_a_website(api_for, site, researcher):
    client = api_for(researcher)
    response = client.patch(f"/api/websites/{site.pk}/", {"subdomain": None, "target_tasks": 0}, format="json")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["target_tasks"]
    response = client.patch(f"/api/websites/{site.pk}/", {"subdomain": None, "domain": 5}, format="json")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["domain"]
    response = client.patch(f"/api/websites/{site.pk}/", {"subdomain": None}, format="json")
    assert response.json()["subdomain"] == ""


def test_a_researcher_changes_a_website(api_for, site, researcher, owner):
    response = api_for(researcher).patch(f"/api/websites/{site.pk}/", {"target_tasks": 3}, format="json")
    assert response.status_code == 200
    assert response.json()["target_tasks"] == 3
    assert api_for(owner).patch(f"/api/websites/{site.pk}/", {"target_tasks": 9}, format="json").status_code == 403


def upload(client, content: str, name: str, project="alpha"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    file = SimpleUploadedFile(name, content.encode(), content_type="text/plain")
    return client.post("/api/websites/import/", {"project": project, "file": file}, format="multipart")


CSV = (
    "name,url,domain,subdomain,description,target_tasks\n"
    "exploretock,https://www.exploretock.com/,Travel,Restaurant,Restaurant bookings,30\n"
    "carmax,https://www.carmax.com/,Shopping,Auto,,\n"
)


def test_websites_import_from_csv_and_json(api_for, researcher):
    client = api_for(researcher)
    response = upload(client, CSV, "sites.csv")
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 2
    assert dict(Website.objects.values_list("name", "target_tasks")) == {"exploretock": 30, "carmax": 20}
    rows = [{"name": "united", "url": "https://www.united.com/", "domain": "Travel", "subdomain": "Airlines"}]
    response = upload(client, json.dumps(rows), "sites.json")
    assert response.status_code == 201
    assert response.json()["websites"][0]["subdomain"] == "Airlines"


@pytest.mark.parametrize(
    ("content", "name", "field"),
    [
        (CSV + "bad,not-a-url,Travel,,,\n", "sites.csv", "rows[3].url"),
        (CSV.replace("Shopping,Auto,,", "Shopping,Auto,,lots"), "sites.csv", "rows[2].target_tasks"),
        ("name,url,domain\nx,https://x.example/\n", "sites.csv", "rows[1]"),
        ('[{"name": "a", "url": "https://a.example/", "domain": ""}]', "sites.json", "rows[1].domain"),
        ('[{"name": "a"', "sites.json", "file"),
        ('{"name": "a"}', "sites.json", "file"),
        ('["a"]', "sites.json", "rows[1]"),
        (CSV + CSV.split("\n", 2)[1] + "\n", "sites.csv", "rows[3].name"),
    ],
)
def test_a_bad_import_names_row_and_field_and_stores_nothing(api_for, researcher, content, name, field):
    response = upload(api_for(researcher), content, name)
    assert response.status_code in (400, 409), response.content
    assert field in [e["field"] for e in response.json()["errors"]], response.json()
    assert not Website.objects.exists()


# --- Seed tasks ---------------------------------------------------------------------------------------------


def test_seed_tasks_are_imported_as_json_or_a_file_and_duplicates_are_skipped(api_for, site, researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = api_for(researcher)
    url = f"/api/websites/{site.pk}/seed-tasks/"
    response = client.post(url, {"tasks": ["Find a bakery in Paris", SEEDS[0]]}, format="json")
    assert response.status_code == 201
    assert response.json() == {"created": 1}
    file = SimpleUploadedFile("seeds.csv", b"task\nFind a bar in Rome\nFind a bakery in Paris\n")
    assert client.post(url, {"file": file}, format="multipart").json() == {"created": 1}
    assert len(client.get(url).json()) == len(SEEDS) + 2


@pytest.mark.parametrize(
    ("tasks", "field"), [([], "tasks"), (["ok", " "], "tasks[1]"), (["x" * 501], "tasks[0]"), ("one", "tasks")]
)
def test_bad_seed_tasks_are_a_400_naming_the_item(api_for, site, researcher, tasks, field):
    response = api_for(researcher).post(f"/api/websites/{site.pk}/seed-tasks/", {"tasks": tasks}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field


def test_annotators_read_seed_tasks_but_do_not_add_them(api_for, site, owner):
    url = f"/api/websites/{site.pk}/seed-tasks/"
    assert api_for(owner).post(url, {"tasks": ["New one"]}, format="json").status_code == 403
    assert api_for(owner).get(url).status_code == 200


class StandInModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint on loopback that answers a fenced JSON list of tasks."""

    requests: list = []

    def do_POST(self):  # noqa: N802 - the http.server interface
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandInModel.requests.append((self.path, self.headers.get("Authorization"), body))
        count = int(body["messages"][0]["content"].split()[1])
        tasks = [f"Generated task number {i} on the site" for i in range(count)]
        content = "```json\n" + json.dumps(tasks) + "\n```"
        answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in_model(settings):
    server = HTTPServer(("127.0.0.1", 0), StandInModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    StandInModel.requests = []
    settings.SEED_TASKS_LLM_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.SEED_TASKS_LLM_MODEL, settings.SEED_TASKS_LLM_KEY = "stand-in", "secret-key"
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_seed_tasks_are_generated_through_an_openai_compatible_endpoint(site, stand_in_model):
    created = mind2web.do_generate_seed_tasks(site)
    assert len(created) == 50
    assert {seed.source for seed in created} == {SeedSource.GENERATED}
    path, authorization, body = StandInModel.requests[0]
    assert path == "/v1/chat/completions"
    assert authorization == "Bearer secret-key"
    assert body["model"] == "stand-in"
    assert "exploretock" in body["messages"][0]["content"]


def test_generation_is_off_unless_configured(site, settings):
    settings.SEED_TASKS_LLM_URL = ""
    with pytest.raises(Conflict, match="off"):
        mind2web.do_generate_seed_tasks(site)


def test_an_unreachable_model_is_a_clear_error(site, settings):
    server = HTTPServer(("127.0.0.1", 0), StandInModel)
    port = server.server_port
    server.server_close()  # nothing listens there any more
    settings.SEED_TASKS_LLM_URL = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(mind2web.UpstreamFailed, match="failed"):
        mind2web.do_generate_seed_tasks(site)
    assert site.seed_tasks.count() == len(SEEDS)


def model_answer(request):
    """What an OpenAI-compatible endpoint answers (a list of two tasks), whatever it was asked."""
    content = json.dumps(["Find a table for two tonight", "Book a tasting menu for Friday"])
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
    return 200, {"Content-Type": "application/json"}, body


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_seed_task_generation_never_follows_a_redirect_so_the_key_stays_with_its_host(site, settings, code):
    from django.core.management import CommandError, call_command

    with loopback_server(model_answer) as elsewhere:

        def redirect(request):
            return code, {"Location": f"{elsewhere.url}/v1/chat/completions"}, b""

        with loopback_server(redirect) as endpoint:
            settings.SEED_TASKS_LLM_URL = f"{endpoint.url}/v1"
            settings.SEED_TASKS_LLM_MODEL, settings.SEED_TASKS_LLM_KEY = "stand-in", "secret-key"
            with pytest.raises(CommandError, match=f"redirected to {elsewhere.url}/v1/chat/completions; not followed"):
                call_command("generate_seed_tasks", project="alpha", stdout=None)

            assert [(r.method, r.headers.get("Authorization")) for r in endpoint.requests] == [
                ("POST", "Bearer secret-key")
            ]
        assert elsewhere.requests == []
    assert site.seed_tasks.count() == len(SEEDS)


# --- Proposals ----------------------------------------------------------------------------------------------


def test_a_round_shows_ten_seed_tasks_drawn_with_a_stored_seed(api_for, site, owner):
    response = start_round(api_for(owner), site)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["website"]["name"] == "exploretock"
    assert len(body["seed_draw"]) == 10
    assert {s["text"] for s in body["seed_draw"]} <= set(SEEDS)
    assert body["seed_draw"] == mind2web.draw_seeds(site, body["draw_seed"])
    again = start_round(api_for(owner), site).json()
    assert again["id"] == body["id"]
    assert again["seed_draw"] == body["seed_draw"]
    round_ = ProposalRound.objects.get()
    assert round_.assignment.task.batch.kind == BatchKind.PROPOSAL
    assert round_.assignment.worker == owner


def test_proposals_are_screened_against_seed_tasks(api_for, site, owner):
    near_copy = "Find a table for two at an Italian restaurant in Boston tonight please"
    body = propose(api_for(owner), site, [near_copy, "Track the status of an order I placed last week"])
    flagged, fresh = body["proposals"]
    assert flagged["too_similar"]
    assert flagged["similar_to"][0]["text"] == SEEDS[0]
    assert flagged["similar_to"][0]["source"] == "seed"
    assert flagged["similar_to"][0]["score"] >= 85
    assert not fresh["too_similar"]
    assert fresh["similar_to"] == []


def test_the_threshold_is_a_project_setting(api_for, alpha, site, owner):
    french = "Find a table for two at a French restaurant in Boston tonight"  # token-set ratio 93.7 with SEEDS[0]
    alpha.proposal_similarity_threshold = 95
    alpha.save()
    assert not propose(api_for(owner), site, [french])["proposals"][0]["too_similar"]
    alpha.proposal_similarity_threshold = 90
    alpha.save()
    assert propose(api_for(make_user("other", alpha, "annotator")), site, [french])["proposals"][0]["too_similar"]


@pytest.mark.parametrize(
    ("tasks", "field"),
    [
        ([f"Task {i}" for i in range(6)], "tasks"),
        ([], "tasks"),
        (["Fine task", ""], "tasks[1]"),
        (["Fine task", "x" * 501], "tasks[1]"),
        (["Fine", 7], "tasks[1]"),
        ("one task", "tasks"),
    ],
)
def test_more_than_five_empty_or_over_long_proposals_are_a_400_naming_the_field(api_for, site, owner, tasks, field):
    client = api_for(owner)
    round_id = start_round(client, site).json()["id"]
    response = client.post(f"/api/proposal-rounds/{round_id}/submit/", {"tasks": tasks}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert not site.proposed_tasks.exists()
    assert ProposalRound.objects.get().assignment.status == AssignmentStatus.ACTIVE


def test_a_round_is_submitted_once_and_only_by_its_proposer(api_for, site, owner, teammate):
    client = api_for(owner)
    round_id = start_round(client, site).json()["id"]
    url = f"/api/proposal-rounds/{round_id}/submit/"
    assert api_for(teammate).post(url, {"tasks": ["Mine now"]}, format="json").status_code == 404
    assert client.post(url, {"tasks": ["Track my order"]}, format="json").status_code == 201
    assert client.post(url, {"tasks": ["Track my order again"]}, format="json").status_code == 409
    assert site.proposed_tasks.count() == 1


def test_a_website_at_target_is_no_longer_offered(api_for, alpha, owner, teammate, reviewer):
    full = website(alpha, "carmax", target=1)
    open_site = website(alpha, "united", target=5)
    body = propose(api_for(teammate), full, ["Find a used SUV under 20000 dollars near Denver"])
    offered = lambda: [w["name"] for w in api_for(owner).get("/api/websites/offered/?project=alpha").json()]  # noqa: E731
    assert offered() == ["carmax", "united"]
    assert review(api_for(reviewer), body["proposals"][0]["id"], "accept").status_code == 200
    assert offered() == ["united"]
    response = start_round(api_for(owner), full)
    assert response.status_code == 409
    assert "target" in response.json()["detail"]
    assert start_round(api_for(owner), open_site).status_code == 201


def test_a_website_you_proposed_for_is_not_offered_again(api_for, site, owner):
    propose(api_for(owner), site, ["Track my order"])
    assert api_for(owner).get("/api/websites/offered/?project=alpha").json() == []
    assert start_round(api_for(owner), site).status_code == 409


def test_only_annotators_and_admins_propose(api_for, site, reviewer, researcher, outsider):
    assert start_round(api_for(reviewer), site).status_code == 403
    assert start_round(api_for(researcher), site).status_code == 403
    assert start_round(api_for(outsider), site).status_code == 404
    assert api_for(outsider).get("/api/websites/offered/?project=alpha").status_code == 404


# --- Review -------------------------------------------------------------------------------------------------


def test_an_accepted_proposal_becomes_a_demonstration_task_of_its_proposer(api_for, site, owner, reviewer):
    body = propose(api_for(owner), site, ["Track my order", "Find the gift card balance page"])
    first, second = (p["id"] for p in body["proposals"])
    accepted = review(api_for(reviewer), first, "accept", "Track the order I placed yesterday")
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["status"] == "accepted"
    assert accepted.json()["final_text"].startswith("Track the order")
    assert review(api_for(reviewer), second, "reject").json()["status"] == "rejected"
    assert review(api_for(reviewer), first, "reject").status_code == 409
    tasks = api_for(owner).get("/api/demonstration-tasks/").json()
    assert [(t["task"], t["website"], t["domain"], t["subdomain"]) for t in tasks] == [
        ("Track the order I placed yesterday", "exploretock", "Travel", "Restaurant")
    ]


def test_every_accepted_proposal_becomes_a_demonstration_task_of_its_own(api_for, site, owner, reviewer):
    """The second and third accepts of a project each make the next task (the first one's index is 0)."""
    body = propose(api_for(owner), site, ["Track my order", "Find the gift card balance page", "Book a table"])
    for proposal in body["proposals"]:
        accepted = review(api_for(reviewer), proposal["id"], "accept")
        assert accepted.status_code == 200, accepted.content
    tasks = api_for(owner).get("/api/demonstration-tasks/").json()
    assert [t["task"] for t in tasks] == ["Track my order", "Find the gift card balance page", "Book a table"]
    assert sorted(Task.objects.filter(batch__kind=BatchKind.DEMONSTRATION).values_list("index", flat=True)) == [0, 1, 2]


@pytest.mark.django_db(transaction=True)
def test_reviewers_accepting_at_once_each_get_a_task(alpha):
    """Accepts at the same moment by different reviewers: one task each with its own index, never a 500."""
    proposers = [make_user(f"p{i}", alpha, Role.ANNOTATOR) for i in range(4)]
    reviewers = [make_user(f"r{i}", alpha, Role.REVIEWER) for i in range(4)]
    for turn in range(2):  # the first time also creates the demonstration batch, at once
        site = website(alpha, f"site-{turn}")
        proposals = [
            mind2web.do_submit_round(who, mind2web.do_start_round(who, site).pk, [f"Task {turn} of {who}"])[0]
            for who in proposers
        ]
        answers = run_at_once(
            [
                lambda who=who, proposal=proposal: review(token_client(who), proposal.pk, "accept")
                for who, proposal in zip(reviewers, proposals, strict=True)
            ]
        )
        assert [answer.status_code for answer in answers] == [200] * 4, [answer.content for answer in answers]
    indexes = Task.objects.filter(batch__kind=BatchKind.DEMONSTRATION).values_list("index", flat=True)
    assert sorted(indexes) == list(range(8))


def test_accepted_tasks_join_the_screening(api_for, alpha, owner, teammate, reviewer):
    site = website(alpha, "carmax", seeds=[])
    body = propose(api_for(owner), site, ["Find a used SUV under 20000 dollars near Denver"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept")
    again = propose(api_for(teammate), site, ["find a used suv under 20000 dollars near denver, colorado"])
    assert again["proposals"][0]["similar_to"][0]["source"] == "accepted"


def test_the_pool_setting_leaves_accepted_tasks_to_any_annotator(api_for, alpha, site, owner, teammate, reviewer):
    alpha.demonstrations_to_pool = True
    alpha.save()
    body = propose(api_for(owner), site, ["Track my order"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept")
    assert api_for(owner).get("/api/demonstration-tasks/").json() == []
    taken = api_for(teammate).post("/api/demonstration-tasks/take/", {"project": "alpha"}, format="json")
    assert taken.status_code == 201
    assert taken.json()["task"] == "Track my order"
    assert api_for(owner).post("/api/demonstration-tasks/take/", {"project": "alpha"}, format="json").status_code == 409


def test_without_the_pool_an_expired_demonstration_task_goes_back_to_its_proposer_only(
    api_for, alpha, site, owner, teammate, reviewer
):
    """A project that keeps demonstrations off the pool: the proposer's task, once their assignment expired, is not
    handed to another annotator through ``take``; the proposer takes it back."""
    body = propose(api_for(owner), site, ["Track my order"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept")
    Assignment.objects.filter(worker=owner).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert forms.do_expire_due() == 1  # beat's sweep frees the task's slot
    assert api_for(owner).get("/api/demonstration-tasks/").json() == []
    taken = api_for(teammate).post("/api/demonstration-tasks/take/", {"project": "alpha"}, format="json")
    assert taken.status_code == 409, taken.content
    assert not Assignment.objects.filter(worker=teammate).exists()
    again = api_for(owner).post("/api/demonstration-tasks/take/", {"project": "alpha"}, format="json")
    assert again.status_code == 201, again.content
    assert again.json()["task"] == "Track my order"


def test_reviewing_needs_the_reviewer_role_and_someone_else(api_for, alpha, site, owner, teammate, outsider):
    admin = make_user("boss", alpha, "admin")
    proposal = propose(api_for(admin), site, ["Track my order"])["proposals"][0]["id"]
    assert review(api_for(teammate), proposal, "accept").status_code == 403  # an annotator of the project
    assert review(api_for(outsider), proposal, "accept").status_code == 404
    assert review(api_for(outsider), proposal, "maybe").status_code == 404  # not theirs, whatever the decision
    assert review(api_for(admin), proposal, "accept").status_code == 403  # their own
    assert review(api_for(make_user("judge", alpha, "reviewer")), proposal, "maybe").status_code == 400


def test_the_review_queue_lists_pending_proposals_with_their_screening(api_for, site, owner, reviewer, alpha):
    propose(api_for(owner), site, [SEEDS[1] + " now", "Track my order"])
    rows = api_for(reviewer).get("/api/proposals/?status=pending&website__project__name=alpha").json()["results"]
    assert [r["too_similar"] for r in rows] == [True, False]
    assert [p.text for p in mind2web.screening_queue(make_user("r2", alpha, "reviewer"), alpha)] == [
        SEEDS[1] + " now",
        "Track my order",
    ]


# --- Demonstrating ------------------------------------------------------------------------------------------


@pytest.fixture
def assigned(api_for, site, owner, reviewer):
    body = propose(api_for(owner), site, ["Track my order"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept", "Track the order I placed yesterday")
    return api_for(owner).get("/api/demonstration-tasks/").json()[0]


def test_starting_a_demonstration_task_fills_and_links_the_recording(api_for, owner, assigned):
    url = f"/api/demonstration-tasks/{assigned['id']}/start/"
    response = api_for(owner).post(url, {"client_id": "rec-m2w-1", "recorder_version": "2.0"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["mode"] == DemoMode.TASK
    assert body["task_description"] == "Track the order I placed yesterday"
    assert (body["websites"], body["category"], body["subcategory"]) == (
        ["www.exploretock.com"],
        "Travel",
        "Restaurant",
    )
    assert body["assignment"] == assigned["id"]
    again = api_for(owner).post(url, {"client_id": "rec-m2w-1"}, format="json")
    assert again.status_code == 200
    assert again.json()["name"] == body["name"]


def test_finishing_the_recording_completes_the_task(api_for, owner, assigned):
    client = api_for(owner)
    demo = client.post(f"/api/demonstration-tasks/{assigned['id']}/start/", {"client_id": "r1"}, format="json").json()
    assert client.post(f"/api/recordings/{demo['name']}/finish/", {}, format="json").status_code == 200
    assert client.get("/api/demonstration-tasks/").json() == []
    assert Demonstration.objects.get(name=demo["name"]).assignment.status == AssignmentStatus.SUBMITTED


def test_the_annotator_confirms_an_edited_description_when_finishing(api_for, owner, assigned):
    client = api_for(owner)
    demo = client.post(f"/api/demonstration-tasks/{assigned['id']}/start/", {"client_id": "r2"}, format="json").json()
    url = f"/api/recordings/{demo['name']}/finish/"
    assert client.post(url, {"task_description": "x" * 2001}, format="json").status_code == 400
    response = client.post(url, {"task_description": " Track yesterday's order of shoes "}, format="json")
    assert response.json()["task_description"] == "Track yesterday's order of shoes"


def test_nobody_else_starts_your_demonstration_task(api_for, teammate, outsider, assigned):
    """Someone else's task is not found, whatever the body (an empty one is not a 400 naming a field first)."""
    for user in (teammate, outsider):
        url = f"/api/demonstration-tasks/{assigned['id']}/start/"
        assert api_for(user).post(url, {"client_id": "x"}, format="json").status_code == 404
        assert api_for(user).post(url, {}, format="json").status_code == 404
    assert api_for(teammate).get("/api/demonstration-tasks/").json() == []


def test_the_start_body_is_checked(api_for, owner, assigned):
    url = f"/api/demonstration-tasks/{assigned['id']}/start/"
    response = api_for(owner).post(url, {"client_id": "x" * 65}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "client_id"


def test_proposal_and_demonstration_batches_stay_off_the_form_work_pages(client, owner, assigned):
    client.force_login(owner)
    page = client.get("/work/").content.decode()
    assert "mind2web-demonstrations" not in page
    assert "mind2web-proposals" not in page


def test_mind2web_batches_cannot_be_worked_through_the_form_pages_or_the_work_api(
    client, api_for, alpha, owner, teammate, reviewer, researcher
):
    """The form pages and the work API serve form batches only: a proposal round cannot be accepted there on a
    website at its target nor submitted without proposals, and a demonstration task cannot be returned to the pool
    (the project keeps demonstrations off it), taken by someone else, or submitted without a recording. Mind2Web's
    own endpoints keep working."""
    full = website(alpha, "carmax", target=1)
    body = propose(api_for(teammate), full, ["Find a used SUV under 20000 dollars near Denver"])
    assert review(api_for(reviewer), body["proposals"][0]["id"], "accept").status_code == 200
    demo_task = api_for(teammate).get("/api/demonstration-tasks/").json()[0]
    demo_assignment = Assignment.objects.get(pk=demo_task["id"])
    proposals_batch = Batch.objects.get(project=alpha, kind=BatchKind.PROPOSAL)
    demos_batch = Batch.objects.get(project=alpha, kind=BatchKind.DEMONSTRATION)
    round_task = proposals_batch.tasks.get()
    held = Assignment.objects.count()

    client.force_login(owner)  # an annotator: the workers of every batch of the project
    for batch in (proposals_batch, demos_batch):
        assert client.post(f"/work/batches/{batch.pk}/accept/").status_code == 404
        assert client.get(f"/work/batches/{batch.pk}/preview/").status_code == 404
    for task in (round_task, demo_assignment.task):
        assert client.get(f"/work/tasks/{task.pk}/preview/").status_code == 404
        assert client.post(f"/work/tasks/{task.pk}/accept/").status_code == 404
        assert anonymous_get(forms.preview_url(task)).status_code == 404
    assert Assignment.objects.count() == held, "nothing was accepted through the form pages"

    client.force_login(teammate)  # the demonstration's assignee
    for path in ("", "state"):
        assert client.get(f"/work/assignments/{demo_assignment.pk}/{path}").status_code == 404
    for path in ("return", "skip"):
        assert client.post(f"/work/assignments/{demo_assignment.pk}/{path}").status_code == 404
    assert Client().post(forms.work_url(demo_assignment), {"recording": ""}).status_code == 404
    demo_assignment.refresh_from_db()
    assert demo_assignment.status == AssignmentStatus.ACTIVE
    assert api_for(teammate).get("/api/demonstration-tasks/").json()[0]["id"] == demo_assignment.pk

    for user in (researcher, reviewer, owner):
        client.force_login(user)
        for batch in (proposals_batch, demos_batch):
            assert client.get(f"/work/batches/{batch.pk}/").status_code == 404
            assert client.get(f"/work/batches/{batch.pk}/results.csv").status_code == 404
        api = api_for(user)
        assert api.get("/api/batches/").json()["results"] == []
        assert api.get(f"/api/batches/?kind={BatchKind.PROPOSAL}").json()["results"] == []
        for batch in (proposals_batch, demos_batch):
            for path in ("", "results/", "stats/", "tasks/"):
                assert api.get(f"/api/batches/{batch.pk}/{path}").status_code == 404
        assert api.get("/api/assignments/").json()["count"] == 0
    changed = api_for(researcher).patch(f"/api/batches/{demos_batch.pk}/", {"active": False}, format="json")
    assert changed.status_code == 404
    assert start_round(api_for(owner), full).status_code == 409, "the website is at its target"


def test_verification_counts_need_a_reviewing_role(api_for, owner, reviewer, alpha):
    assert api_for(reviewer).get("/api/projects/alpha/verification/").json() == {
        "tasks": 0,
        "discarded": 0,
        "refined": 0,
        "with_steps_discarded": 0,
    }
    assert api_for(owner).get("/api/projects/alpha/verification/").status_code == 403


def test_proposal_statuses_are_counted_per_website(api_for, site, owner, reviewer):
    body = propose(api_for(owner), site, ["A", "B"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept")
    assert site.proposed_tasks.filter(status=ProposalStatus.ACCEPTED).count() == 1
    assert api_for(owner).get(f"/api/websites/{site.pk}/").json()["accepted"] == 1


def test_the_command_generates_seed_tasks_for_the_project_websites(site, stand_in_model):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("generate_seed_tasks", "--project", "alpha", "--count", "7", stdout=out)
    assert out.getvalue().strip() == "exploretock: 7 new seed tasks"
    assert site.seed_tasks.filter(source=SeedSource.GENERATED).count() == 7
