"""The Mind2Web pages: a project's websites and counts, adding and importing websites and seed tasks, proposing
(the seeded draw shown, the screening result after submission), the reviewers' queue, and who sees what."""

from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import ProposalRound, ProposalStatus, ProposedTask, Website
from tests.support.mind2web_data import SEEDS, propose, website


def page(client, user, url):
    client.force_login(user)
    response = client.get(url)
    return response.status_code, response.content.decode()


def test_the_project_page_shows_websites_to_members_only(client, site, owner, outsider):
    status, html = page(client, owner, "/mind2web/projects/alpha/")
    assert status == 200
    assert "exploretock" in html
    assert 'id="offered-websites"' in html
    assert 'id="website-form"' not in html  # annotators do not add websites
    assert 'id="verification-counts"' not in html
    assert page(client, outsider, "/mind2web/projects/alpha/")[0] == 404


def test_researchers_see_the_forms_and_the_counts(client, site, researcher):
    status, html = page(client, researcher, "/mind2web/projects/alpha/")
    assert 'id="website-form"' in html
    assert 'id="count-discarded"' in html
    assert 'id="offered-websites"' not in html


def test_a_researcher_adds_and_imports_websites_and_seed_tasks(client, alpha, researcher):
    client.force_login(researcher)
    form = {"name": "carmax", "url": "https://www.carmax.com/", "domain": "Shopping", "target_tasks": "5"}
    assert client.post("/mind2web/projects/alpha/websites/add", form).status_code == 302
    assert Website.objects.get(name="carmax").target_tasks == 5
    csv = SimpleUploadedFile("s.csv", b"name,url,domain\nunited,https://www.united.com/,Travel\n")
    client.post("/mind2web/projects/alpha/websites/import", {"file": csv})
    united = Website.objects.get(name="united")
    client.post(f"/mind2web/websites/{united.pk}/seeds", {"tasks": "Find a flight\nCheck a booking\n"})
    assert united.seed_tasks.count() == 2


def test_a_bad_website_form_names_the_field_and_stores_nothing(client, researcher, alpha):
    client.force_login(researcher)
    typed = {
        "name": "x",
        "url": "nope",
        "domain": "D",
        "subdomain": "Cars",
        "description": "Used cars",
        "target_tasks": "7",
    }
    response = client.post("/mind2web/projects/alpha/websites/add", typed)
    assert response.status_code == 400
    html = response.content.decode()
    assert "url: not an http(s) URL" in html
    assert '<span class="error field-error" data-field="url">' in html
    # everything typed is kept
    for name in ("name", "url", "domain", "subdomain", "target_tasks"):
        assert f'name="{name}"' in html
        assert f'value="{typed[name]}"' in html
    assert ">Used cars</textarea>" in html
    assert not Website.objects.exists()
    bad = SimpleUploadedFile("s.csv", b"name,url,domain\nunited,https://www.united.com/,\n")
    response = client.post("/mind2web/projects/alpha/websites/import", {"file": bad})
    assert response.status_code == 400
    assert "rows[1].domain" in response.content.decode()
    assert "Choose the file again" in response.content.decode()


def test_annotators_cannot_add_websites_and_other_projects_are_not_found(client, owner, outsider, alpha, beta):
    """The 403 page for a member whose role does not manage websites, the 404 page for another project's: adding
    and importing alike, and nothing stored."""
    form = {"name": "carmax", "url": "https://www.carmax.com/", "domain": "Shopping"}
    csv = b"name,url,domain\nunited,https://www.united.com/,Travel\n"
    for user, status in ((owner, 403), (outsider, 404)):
        client.force_login(user)
        added = client.post("/mind2web/projects/alpha/websites/add", form)
        imported = client.post("/mind2web/projects/alpha/websites/import", {"file": SimpleUploadedFile("s.csv", csv)})
        assert added.status_code == imported.status_code == status
        assert "cannot manage websites" in added.content.decode() or status == 404
    assert not Website.objects.exists()


def test_proposing_shows_the_stored_draw_then_the_screening(client, site, owner):
    client.force_login(owner)
    response = client.post(f"/mind2web/websites/{site.pk}/propose")
    round_ = ProposalRound.objects.get()
    assert response["Location"] == f"/mind2web/rounds/{round_.pk}/"
    html = client.get(response["Location"]).content.decode()
    assert all(seed["text"] in html for seed in round_.seed_draw)
    assert len(round_.seed_draw) == 10
    near_copy = SEEDS[3] + " today"
    client.post(response["Location"], {"task": [near_copy, "Track my order", "", "", ""]})
    html = client.get(response["Location"]).content.decode()
    assert "too similar to: “" + SEEDS[3] in html
    assert ProposedTask.objects.count() == 2


def test_the_proposal_form_refuses_an_over_long_task(client, site, owner):
    client.force_login(owner)
    location = client.post(f"/mind2web/websites/{site.pk}/propose")["Location"]
    html = client.post(location, {"task": ["x" * 501]}, follow=True).content.decode()
    assert "tasks[0]" in html
    assert not ProposedTask.objects.exists()


def test_nobody_else_opens_your_round(client, site, owner, teammate):
    client.force_login(owner)
    location = client.post(f"/mind2web/websites/{site.pk}/propose")["Location"]
    assert page(client, teammate, location)[0] == 404


def test_the_review_queue_flags_near_copies_and_reviews_from_the_page(client, api_for, site, owner, reviewer):
    propose(api_for(owner), site, [SEEDS[0] + " please", "Track my order"])
    status, html = page(client, reviewer, "/mind2web/projects/alpha/screening/")
    assert status == 200
    assert html.count('class="proposal too-similar"') == 1
    assert "too similar to: “" + SEEDS[0] in html
    assert "mind2web/screening.js" in html
    flagged, fresh = ProposedTask.objects.order_by("pk")
    client.post(f"/mind2web/proposals/{fresh.pk}/screen", {"decision": "accept", "text": "Track yesterday's order"})
    client.post(f"/mind2web/proposals/{flagged.pk}/screen", {"decision": "reject"})
    fresh.refresh_from_db()
    flagged.refresh_from_db()
    assert (fresh.status, fresh.final_text) == (ProposalStatus.ACCEPTED, "Track yesterday's order")
    assert flagged.status == ProposalStatus.REJECTED
    assert 'id="queue-empty"' in client.get("/mind2web/projects/alpha/screening/").content.decode()
    status, html = page(client, owner, "/mind2web/projects/alpha/")
    assert "Track yesterday&#x27;s order" in html


def test_annotators_do_not_review(client, api_for, site, owner, teammate):
    propose(api_for(owner), site, ["Track my order"])
    proposal = ProposedTask.objects.get()
    client.force_login(teammate)
    response = client.get("/mind2web/projects/alpha/screening/", follow=True)
    assert "cannot screen proposals" in response.content.decode()
    client.post(f"/mind2web/proposals/{proposal.pk}/screen", {"decision": "accept"})
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING


def test_the_project_page_makes_the_same_number_of_queries_however_many_websites(client, alpha, researcher):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(researcher)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/mind2web/projects/alpha/").status_code == 200
        return len(captured)

    website(alpha, "one", seeds=SEEDS[:2])
    few = queries()
    for name in ("two", "three", "four"):
        website(alpha, name, seeds=SEEDS[:3])
    assert queries() == few


def test_a_refused_seed_task_form_keeps_the_typed_tasks_and_names_the_field(client, alpha, researcher, site):
    """Seed tasks with one too long: 400, the project page again with the refusal naming the line and every typed
    line still in that website's text area (and only there); nothing stored. Sent again fixed, they are added."""
    other = website(alpha, "carmax", seeds=[])
    before = site.seed_tasks.count()
    typed = "Book a table for two in Rome\n" + "x" * 600 + "\nFind a wine tasting in Napa"
    client.force_login(researcher)
    refused = client.post(f"/mind2web/websites/{site.pk}/seeds", {"tasks": typed})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "tasks[1]: at most 500 characters" in html
    assert html.count("Book a table for two in Rome") == 1
    assert "Find a wine tasting in Napa" in html
    kept = html.split(f'seed-form" data-website="{site.pk}"')[1].split("</form>")[0]
    assert "Book a table for two in Rome" in kept
    assert "x" * 600 in kept
    assert "Book a table" not in html.split(f'seed-form" data-website="{other.pk}"')[1].split("</form>")[0]
    assert site.seed_tasks.count() == before
    assert other.seed_tasks.count() == 0
    fixed = "Book a table for two in Rome\nFind a wine tasting in Napa"
    assert client.post(f"/mind2web/websites/{site.pk}/seeds", {"tasks": fixed}).status_code == 302
    assert site.seed_tasks.count() == before + 2


def test_seed_tasks_from_a_member_who_does_not_manage_websites_get_the_403_page(client, site, owner, reviewer):
    for user in (owner, reviewer):
        client.force_login(user)
        refused = client.post(f"/mind2web/websites/{site.pk}/seeds", {"tasks": "Find a bar"})
        assert refused.status_code == 403
        assert "cannot manage websites" in refused.content.decode()
    assert not site.seed_tasks.filter(text="Find a bar").exists()
