"""Publishing from the web with a checklist, unpublishing, and unblocking, as every role (annotator, reviewer,
researcher, admin, non-member) on three batches of one project: a batch uploaded from the web starts unpublished,
its page says so (never "Workers get new tasks") and lists what to check before publishing, each setting with its
value and where it is set; Publish and Unpublish through the page and the API are the same actions, refused by
role (403) or project (404) with nothing changed, 409 for the state; unpublishing stops handing out work while held
assignments may still be submitted. A blocked worker is unblocked on the review page or through the API with a
reason they read on their work page, the lift kept with who, when and why; the rule applies again after
``gold_min_answers`` more gold answers."""

import lxml.html
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.actions import Forbidden, forms, quality
from annotation.actions.forms import gold
from annotation.models import Assignment, AssignmentStatus, Batch, BatchBlock, Role
from tests.support.actors import make_user, token_client
from tests.support.forms_data import CSV, TEMPLATE, make_batch

GOLD_CSV = "topic,sentence,Answer.polarity\n" + "".join(f"t{i},s{i},{'pos' if i % 2 else 'neg'}\n" for i in range(12))


@pytest.fixture
def people(alpha, beta):
    """Two annotators, a reviewer, a researcher and an admin of alpha; beta's admin (the non-member here)."""
    return {
        "ann": make_user("ann", alpha, Role.ANNOTATOR),
        "abe": make_user("abe", alpha, Role.ANNOTATOR),
        "vera": make_user("vera", alpha, Role.REVIEWER),
        "rex": make_user("rex", alpha, Role.RESEARCHER),
        "ada": make_user("ada", alpha, Role.ADMIN),
        "bea": make_user("bea", beta, Role.ADMIN),
    }


def page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def web_upload(user, name, csv_text=CSV) -> Batch:
    body = {
        "project": "alpha",
        "name": name,
        "template": SimpleUploadedFile("t.html", TEMPLATE.encode()),
        "csv": SimpleUploadedFile(f"{name}.csv", csv_text.encode()),
        "assignments_per_task": 2,
        "allotted_minutes": 45,
        "published": "on",  # an old form's box: ignored, the web starts unpublished
    }
    response = page(user).post("/work/batches/new/", body)
    assert response.status_code == 302, response.content.decode()[:500]
    return Batch.objects.get(name=name)


@pytest.fixture
def three(alpha, people):
    """Three batches of alpha: uploaded on the web page (unpublished), through the API unpublished, and through the
    API with the default (published)."""
    web = web_upload(people["rex"], "web")
    api = token_client(people["rex"])
    files = {"template": SimpleUploadedFile("t.html", TEMPLATE.encode())}
    hidden = api.post(
        "/api/batches/",
        {
            "project": "alpha",
            "name": "hidden",
            "published": "false",
            "csv": SimpleUploadedFile("h.csv", CSV.encode()),
            **files,
        },
        format="multipart",
    )
    assert hidden.status_code == 201
    files = {"template": SimpleUploadedFile("t.html", TEMPLATE.encode())}
    shown = api.post(
        "/api/batches/",
        {"project": "alpha", "name": "shown", "csv": SimpleUploadedFile("s.csv", CSV.encode()), **files},
        format="multipart",
    )
    assert shown.status_code == 201
    return [web, Batch.objects.get(pk=hidden.json()["id"]), Batch.objects.get(pk=shown.json()["id"])]


def document(response):
    return lxml.html.document_fromstring(response.content.decode())


def listed_for(worker, batch) -> bool:
    html = page(worker).get("/work/").content.decode()
    api_ids = [b["id"] for b in token_client(worker).get("/api/batches/").json()["results"]]
    assert (f'data-batch="{batch.pk}"' in html) == (batch.pk in api_ids)
    return batch.pk in api_ids


def test_a_web_upload_starts_unpublished_and_its_page_lists_what_to_check(alpha, people, three):
    web, hidden, shown = three
    assert (web.published, hidden.published, shown.published) == (False, False, True)
    created = page(people["rex"]).get(f"/work/batches/{web.pk}/")
    shown_page = document(created)
    assert shown_page.get_element_by_id("batch-state").text_content() == "unpublished"
    assert "Workers get new tasks" not in created.content.decode()
    assert "Unpublished: no worker sees this batch" in shown_page.get_element_by_id("handing-out").text_content()
    rows = {row.get("data-item"): row for row in shown_page.xpath('//table[@id="checklist"]//tr')}
    assert list(rows) == ["gold", "threshold", "requirements", "assignments", "time", "auto_approval"]
    values = {item: row.xpath('.//td[@class="value"]')[0].text_content().strip() for item, row in rows.items()}
    assert values["gold"] == "0 gold tasks, rate 0%"
    assert values["threshold"] == "never block"
    assert values["requirements"].startswith("none")
    assert values["assignments"] == "2"
    assert values["time"] == "45 min"
    assert values["auto_approval"] == "work not reviewed within 72 h (3 days) is approved"
    links = {item: row.xpath(".//a")[0].get("href") for item, row in rows.items()}
    assert links["gold"] == f"/work/batches/{web.pk}/decisions/#gold-form"
    assert links["time"] == f"/work/batches/{web.pk}/#extend-form"
    for href in set(links.values()):  # every link opens for the batch's manager
        assert page(people["rex"]).get(href.split("#")[0]).status_code == 200
    assert shown_page.get_element_by_id("batch-publish") is not None
    # the checklist follows the settings, and says when one has no effect as it stands
    quality.do_update_quality_settings(web, {"gold_rate": 0.2, "gold_threshold": 0.6})
    english = quality.do_create_qualification(alpha, "english")
    quality.do_update_quality_settings(web, {"requirements": [(english, 0.5)], "auto_approve_seconds": None})
    again = document(page(people["ada"]).get(f"/work/batches/{web.pk}/"))
    values = {
        row.get("data-item"): row.xpath('.//td[@class="value"]')[0].text_content()
        for row in again.xpath('//table[@id="checklist"]//tr')
    }
    assert "no task is marked gold" in values["gold"]
    assert "nobody is blocked" in values["threshold"]
    assert values["requirements"].strip() == "english ≥ 0.5"
    assert values["auto_approval"].strip() == "never"
    # reviewers see the state, not the checklist or the controls
    reviewers = document(page(people["vera"]).get(f"/work/batches/{web.pk}/"))
    assert reviewers.get_element_by_id("batch-state").text_content() == "unpublished"
    assert not reviewers.xpath('//*[@id="checklist" or @id="batch-publish" or @id="manage"]')
    assert "unpublished: no worker sees it" in reviewers.get_element_by_id("workers-empty").text_content()
    # a published batch's page has no checklist, and Unpublish beside Pause
    published = document(page(people["rex"]).get(f"/work/batches/{shown.pk}/"))
    assert not published.xpath('//*[@id="checklist"]')
    assert published.get_element_by_id("batch-unpublish") is not None
    assert "Workers get new tasks" in published.get_element_by_id("handing-out").text_content()


PAGE_REFUSALS = {"ann": 403, "abe": 403, "vera": 403, "bea": 404}


def test_publish_and_unpublish_as_every_role_on_three_batches(alpha, people, three):
    web, hidden, shown = three
    worker = people["ann"]
    for batch in three:
        batch.refresh_from_db()
        was = batch.published
        action = "unpublish" if was else "publish"
        for name, status in PAGE_REFUSALS.items():
            response = page(people[name]).post(f"/work/batches/{batch.pk}/{action}")
            assert response.status_code == status, (batch.name, name)
            api = token_client(people[name]).post(f"/api/batches/{batch.pk}/{action}/")
            # an unpublished batch does not exist for a worker in the API (it is on no list of theirs)
            assert api.status_code == (404 if status == 403 and name != "vera" and not was else status), (batch, name)
            assert set(api.json()) == {"detail", "code", "errors"}
            assert Batch.objects.get(pk=batch.pk).published == was
        assert listed_for(worker, batch) == was
        # the researcher through the page, the admin back through the API, the researcher again in the API
        done = page(people["rex"]).post(f"/work/batches/{batch.pk}/{action}")
        assert done.status_code == 302
        assert Batch.objects.get(pk=batch.pk).published is not was
        assert listed_for(worker, batch) is not was
        twice = token_client(people["ada"]).post(f"/api/batches/{batch.pk}/{action}/")
        assert twice.status_code == 409
        back = "publish" if action == "unpublish" else "unpublish"
        answer = token_client(people["ada"]).post(f"/api/batches/{batch.pk}/{back}/")
        assert answer.status_code == 200
        assert answer.json()["published"] is was
        final = token_client(people["rex"]).post(f"/api/batches/{batch.pk}/{action}/")
        assert final.json()["published"] is not was
    assert [Batch.objects.get(pk=b.pk).published for b in three] == [True, True, False]
    # the admin page path too, and its refusal for the state is the 409 page
    assert page(people["ada"]).post(f"/work/batches/{shown.pk}/unpublish").status_code == 409


def test_unpublishing_stops_new_work_while_held_assignments_may_still_be_submitted(alpha, people, three):
    web, hidden, shown = three
    ann, abe = people["ann"], people["abe"]
    refused = page(ann).post(f"/work/batches/{web.pk}/accept/", follow=True)
    assert refused.redirect_chain == [("/work/", 302)]  # back to the work page with the reason
    assert "is not published; it hands out no work" in refused.content.decode()
    assert token_client(ann).post(f"/api/batches/{web.pk}/accept/").status_code == 409
    assert page(people["rex"]).post(f"/work/batches/{web.pk}/publish").status_code == 302
    held = forms.do_accept_next(ann, Batch.objects.get(pk=web.pk))
    assert page(people["ada"]).post(f"/work/batches/{web.pk}/unpublish").status_code == 302
    assert token_client(abe).post(f"/api/batches/{web.pk}/accept/").status_code in (404, 409)
    assert not listed_for(abe, web)
    submitted = Client().post(forms.work_url(held), {"short": "still mine"})
    assert submitted.status_code == 200
    held.refresh_from_db()
    assert held.status == AssignmentStatus.SUBMITTED
    assert held.answers == {"short": "still mine"}


# --- Unblocking --------------------------------------------------------------------------------------------------


def graded(alpha, name, **settings) -> Batch:
    batch = make_batch(alpha, csv_text=GOLD_CSV, name=name, assignments_per_task=3)
    quality.do_mark_gold(batch, quality.check_gold_request(batch, {"tasks": list(range(12))}))
    values = {"gold_rate": 1.0, "gold_threshold": 0.5, "gold_min_answers": 2, **settings}
    quality.do_update_quality_settings(batch, values)
    return Batch.objects.get(pk=batch.pk)


def wrong(task) -> dict:
    return {"polarity": "pos" if task.index % 2 == 0 else "neg"}


def right(task) -> dict:
    return {"polarity": "neg" if task.index % 2 == 0 else "pos"}


def work_wrongly_until_blocked(worker, batch) -> int:
    done = 0
    while True:
        try:
            assignment = forms.do_accept_next(worker, batch)
        except Forbidden:
            return done
        forms.do_submit(assignment.pk, wrong(assignment.task))
        done += 1


def test_unblock_as_every_role_with_a_reason_the_worker_reads(alpha, people):
    batches = [graded(alpha, name) for name in ("one", "two", "three")]
    ann = people["ann"]
    for batch in batches:
        assert work_wrongly_until_blocked(ann, batch) == 2
    for batch in batches:
        for name, status in PAGE_REFUSALS.items():
            body = {"worker": "ann", "reason": "try again"}
            assert page(people[name]).post(f"/work/batches/{batch.pk}/decisions/unblock", body).status_code == status
            api = token_client(people[name]).post(f"/api/batch-quality/{batch.pk}/unblock/", body, format="json")
            assert api.status_code == status, (name, api.content)
        assert BatchBlock.objects.filter(batch=batch, worker=ann, lifted_at__isnull=True).exists()
    one, two, three = batches
    # a manager must say why, and name a blocked worker
    missing = page(people["rex"]).post(f"/work/batches/{one.pk}/decisions/unblock", {"worker": "ann"}, follow=True)
    assert "reason: say why" in missing.content.decode()
    api = token_client(people["ada"])
    for body, status, field in (
        ({"worker": "ann"}, 400, "reason"),
        ({"worker": "nobody", "reason": "x"}, 400, "worker"),
        ({"reason": "x"}, 400, "worker"),
        ({"worker": "abe", "reason": "x"}, 409, None),
    ):
        response = api.post(f"/api/batch-quality/{two.pk}/unblock/", body, format="json")
        assert response.status_code == status, body
        if field:
            assert response.json()["errors"][0]["field"] == field
    assert BatchBlock.objects.filter(worker=ann, lifted_at__isnull=True).count() == 3
    # the researcher on the review page, the admin through the API
    review = document(page(people["rex"]).get(f"/work/batches/{one.pk}/decisions/"))
    form = review.xpath('//table[@id="blocked-workers"]//tr[@data-worker="ann"]//form')[0]
    assert form.get("action") == f"/work/batches/{one.pk}/decisions/unblock"
    done = page(people["rex"]).post(form.get("action"), {"worker": "ann", "reason": "The gold answers were wrong."})
    assert done.status_code == 302
    answer = api.post(
        f"/api/batch-quality/{two.pk}/unblock/", {"worker": "ann", "reason": "Second chance."}, format="json"
    )
    assert answer.status_code == 200
    assert answer.json()["blocked"] == []
    lifted = answer.json()["unblocked"][0]
    assert (lifted["worker"], lifted["lifted_by"], lifted["lift_reason"]) == ("ann", "ada", "Second chance.")
    assert lifted["lifted_at"] >= lifted["at"]
    assert (
        api.post(f"/api/batch-quality/{two.pk}/unblock/", {"worker": "ann", "reason": "x"}, format="json").status_code
        == 409
    )
    # the record on the review page: who, when, why
    record = document(page(people["ada"]).get(f"/work/batches/{one.pk}/decisions/"))
    row = record.xpath('//table[@id="unblocked-workers"]//tr[@data-worker="ann"]')[0]
    assert "rex" in row.text_content()
    assert row.xpath('.//td[@class="lift-reason"]')[0].text_content() == "The gold answers were wrong."
    # the worker reads it, sees the two batches again, and still not the third
    work = document(page(ann).get("/work/"))
    reasons = {
        li.get("data-unblocked-batch"): li.text_content() for li in work.xpath('//*[@id="unblocked-batches"]/li')
    }
    assert "The gold answers were wrong." in reasons[str(one.pk)]
    assert "Second chance." in reasons[str(two.pk)]
    assert [li.get("data-blocked-batch") for li in work.xpath('//*[@id="blocked-batches"]/li')] == [str(three.pk)]
    assert listed_for(ann, one)
    assert listed_for(ann, two)
    assert not listed_for(ann, three)
    assert forms.do_accept_next(ann, one) is not None


def test_after_an_unblock_the_rule_applies_again_after_min_answers_more_gold_answers(alpha, people):
    batch = graded(alpha, "graded")
    ann = people["ann"]
    work_wrongly_until_blocked(ann, batch)
    worker, reason = quality.check_unblock(batch, "ann", "one more try")
    quality.do_unblock(people["rex"], batch, worker, reason)
    first = forms.do_accept_next(ann, batch)
    forms.do_submit(first.pk, wrong(first.task))  # one gold answer since the lift: not judged yet
    assert gold.block_reason(ann, batch) is None
    second = forms.do_accept_next(ann, batch)
    forms.do_submit(second.pk, wrong(second.task))  # two: still below the threshold, blocked again
    assert gold.block_reason(ann, batch) is not None
    assert BatchBlock.objects.filter(batch=batch, worker=ann).count() == 2  # the lifted one kept as the record
    # another worker unblocked who then does well stays unblocked
    abe = people["abe"]
    work_wrongly_until_blocked(abe, batch)
    quality.do_unblock(people["ada"], batch, abe, "trained again")
    for _ in range(4):
        assignment = forms.do_accept_next(abe, batch)
        forms.do_submit(assignment.pk, right(assignment.task))
    assert gold.block_reason(abe, batch) is None
    assert Assignment.objects.filter(worker=abe, task__batch=batch, status=AssignmentStatus.SUBMITTED).count() == 6
