"""Pages fit the role: the review list offers assign and return only to reviewers and admins, "Export selection"
only to researchers and admins, and an annotator no bulk action (nor selection boxes), nor "Review next"; the header
links each role only to the pages it can use (Review not for annotators, Mind2Web only where a project collects or
may start collecting, agent runs for researchers and admins, People for site admins) and each link opens; reviewers
find the batches and agreement they read on the work page; the admin is the app's 403 page for everyone signed in
who is not staff; an empty review list says what comes first."""

import lxml.html
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Membership, Role
from tests.support.actors import make_user, start_demo
from tests.support.forms_data import make_batch
from tests.support.mind2web_data import website

pytestmark = pytest.mark.django_db


def page(user, url) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_review_lists_bulk_actions_fit_each_role(alpha, owner, teammate, reviewer, researcher, boss):
    start_demo(owner, alpha, instructor=teammate, status="recorded")
    seen = {
        user.username: {
            control
            for control in ("btn-bulk-assign", "btn-bulk-return", "btn-bulk-export", "select-all", 'class="pick"')
            if control in page(user, "/review/")
        }
        for user in (owner, reviewer, researcher, boss)
    }
    assert seen["owner"] == set()
    assert seen["reviewer"] == {"btn-bulk-assign", "btn-bulk-return", "select-all", 'class="pick"'}
    assert seen["researcher"] == {"btn-bulk-export", "select-all", 'class="pick"'}
    assert seen["boss"] == {"btn-bulk-assign", "btn-bulk-return", "btn-bulk-export", "select-all", 'class="pick"'}


def test_a_reviewer_who_researches_elsewhere_gets_export_there(alpha, beta, reviewer):
    Membership.objects.create(project=beta, user=reviewer, role=Role.RESEARCHER)
    assert "btn-bulk-export" in page(reviewer, "/review/")


def test_the_header_links_fit_the_role(owner, reviewer, researcher, boss):
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    agents = {
        user.username: 'href="/agents/runs/"' in page(user, "/") for user in (owner, reviewer, researcher, boss, root)
    }
    assert agents == {"owner": False, "reviewer": False, "researcher": True, "boss": True, "root": True}
    people = {user.username: 'href="/people/"' in page(user, "/") for user in (owner, boss, root)}
    assert people == {"owner": False, "boss": False, "root": True}
    assert 'href="/account/"' in page(owner, "/")


def test_an_empty_review_list_says_what_comes_first(owner):
    assert "Annotators record them with the recorder extension" in page(owner, "/review/")


def test_the_home_page_without_a_project_says_what_to_do_first(db):
    newcomer = make_user("newcomer")
    assert "Ask a project admin for an invitation link" in page(newcomer, "/")
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    home = page(root, "/")
    assert "Start with a" in home
    assert 'href="/projects/"' in home


# --- The project pages (statistics, activity, quality, splits, exports, settings, members), agents and Mind2Web, as
# each role, two people per role: what a role cannot use is not shown; pages it cannot open are not linked. ---------

ROLE_OF = {"annotator": Role.ANNOTATOR, "reviewer": Role.REVIEWER, "researcher": Role.RESEARCHER, "admin": Role.ADMIN}


@pytest.fixture
def team(alpha):
    """Two people per role in alpha: ``{role: [user, user]}``."""
    return {role: [make_user(f"{role}{n}", alpha, value) for n in (1, 2)] for role, value in ROLE_OF.items()}


def status(user, url) -> int:
    client = Client()
    client.force_login(user)
    return client.get(url).status_code


def shown(team, url, controls) -> dict:
    """``{role: the controls found in the page}``, the same for both people of a role."""
    found = {}
    for role, people in team.items():
        seen = [{control for control in controls if control in page(user, url)} for user in people]
        assert seen[0] == seen[1], (role, url)
        found[role] = seen[0]
    return found


TABS = {
    "settings": 'href="/projects/alpha/settings/"',
    "members": 'href="/projects/alpha/members/"',
    "stats": 'href="/projects/alpha/stats/"',
    "activity": 'href="/projects/alpha/activity/"',
    "quality": 'href="/projects/alpha/quality/records/"',
    "splits": 'href="/projects/alpha/splits/"',
    "exports": 'href="/projects/alpha/exports/"',
    "evaluations": 'href="/projects/alpha/evaluations/"',
}
EVERYONE = {"stats", "activity", "quality", "splits"}


def test_the_project_tabs_link_only_pages_the_role_may_open(team):
    tabs = shown(team, "/projects/alpha/splits/", TABS.values())
    names = {role: {name for name, href in TABS.items() if href in found} for role, found in tabs.items()}
    assert names == {
        "annotator": EVERYONE,
        "reviewer": EVERYONE,
        "researcher": EVERYONE | {"exports", "evaluations"},
        "admin": EVERYONE | {"exports", "evaluations", "settings", "members"},
    }
    for role, people in team.items():  # what is linked opens; what is not is the 403 page
        for user in people:
            for name, href in TABS.items():
                url = href.removeprefix('href="').removesuffix('"')
                assert status(user, url) == (200 if name in names[role] else 403), (user.username, url)


def test_the_projects_list_links_only_pages_the_role_may_open(team):
    links = shown(team, "/projects/", [TABS[name] for name in ("settings", "members", "exports", "evaluations")])
    assert links == {
        "annotator": set(),
        "reviewer": set(),
        "researcher": {TABS["exports"], TABS["evaluations"]},
        "admin": {TABS["settings"], TABS["members"], TABS["exports"], TABS["evaluations"]},
    }


def test_the_split_configuration_form_and_the_pay_rates_link_are_for_admins(team):
    forms = shown(team, "/projects/alpha/splits/", ['id="split-config-form"', "Only project admins change"])
    assert forms == {
        "annotator": {"Only project admins change"},
        "reviewer": {"Only project admins change"},
        "researcher": {"Only project admins change"},
        "admin": {'id="split-config-form"'},
    }
    rates = shown(team, "/projects/alpha/activity/", ['id="edit-rates"', 'href="/projects/alpha/pay/rates/"'])
    assert rates == {"annotator": set(), "reviewer": set(), "researcher": set(), "admin": set(rates["admin"])}
    assert rates["admin"] == {'id="edit-rates"', 'href="/projects/alpha/pay/rates/"'}
    assert status(team["researcher"][0], "/projects/alpha/pay/rates/") == 403


def test_empty_export_and_evaluation_lists_say_what_to_do_first(team):
    for user in team["researcher"] + team["admin"]:
        assert "No exports yet: choose a format and a split above" in page(user, "/projects/alpha/exports/")
        assert "No evaluations yet: upload a model's predictions file" in page(user, "/projects/alpha/evaluations/")


def test_the_quality_pages_link_the_reviewers_agreement_to_all_but_annotators(team):
    agreement = shown(team, "/projects/alpha/quality/records/", ['href="/projects/alpha/quality/reviewers/"'])
    assert {role for role, found in agreement.items() if found} == {"reviewer", "researcher", "admin"}
    for role, people in team.items():
        for user in people:
            expected = 403 if role == "annotator" else 200
            assert status(user, "/projects/alpha/quality/reviewers/") == expected, user.username


def test_the_agent_runs_page_tells_each_role_what_comes_first(team):
    start = shown(
        team, "/agents/runs/", ['id="runs-start"', "No agent runs yet: start one", "Researchers and admins run"]
    )
    assert start == {
        "annotator": {"Researchers and admins run"},
        "reviewer": {"Researchers and admins run"},
        "researcher": {'id="runs-start"', "No agent runs yet: start one"},
        "admin": {'id="runs-start"', "No agent runs yet: start one"},
    }


def test_the_mind2web_project_page_shows_each_role_its_own_controls(team):
    controls = {
        "add": 'id="website-form"',
        "import": 'id="website-import-form"',
        "propose": 'id="propose"',
        "review": 'href="/mind2web/projects/alpha/screening/"',
        "counts": 'id="verification-counts"',
        "empty-manage": "No website yet: add one below",
        "empty-ask": "No website yet: researchers and admins add",
    }
    found = shown(team, "/mind2web/projects/alpha/", controls.values())
    names = {role: {name for name, marker in controls.items() if marker in seen} for role, seen in found.items()}
    assert names == {
        "annotator": {"propose", "empty-ask"},
        "reviewer": {"review", "counts", "empty-ask"},
        "researcher": {"add", "import", "counts", "empty-manage"},
        "admin": {"add", "import", "propose", "review", "counts", "empty-manage"},
    }
    for role, people in team.items():  # the review queue opens for the roles it is linked for
        for user in people:
            queue = Client()
            queue.force_login(user)
            response = queue.get("/mind2web/projects/alpha/screening/", follow=True)
            reached = response.redirect_chain == [] and response.status_code == 200
            assert reached == ("review" in names[role]), user.username


def test_cancel_and_resume_are_shown_to_the_starter_and_the_admins_only(team, alpha):
    from annotation.models import AgentRun, ExportJob, JobStatus

    starter, colleague = team["researcher"]
    running = AgentRun.objects.create(
        project=alpha, owner=starter, split="all", solver="oracle", status=JobStatus.RUNNING
    )
    stopped = AgentRun.objects.create(
        project=alpha, owner=starter, split="all", solver="oracle", status=JobStatus.FAILED
    )
    export = ExportJob.objects.create(project=alpha, owner=starter, format="weblinx", status=JobStatus.QUEUED)
    may = {starter.username} | {user.username for user in team["admin"]}
    for user in team["researcher"] + team["admin"]:
        assert ('id="cancel-run"' in page(user, f"/agents/runs/{running.pk}/")) == (user.username in may)
        assert ('id="resume-run"' in page(user, f"/agents/runs/{stopped.pk}/")) == (user.username in may)
        assert ('id="cancel-job"' in page(user, f"/projects/alpha/exports/{export.pk}/")) == (user.username in may)
        assert f'href="/projects/alpha/exports/{export.pk}/"' in page(user, "/projects/alpha/exports/")
    for user in team["annotator"] + team["reviewer"]:  # not listed for them, and not theirs to open
        assert f'href="/agents/runs/{running.pk}/"' not in page(user, "/agents/runs/")
        assert status(user, f"/agents/runs/{running.pk}/") == 403  # their project: refused, as the API
        assert status(user, f"/projects/alpha/exports/{export.pk}/") == 403


def test_empty_activity_and_invitation_lists_say_what_comes_first(team):
    for user in team["admin"]:
        assert "No open invitation links: make one above" in page(user, "/projects/alpha/members/")
        assert "No recorded, reviewed or form-task work yet: annotators record" in page(
            user, "/projects/alpha/activity/"
        )
    for user in team["annotator"] + team["reviewer"] + team["researcher"]:
        assert "No work of yours yet: it shows here once you" in page(user, "/projects/alpha/activity/")


# --- The header, the work page and the admin, as each role: only what the role can use, and all of it opens ---------


def header_links(user) -> dict:
    """``{label: href}`` of the header's navigation on the home page."""
    tree = lxml.html.document_fromstring(page(user, "/"))
    return {link.text_content().strip(): link.get("href") for link in tree.xpath("//header[@class='top']/nav/a")}


EVERYONE_SIGNED_IN = {"Work", "Projects", "API token", "API docs"}


def test_the_header_shows_each_role_only_the_pages_it_can_use_and_each_opens(team, alpha, beta):
    collector = make_user("collector", beta, Role.ANNOTATOR)  # an annotator of a project that collects Mind2Web tasks
    website(beta)
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    expected = {
        "annotator": EVERYONE_SIGNED_IN,
        "reviewer": EVERYONE_SIGNED_IN | {"Review"},
        "researcher": EVERYONE_SIGNED_IN | {"Review", "Agent runs", "Mind2Web"},
        "admin": EVERYONE_SIGNED_IN | {"Review", "Agent runs", "Mind2Web"},
    }
    people = [(role, user) for role, users in team.items() for user in users]
    people += [("collector", collector), ("root", root)]
    expected["collector"] = EVERYONE_SIGNED_IN | {"Mind2Web"}
    expected["root"] = EVERYONE_SIGNED_IN | {"Review", "Agent runs", "Mind2Web", "People", "Admin"}
    for role, user in people:
        links = header_links(user)
        assert set(links) - {user.username} == expected[role], user.username
        for label, href in links.items():
            assert status(user, href) in (200, 302), (user.username, label, href)
    assert "Mind2Web" not in header_links(team["reviewer"][0])  # alpha has no website: nothing to review there
    website(alpha, "alphasite")
    assert "Mind2Web" in header_links(team["reviewer"][0])  # now it has proposals to review


def test_the_mind2web_index_lists_the_projects_that_collect_or_may_start_collecting(team, alpha, beta):
    Membership.objects.create(project=beta, user=team["annotator"][0], role=Role.ANNOTATOR)
    website(beta)
    for user in team["annotator"]:
        listed = page(user, "/mind2web/")
        assert ('href="/mind2web/projects/beta/"' in listed) == (user == team["annotator"][0])
        assert 'href="/mind2web/projects/alpha/"' not in listed
    assert "None of your projects collects Mind2Web tasks yet" in page(team["annotator"][1], "/mind2web/")
    for user in team["researcher"] + team["admin"]:  # they may add websites to alpha
        assert 'href="/mind2web/projects/alpha/"' in page(user, "/mind2web/")


def test_review_next_is_offered_only_to_those_who_curate(team):
    offered = shown(team, "/review/", ['id="btn-review-next"'])
    assert {role for role, found in offered.items() if found} == {"reviewer", "admin"}


def test_reviewers_find_the_batches_and_agreement_they_read_on_the_work_page(team, alpha):
    batch = make_batch(alpha, name="sentiment")
    links = [f'href="/work/batches/{batch.pk}/"', f'href="/work/batches/{batch.pk}/agreement/"']
    found = shown(team, "/work/", [*links, 'id="readable-batches"', 'id="managed-batches"'])
    assert found == {
        "annotator": set(),
        "reviewer": {*links, 'id="readable-batches"'},
        "researcher": {links[0], 'id="managed-batches"'},
        "admin": {links[0], 'id="managed-batches"'},
    }
    preview = f"/work/tasks/{batch.tasks.get(index=0).pk}/preview/"
    for user in team["reviewer"]:  # both open, and so does every link of the batch page, its first task's preview too
        assert status(user, f"/work/batches/{batch.pk}/agreement/") == 200
        batch_page = lxml.html.document_fromstring(page(user, f"/work/batches/{batch.pk}/"))
        hrefs = {link.get("href") for link in batch_page.xpath("//main//a[@href]")}
        assert f"/work/batches/{batch.pk}/agreement/" in hrefs
        assert preview in hrefs
        assert [href for href in hrefs if status(user, href) not in (200, 302)] == []
    assert f'href="{preview}"' in page(team["researcher"][0], f"/work/batches/{batch.pk}/")
    for user in team["annotator"]:  # not linked, and not theirs to read
        assert status(user, f"/work/batches/{batch.pk}/agreement/") == 403


def test_the_admin_is_the_apps_403_page_for_everyone_signed_in_who_is_not_staff(team):
    for user in [user for users in team.values() for user in users]:
        client = Client()
        client.force_login(user)
        for path in ("/admin/", "/admin/login/", "/admin/annotation/project/", "/admin/auth/user/1/change/"):
            answer = client.get(path)
            assert answer.status_code == 403, (user.username, path)
            assert 'data-status="403"' in answer.content.decode()
            assert "for staff accounts" in answer.content.decode()
    anonymous = Client().get("/admin/")
    assert (anonymous.status_code, anonymous["Location"]) == (302, "/admin/login/?next=/admin/")
    assert Client().get("/admin/login/").status_code == 200  # the sign-in form, for anyone not signed in
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    assert status(root, "/admin/") == 200
