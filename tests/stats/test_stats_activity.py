"""Activity and pay: hours per person per day on a hand-built project, the pay report under per-hour and per-item
rates, the CSV downloads, who sees whose activity, the rates form, and a query count that does not grow."""

import csv
import datetime as dt
import io
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.actions.stats import activity
from annotation.models import Assignment, AssignmentStatus, Batch, PayRates, ReviewState, Role, Task
from annotation.synth.bulk import bulk_corpus
from tests.support import stats_data
from tests.support.actors import make_user

RATES = {
    "recording_per_hour": "7.50",
    "overhead_per_hour": "5.00",
    "review_per_hour": "10.00",
    "form_task_per_hour": "6.00",
    "per_validated_demo": "0.80",
    "per_submitted_assignment": "0.50",
}


@pytest.fixture
def project(alpha, owner, instructor, reviewer, teammate):
    stats_data.build(alpha, owner, instructor, reviewer, teammate)
    PayRates.objects.create(project=alpha, **RATES)
    return alpha


def read_csv(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_hours_per_person_per_day_come_from_recordings_edits_and_assignments(project):
    people = activity.activity(project, None, PayRates.for_project(project))
    assert list(people) == ["instructor", "owner", "reviewer", "teammate"]
    owner = people["owner"]
    assert owner[dt.date(2026, 3, 2)].seconds == {"recording": 1800.0, "review": 0.0, "form_task": 0.0}
    assert owner[dt.date(2026, 3, 2)].validated_demos == 1
    assert owner[dt.date(2026, 3, 3)].seconds["recording"] == 900.0  # the recording under way counts nothing
    assert list(owner) == [dt.date(2026, 3, 2), dt.date(2026, 3, 3)]
    assert people["instructor"][dt.date(2026, 3, 2)].seconds["recording"] == 1800.0
    # 12:00, 12:05, 12:09, then a 51-minute pause (over the 10-minute idle gap), 13:00, 13:02.
    assert people["reviewer"][dt.date(2026, 3, 2)].seconds["review"] == 660.0
    teammate = people["teammate"][dt.date(2026, 3, 4)]
    assert teammate.seconds["form_task"] == 2700.0
    assert teammate.approved_assignments == 2


def test_a_longer_idle_gap_counts_the_pause_as_review(project):
    rates = PayRates.for_project(project)
    rates.idle_gap_minutes = 60
    people = activity.activity(project, None, rates)
    assert people["reviewer"][dt.date(2026, 3, 2)].seconds["review"] == 660.0 + 51 * 60


def test_pay_adds_hourly_rates_overhead_and_per_item_rates(project):
    rates = PayRates.for_project(project)
    report = {row["person"]: row for row in activity.pay_report(activity.activity(project, None, rates), rates)}
    assert report["owner"]["pay"] == Decimal("10.18")  # 0.75 h × (7.50 + 5.00) + 1 validated demo × 0.80
    assert report["instructor"]["pay"] == Decimal("6.25")  # 0.5 h × 12.50
    assert report["reviewer"]["pay"] == Decimal("2.75")  # 660 s × 15.00/h
    assert report["teammate"]["pay"] == Decimal("9.25")  # 0.75 h × 11.00 + 2 × 0.50
    assert report["teammate"]["form_task_hours"] == 0.75


def test_admins_download_everyones_pay_and_days(client, project, admin):
    client.force_login(admin)
    pay = read_csv(client.get("/projects/alpha/pay.csv"))
    assert [row["person"] for row in pay] == ["instructor", "owner", "reviewer", "teammate"]
    assert pay[1] == {
        "person": "owner",
        "recording_hours": "0.75",
        "review_hours": "0.0",
        "form_task_hours": "0.0",
        "validated_demos": "1",
        "approved_assignments": "0",
        "pending_assignments": "0",
        "pending_hours": "0.0",
        "pay": "10.18",
        "currency": "USD",
    }
    days = read_csv(client.get("/projects/alpha/activity.csv"))
    assert [(row["person"], row["day"]) for row in days] == [
        ("instructor", "2026-03-02"),
        ("owner", "2026-03-02"),
        ("owner", "2026-03-03"),
        ("reviewer", "2026-03-02"),
        ("teammate", "2026-03-04"),
    ]


def test_a_member_sees_only_their_own_activity(client, project, owner, teammate):
    client.force_login(owner)
    assert [row["person"] for row in read_csv(client.get("/projects/alpha/pay.csv"))] == ["owner"]
    assert {row["person"] for row in read_csv(client.get("/projects/alpha/activity.csv"))} == {"owner"}
    page = client.get("/projects/alpha/activity/").content.decode()
    assert 'data-person="owner"' in page
    assert 'data-person="teammate"' not in page
    assert 'data-day="2026-03-02" data-hours="0.5"' in page


def test_outsiders_see_no_activity_and_only_admins_change_rates(client, project, outsider, owner):
    client.force_login(outsider)
    for url in ("/projects/alpha/activity/", "/projects/alpha/pay.csv", "/projects/alpha/pay/rates/"):
        assert client.get(url).status_code == 404
    client.force_login(owner)
    assert client.get("/projects/alpha/pay/rates/").status_code == 403
    assert client.post("/projects/alpha/pay/rates/", {**RATES, "currency": "EUR"}).status_code == 403
    assert PayRates.objects.get(project=project).currency == "USD"


def test_an_admin_sets_the_rates_and_a_bad_value_names_its_field(client, project, admin):
    client.force_login(admin)
    form = {**RATES, "currency": "EUR", "idle_gap_minutes": "15", "per_validated_demo": "-1"}
    response = client.post("/projects/alpha/pay/rates/", form)
    assert response.status_code == 400
    assert "per_validated_demo" in response.content.decode()
    assert PayRates.objects.get(project=project).currency == "USD"
    response = client.post("/projects/alpha/pay/rates/", {**form, "per_validated_demo": "0.80"})
    assert response.status_code == 302
    assert response["Location"] == "/projects/alpha/activity/"
    rates = PayRates.objects.get(project=project)
    assert (rates.currency, rates.idle_gap_minutes) == ("EUR", 15)


@pytest.mark.django_db(transaction=True)
def test_the_first_rates_saved_twice_at_once_are_one_row_and_no_error(alpha):
    def save(currency):
        try:
            return activity.do_set_pay_rates(alpha, {"currency": currency})
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=3) as pool:
        saved = list(pool.map(save, ["EUR", "GBP", "CHF"]))

    assert len(saved) == 3
    assert PayRates.objects.filter(project=alpha).count() == 1
    assert PayRates.objects.get(project=alpha).currency in {"EUR", "GBP", "CHF"}


def activity_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/projects/alpha/activity/").status_code == 200
    return len(queries)


def test_the_activity_page_makes_the_same_queries_however_much_data(client, project, owner, admin):
    client.force_login(admin)
    before = activity_queries(client)
    bulk_corpus(project, make_user("navigator2", project, Role.ANNOTATOR), demos=30, turns=300, seed=5)
    bulk_corpus(project, owner, demos=20, turns=200, seed=6)
    assert activity_queries(client) == before


def test_a_pay_period_keeps_only_its_days_and_a_bad_date_names_its_field(client, project, admin):
    client.force_login(admin)
    rows = read_csv(client.get("/projects/alpha/activity.csv?from=2026-03-03&to=2026-03-03"))
    assert [(row["person"], row["day"], row["recording_hours"]) for row in rows] == [("owner", "2026-03-03", "0.25")]
    pay = read_csv(client.get("/projects/alpha/pay.csv?from=2026-03-04"))
    assert [(row["person"], row["pay"]) for row in pay] == [("teammate", "9.25")]
    response = client.get("/projects/alpha/pay.csv?to=March")
    assert response.status_code == 400
    assert "to: not a date" in response.content.decode()
    page = client.get("/projects/alpha/activity/?from=2026-03-04").content.decode()
    assert 'href="/projects/alpha/pay.csv?from=2026-03-04"' in page


def test_tasks_held_at_once_are_paid_for_their_time_once(client, project, admin, teammate):
    """Four tasks held together 10:00–10:30 (one in a second batch), then one alone 11:00–11:10: 40 minutes of
    work, not 2 h 10 min; the overlap goes to the task accepted first, pending work the same way."""
    template = stats_data.TEMPLATE
    batches = [Batch.objects.create(project=project, name=f"held{n}", html_template=template) for n in (1, 2)]
    spans = [(0, 10, 0, 10, 30, "approved"), (0, 10, 1, 10, 30, "approved"), (0, 10, 5, 10, 30, "pending")]
    spans += [(1, 10, 2, 10, 25, "approved"), (0, 11, 0, 11, 10, "approved")]
    for index, (batch, hour, minute, end_hour, end_minute, review) in enumerate(spans):
        task = Task.objects.create(batch=batches[batch], index=index, inputs={"question": str(index)})
        accepted, submitted = stats_data.at(6, hour, minute), stats_data.at(6, end_hour, end_minute)
        Assignment.objects.create(
            task=task,
            worker=teammate,
            status=AssignmentStatus.SUBMITTED,
            accepted_at=accepted,
            expires_at=stats_data.at(7, 0),
            submitted_at=submitted,
            work_seconds=(submitted - accepted).total_seconds(),
            review=ReviewState(review),
        )
    day = activity.activity(project, teammate.pk, PayRates.for_project(project))["teammate"][dt.date(2026, 3, 6)]
    assert day.seconds["form_task"] == 40 * 60  # 10:00–10:30 once, 11:00–11:10
    assert (day.approved_assignments, day.pending_assignments, day.pending_seconds) == (4, 1, 0.0)
    client.force_login(admin)
    pay = {row["person"]: row for row in read_csv(client.get("/projects/alpha/pay.csv?from=2026-03-06&to=2026-03-06"))}
    assert pay["teammate"]["form_task_hours"] == str(round(40 / 60, 2))


def test_pay_periods_add_up_to_the_whole_when_held_tasks_cross_a_boundary(project, teammate):
    """The third outside review: 23:00–01:00 holding a task, 23:10–23:50 another: 2 h in all, not 0.67 h on the
    first day and 2 h on the second."""
    template = stats_data.TEMPLATE
    batch = Batch.objects.create(project=project, name="night", html_template=template)
    for index, (accepted, submitted) in enumerate(
        ((stats_data.at(9, 23), stats_data.at(10, 1)), (stats_data.at(9, 23, 10), stats_data.at(9, 23, 50)))
    ):
        Assignment.objects.create(
            task=Task.objects.create(batch=batch, index=index, inputs={"question": str(index)}),
            worker=teammate,
            status=AssignmentStatus.SUBMITTED,
            accepted_at=accepted,
            expires_at=stats_data.at(11, 0),
            submitted_at=submitted,
            work_seconds=(submitted - accepted).total_seconds(),
            review=ReviewState.APPROVED,
        )
    rates = PayRates.for_project(project)

    def seconds(first, last):
        people = activity.activity(project, teammate.pk, rates, (first, last))
        return sum(day.seconds["form_task"] for day in people.get("teammate", {}).values())

    ninth, tenth = dt.date(2026, 3, 9), dt.date(2026, 3, 10)
    assert seconds(ninth, tenth) == 2 * 3600
    assert seconds(ninth, ninth) + seconds(tenth, tenth) == 2 * 3600
