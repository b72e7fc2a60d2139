"""The review queue and list: "Review next" claims (oldest first, held, expiring, never the same demo for two
reviewers), assignment, sorting and filters in the URL, bulk actions with access control, the history in words,
the time-order warning, the live endpoints, and a list whose query count does not grow with the data."""

import datetime as dt
import json
import threading

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.actions import review as actions
from annotation.lib.quality import order_issues
from annotation.models import Comment, Demonstration, DemoReview, DemoStatus, Role, Turn, TurnType
from tests.support.actors import make_user, start_demo


def waiting(owner, alpha, minutes_ago, status=DemoStatus.RECORDED):
    """A demo recorded ``minutes_ago`` minutes ago, waiting for review."""
    demo = start_demo(owner, alpha, status=status)
    Demonstration.objects.filter(pk=demo.pk).update(recording_start=timezone.now() - dt.timedelta(minutes=minutes_ago))
    return demo


@pytest.fixture
def colleague(alpha):
    return make_user("colleague", alpha, Role.REVIEWER)


def test_review_next_claims_the_oldest_waiting_demo_and_holds_it_for_its_reviewer(reviewer, colleague, owner, alpha):
    newer, older = waiting(owner, alpha, 5), waiting(owner, alpha, 50)
    assert actions.do_claim_next(reviewer) == older
    assert actions.do_claim_next(reviewer) == older  # still held: asking again gives it back, not another one
    review = DemoReview.objects.get(pk=older.pk)
    assert review.claimed_by == reviewer
    assert 110 <= (review.claimed_until - timezone.now()).total_seconds() <= 120  # opened: REVIEW_OPEN_SECONDS
    assert actions.do_claim_next(colleague) == newer
    assert actions.do_claim_next(make_user("third", alpha, Role.REVIEWER)) is None


def test_a_decision_releases_the_claim_and_the_next_one_comes(reviewer, owner, alpha):
    first, second = waiting(owner, alpha, 50), waiting(owner, alpha, 5)
    assert actions.do_claim_next(reviewer) == first
    actions.do_transition(reviewer, first, 0, "validate")
    assert DemoReview.objects.get(pk=first.pk).claimed_by is None
    assert actions.do_claim_next(reviewer) == second


def test_a_claim_expires_after_review_claim_seconds(settings, reviewer, colleague, owner, alpha):
    settings.REVIEW_OPEN_SECONDS = 60
    demo = waiting(owner, alpha, 5)
    assert actions.do_claim_next(reviewer) == demo
    assert actions.do_claim_next(colleague) is None
    DemoReview.objects.filter(pk=demo.pk).update(claimed_until=timezone.now() - dt.timedelta(seconds=1))
    assert actions.do_claim_next(colleague) == demo
    assert DemoReview.objects.get(pk=demo.pk).claimed_by == colleague


def test_the_queue_skips_own_unsure_assigned_elsewhere_and_other_projects(reviewer, colleague, owner, alpha, beta):
    navigated = waiting(reviewer, alpha, 90)  # a reviewer may not validate a demo they navigated
    unsure = waiting(owner, alpha, 80)
    actions.do_set_unsure(reviewer, unsure, 0, True)
    elsewhere = waiting(owner, alpha, 70)
    mine = waiting(owner, alpha, 1)
    actions.do_assign(reviewer, [elsewhere.name], "colleague")
    actions.do_assign(reviewer, [mine.name], "reviewer")
    start_demo(make_user("beta-annotator", beta, Role.ANNOTATOR), beta, status=DemoStatus.RECORDED)
    waiting(owner, alpha, 60, status=DemoStatus.VALIDATED)
    assert list(actions.queue_for(reviewer)) == [mine]
    assert {navigated, unsure, elsewhere} <= set(actions.queue_for(colleague))
    assert actions.do_claim_next(make_user("annotator-2", alpha, Role.ANNOTATOR)) is None  # annotators review nothing


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_claiming_at_once_never_get_the_same_demo(alpha, owner):
    demos = [waiting(owner, alpha, minutes) for minutes in (30, 20, 10)]
    reviewers = [make_user(f"rev{i}", alpha, Role.REVIEWER) for i in range(6)]
    barrier, got, errors = threading.Barrier(len(reviewers)), {}, []

    def claim(user):
        try:
            barrier.wait(timeout=30)
            demo = actions.do_claim_next(user)
            got[user.username] = demo.pk if demo else None
        except Exception as error:  # surfaced below: a thread's exception would otherwise be lost
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(user,)) for user in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    claimed = [pk for pk in got.values() if pk is not None]
    assert sorted(claimed) == sorted(demo.pk for demo in demos)  # each demo once, all of them given out
    assert list(got.values()).count(None) == len(reviewers) - len(demos)
    holders = dict(DemoReview.objects.values_list("pk", "claimed_by__username"))
    assert {got[name]: name for name in got if got[name]} == holders


def comment(client, demo, text):
    revision = DemoReview.objects.get(pk=demo.pk).revision
    body = {"op": "comment", "revision": revision, "text": text}
    response = client.post(f"/review/{demo.name}/edit", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response


def claim_line(client, demo) -> str:
    """The review page's header line on who the demo is assigned to and who holds it."""
    page = client.get(f"/review/{demo.name}/").content.decode()
    return page.split('id="claim">', 1)[1].split("</span>", 1)[0]


def test_a_demo_only_looked_at_goes_to_the_next_reviewer_after_review_open_seconds(
    settings, client, reviewer, colleague, owner, alpha
):
    settings.REVIEW_OPEN_SECONDS, settings.REVIEW_CLAIM_SECONDS = 120, 1800
    first, second = waiting(owner, alpha, 50), waiting(owner, alpha, 5)
    client.force_login(reviewer)
    assert client.post("/review/next")["Location"] == f"/review/{first.name}/"
    assert "held by reviewer until" in claim_line(client, first)
    assert "just opened" in claim_line(client, first)
    # The reviewer looked and moved on (to the list, another tab, home): the brief hold runs out.
    later = timezone.now() + dt.timedelta(seconds=121)
    assert actions.do_claim_next(colleague, now=later) == first
    other = Client()
    other.force_login(colleague)
    assert "held by colleague until" in claim_line(other, first)
    # A third reviewer, a moment later, is not handed it again: the colleague's open hold counts.
    assert actions.do_claim_next(make_user("third", alpha, Role.REVIEWER), now=later) == second


def test_a_demo_acted_on_is_held_for_the_full_time(settings, client, reviewer, colleague, owner, alpha):
    settings.REVIEW_OPEN_SECONDS, settings.REVIEW_CLAIM_SECONDS = 120, 1800
    first = waiting(owner, alpha, 50)
    client.force_login(reviewer)
    assert client.post("/review/next")["Location"] == f"/review/{first.name}/"
    comment(client, first, "Looks fine so far, checking the last turns.")  # the first act: the full hold begins
    line = claim_line(client, first)
    assert "held by reviewer until" in line
    assert "just opened" not in line
    now = timezone.now()
    assert actions.do_claim_next(colleague, now=now + dt.timedelta(seconds=121)) is None
    assert actions.do_claim_next(colleague, now=now + dt.timedelta(seconds=1700)) is None
    held_until = DemoReview.objects.get(pk=first.pk).claimed_until
    comment(client, first, "Second look.")  # each act holds it the full time from then
    assert DemoReview.objects.get(pk=first.pk).claimed_until > held_until
    assert actions.do_claim_next(colleague, now=timezone.now() + dt.timedelta(seconds=1801)) == first
    # A decision releases it at once.
    actions.do_transition(colleague, first, DemoReview.objects.get(pk=first.pk).revision, "validate")
    assert DemoReview.objects.get(pk=first.pk).claimed_by is None


def test_two_reviewers_opening_at_the_same_moment_get_different_demos(reviewer, colleague, owner, alpha):
    demos = [waiting(owner, alpha, minutes) for minutes in (50, 40, 30)]
    now = timezone.now()
    third = make_user("third", alpha, Role.REVIEWER)
    got = [actions.do_claim_next(user, now=now) for user in (reviewer, colleague, third)]
    assert got == demos
    assert actions.do_claim_next(make_user("fourth", alpha, Role.REVIEWER), now=now) is None
    # and the second time round, each is given back their own
    assert [actions.do_claim_next(user, now=now) for user in (reviewer, colleague, third)] == demos


def test_acting_on_a_demo_someone_else_only_opened_takes_the_hold(client, reviewer, colleague, owner, alpha):
    demo = waiting(owner, alpha, 50)
    assert actions.do_claim_next(colleague) == demo  # opened, not acted on
    client.force_login(reviewer)  # opened from the list, and commented on
    comment(client, demo, "I'll take this one.")
    assert "held by reviewer until" in claim_line(client, demo)
    assert actions.do_claim_next(colleague) is None
    # but not a demo someone else works on
    other = Client()
    other.force_login(colleague)
    comment(other, demo, "Also a note.")
    assert "held by reviewer until" in claim_line(other, demo)


def test_review_next_opens_the_claimed_demo_or_says_nothing_is_left(client, reviewer, owner, alpha):
    demo = waiting(owner, alpha, 5)
    client.force_login(reviewer)
    assert client.get("/review/next").status_code == 405
    response = client.post("/review/next")
    assert response.status_code == 302
    assert response["Location"] == f"/review/{demo.name}/"
    actions.do_transition(reviewer, demo, 0, "reject")
    response = client.post("/review/next", follow=True)
    assert response.redirect_chain[-1][0] == "/review/"
    assert "Nothing left to review for you now" in response.text


# --- The list: sorting, filters, bulk actions ---------------------------------------------------------------


def names_in(response):
    text = response.text
    return [part.split('"', 1)[0] for part in text.split('<tr data-name="')[1:]]


def test_the_list_sorts_by_any_column_and_refuses_an_unknown_one(client, reviewer, owner, alpha):
    demos = [waiting(owner, alpha, minutes) for minutes in (30, 20, 10)]
    Demonstration.objects.filter(pk=demos[0].pk).update(task_description="b task", category="zz")
    Demonstration.objects.filter(pk=demos[1].pk).update(task_description="a task", category="aa")
    Demonstration.objects.filter(pk=demos[2].pk).update(task_description="c task", category="mm")
    DemoReview.objects.create(demonstration=demos[1], quality=[{"turn": None, "check": "x", "message": "x"}] * 3)
    DemoReview.objects.create(demonstration=demos[2], quality=[])
    client.force_login(reviewer)
    assert names_in(client.get("/review/")) == [d.name for d in reversed(demos)]  # newest recorded first
    assert names_in(client.get("/review/", {"sort": "recorded"})) == [d.name for d in demos]
    assert names_in(client.get("/review/", {"sort": "task"})) == [demos[1].name, demos[0].name, demos[2].name]
    assert names_in(client.get("/review/", {"sort": "-category"})) == [demos[0].name, demos[2].name, demos[1].name]
    assert names_in(client.get("/review/", {"sort": "-issues"})) == [demos[1].name, demos[2].name, demos[0].name]
    assert names_in(client.get("/review/", {"sort": "issues"})) == [demos[2].name, demos[1].name, demos[0].name]
    response = client.get("/review/", {"sort": "task", "category": "aa"})
    assert names_in(response) == [demos[1].name]
    assert 'aria-sort="ascending" data-column="task"' in response.text
    assert "sort=-task" in response.text  # the current column's header link sorts the other way, keeping filters
    assert "category=aa&amp;sort=-task" in response.text
    bad = client.get("/review/", {"sort": "colour"})
    assert bad.status_code == 400
    assert "Cannot sort by &#x27;colour&#x27;" in bad.text


def test_the_list_filters_by_assignee(client, reviewer, colleague, owner, alpha):
    mine, theirs = waiting(owner, alpha, 5), waiting(owner, alpha, 6)
    actions.do_assign(reviewer, [theirs.name], "colleague")
    client.force_login(reviewer)
    assert names_in(client.get("/review/", {"assignee": "colleague"})) == [theirs.name]
    assert mine.name in names_in(client.get("/review/"))


def bulk(client, action, names, **fields):
    return client.post("/review/bulk", {"action": action, "names": names, **fields})


def test_bulk_assign_and_return_change_every_selected_demo(client, reviewer, colleague, owner, alpha):
    first, second = waiting(owner, alpha, 5), waiting(owner, alpha, 6)
    actions.do_claim_next(reviewer)
    client.force_login(reviewer)
    response = bulk(client, "assign", [first.name, second.name], assignee="colleague")
    assert response.status_code == 302
    reviews = DemoReview.objects.filter(pk__in=[first.pk, second.pk])
    assert {r.assignee.username for r in reviews} == {"colleague"}
    assert {r.claimed_by for r in reviews} == {None}  # held by someone else: released for the assignee
    assert "2 demonstrations assigned." in client.get("/review/").text
    bulk(client, "assign", [first.name], assignee="")
    assert DemoReview.objects.get(pk=first.pk).assignee is None
    assert bulk(client, "return", [first.name, second.name], comment="Redo the last step").status_code == 302
    assert set(Demonstration.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == {
        DemoStatus.RETURNED
    }
    assert Comment.objects.filter(demonstration=first, text="Redo the last step").exists()


def test_bulk_actions_check_every_demo_and_change_nothing_when_one_is_refused(
    client, reviewer, researcher, outsider, owner, alpha
):
    first, decided = waiting(owner, alpha, 5), waiting(owner, alpha, 6, status=DemoStatus.VALIDATED)
    client.force_login(researcher)  # reads, does not curate
    response = bulk(client, "assign", [first.name], assignee="reviewer")
    assert response.status_code == 403
    assert "reviewers and admins" in response.text
    client.force_login(outsider)
    assert bulk(client, "return", [first.name]).status_code == 404
    client.force_login(reviewer)
    response = bulk(client, "return", [first.name, decided.name])
    assert response.status_code == 400
    assert f"{decided.name} (validated)" in response.text
    assert Demonstration.objects.get(pk=first.pk).status == DemoStatus.RECORDED  # all or nothing
    response = bulk(client, "assign", [first.name], assignee="owner")  # an annotator cannot be assigned review
    assert response.status_code == 400
    assert "not a reviewer or admin of alpha" in response.text
    assert bulk(client, "assign", [], assignee="reviewer").status_code == 400
    assert bulk(client, "archive", [first.name]).status_code == 400
    assert bulk(client, "assign", ["nosuchdemo"], assignee="reviewer").status_code == 404
    assert not DemoReview.objects.filter(assignee__isnull=False).exists()


def test_the_list_reads_a_constant_number_of_queries_with_assignees_and_claims(client, reviewer, colleague, alpha):
    from tests.support.corpus import ingest_corpus

    def curate(demos):
        actions.do_assign(reviewer, [demo.name for demo in demos[::2]], "colleague")
        actions.do_claim_next(reviewer)

    curate(ingest_corpus(project="alpha", demos=2, turns=4, elements=20, seed=3, status=DemoStatus.RECORDED))
    client.force_login(reviewer)
    with CaptureQueriesContext(connection) as few:
        client.get("/review/", {"sort": "-issues"})
    curate(ingest_corpus(project="alpha", demos=14, turns=4, elements=20, seed=4, status=DemoStatus.RECORDED))
    with CaptureQueriesContext(connection) as many:
        response = client.get("/review/", {"sort": "-issues"})
    assert response.text.count("<tr data-name=") == 16
    assert "held by reviewer" in response.text
    assert ">colleague" in response.text
    assert len(many) == len(few)


# --- The review page: history in words, time order, live state ----------------------------------------------


def browser_turns(demo):
    return list(Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("timestamp", "seq"))


def history_of(client, demo):
    text = client.get(f"/review/{demo.name}/").text
    return text.split('id="history"', 1)[1].split("</section>", 1)[0]


def test_the_history_says_what_happened_in_words(client, reviewer, demo):
    turn, other = browser_turns(demo)[3], browser_turns(demo)[5]
    order = actions.current_order(demo, actions.review_of(demo))
    deleted = actions.do_delete_turn(reviewer, demo, 0, turn.pk)
    actions.do_undo(reviewer, demo, 1, deleted.pk)
    actions.do_set_validity(reviewer, demo, 2, other.pk, False)
    actions.do_move_turn(reviewer, demo, 3, other.pk, order.index(other.pk) + 2)
    actions.do_transition(reviewer, demo, 4, "return", "")
    client.force_login(reviewer)
    history = history_of(client, demo)
    assert f"<b>Deleted turn {turn.seq}</b>" in history
    assert f"<b>Restored turn {turn.seq} (undid #{deleted.pk})</b>" in history
    assert f"<b>Marked turn {other.seq} invalid</b>" in history
    start = order.index(other.pk)
    assert f"<b>Moved turn {other.seq} from position {start} to {start + 2}</b>" in history
    assert "<b>Returned to the annotator</b>" in history


def test_reordering_against_time_order_warns_on_the_turns_and_in_the_quality_checks(client, reviewer, demo):
    late = browser_turns(demo)[6]
    first = Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq").first()
    client.force_login(reviewer)
    assert "out of time order" not in client.get(f"/review/{demo.name}/").text
    actions.do_move_turn(reviewer, demo, 0, late.pk, 0)
    text = client.get(f"/review/{demo.name}/").text
    quality = text.split('id="quality"', 1)[1].split("</section>", 1)[0]
    assert f'data-turn="{late.pk}">out of time order: recorded at {late.timestamp:.1f} s, after turn {first.seq}' in (
        quality
    )
    assert f'data-turn="{first.pk}">out of time order' in quality
    item = text.split(f'id="t{late.pk}"', 1)[1].split("</li>", 1)[0]
    assert "out of time order" in item
    assert "badge warn" in item
    actions.do_delete_turn(reviewer, demo, 1, first.pk)  # a deleted turn leaves the export: no longer a problem
    second = Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq")[1]
    text = client.get(f"/review/{demo.name}/").text
    assert f'data-turn="{first.pk}">out of time order' not in text
    assert (late.timestamp > second.timestamp) == (f'data-turn="{second.pk}">out of time order' in text)


def test_order_issues_flag_both_turns_of_each_inversion():
    from types import SimpleNamespace

    turns = [SimpleNamespace(pk=pk, seq=pk, timestamp=float(ts)) for pk, ts in ((1, 0), (3, 9), (2, 5), (4, 12))]
    assert [(item["turn"], item["check"]) for item in order_issues(turns, set())] == [
        (3, "time_order"),
        (2, "time_order"),
    ]
    assert order_issues(turns, {3}) == []


def test_the_live_endpoints_report_thumbnails_counts_and_refuse_outsiders(client, reviewer, outsider, demo):
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from annotation.store.blobstore import thumbnail_path

    shots = sorted({t.screenshot_id for t in browser_turns(demo) if t.screenshot_id})
    client.force_login(reviewer)
    url = f"/review/{demo.name}/live"
    state = client.get(url, {"pending": ",".join(shots[:2] + ["f" * 64])}).json()
    assert state == {"ready": [], "realigned": False, "issues": None, "revision": 0}
    default_storage.save(thumbnail_path(shots[0]), ContentFile(b"webp"))
    DemoReview.objects.create(demonstration=demo, realigned=True, quality=[])
    response = client.get(url, {"pending": ",".join(shots[:2] + ["f" * 64])})
    assert response["Cache-Control"] == "no-store"
    assert response.json() == {"ready": [shots[0]], "realigned": True, "issues": 0, "revision": 0}
    listed = client.get("/review/live", {"names": f"{demo.name},nosuchdemo"}).json()
    assert listed == {"demos": {demo.name: {"status": "recorded", "status_display": "Recorded", "issues": 0}}}
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.get("/review/live", {"names": demo.name}).json() == {"demos": {}}


def test_export_selection_starts_an_export_of_exactly_those_demos(client, reviewer, researcher, owner, alpha, beta):
    from annotation.models import ExportJob, Membership

    first, second, other = waiting(owner, alpha, 5), waiting(owner, alpha, 6), waiting(owner, alpha, 7)
    client.force_login(reviewer)  # curates, but exports need a researcher or admin
    refused = bulk(client, "export", [first.name], format="weblinx")
    assert refused.status_code == 403
    assert "researcher or admin" in refused.text
    client.force_login(researcher)
    response = bulk(client, "export", [second.name, first.name], format="mind2web")
    job = ExportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/projects/alpha/exports/{job.pk}/"
    assert (job.format, job.demos, job.owner) == ("mind2web", sorted([first.name, second.name]), researcher)
    assert other.name not in job.demos
    assert "2 selected" in client.get(response["Location"]).text
    Membership.objects.create(user=researcher, project=beta, role=Role.RESEARCHER)
    theirs = start_demo(make_user("beta-navigator", beta, Role.ANNOTATOR), beta, status=DemoStatus.RECORDED)
    response = bulk(client, "export", [first.name, theirs.name], format="weblinx")
    assert response.status_code == 302
    assert response["Location"] == "/review/"
    assert sorted(ExportJob.objects.filter(format="weblinx").values_list("project__name", flat=True)) == [
        "alpha",
        "beta",
    ]
    assert "Exports started, one per project" in client.get("/review/").text
    assert bulk(client, "export", [first.name], format="csv").status_code == 400
