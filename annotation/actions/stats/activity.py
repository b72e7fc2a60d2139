"""Activity and pay (``/projects/<name>/activity/``): per person per day, the time spent recording, reviewing
and working on form tasks, and the pay those earn under the project's ``PayRates`` (docs/stats.md).

- Recording: a demonstration's ``recording_end − recording_start``, for its navigator and (chat mode) its
  instructor, on the day it started; recordings still under way count nothing yet. Summed in the database.
- Review: the gaps between one person's consecutive review edits (``Edit.created_at``, in any demo of the
  project), each counted when it is at most the rates' idle gap; a longer pause ends a session. A gap counts on
  the day of the edit that ends it. One query reads the edits' (author, time) in order.
- Form tasks: approved assignments' ``work_seconds`` (accepted → submitted) on the day of submission, a person's
  time counted once when they held several tasks at once (overlaps go to the task accepted first; one query, a
  sweep in Python). Submitted work not reviewed yet is counted apart (``pending_*``) and earns nothing until it is
  approved; rejected work earns nothing. Mind2Web's proposal and demonstration assignments have their own review
  and count once submitted.

Every function takes ``only``: None for everyone in the project, or one user id (a person sees their own), and
``period``: ``(first day, last day)``, either None for no bound (a pay period).
"""

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Case, Count, DurationField, ExpressionWrapper, F, Q, Sum, Value, When
from django.db.models.functions import TruncDate
from django.utils import timezone

from ...models import (
    Assignment,
    AssignmentStatus,
    BatchKind,
    Demonstration,
    DemoStatus,
    Edit,
    PayRates,
    ReviewState,
    Role,
)
from ..errors import ValidationFailed
from ..manage.access import check_project_role

ACTIVITIES = ("recording", "review", "form_task")
CENTS = Decimal("0.01")


@dataclass
class Day:
    """One person's work on one day: seconds per activity and the items that earn a per-item rate."""

    seconds: dict = field(default_factory=lambda: dict.fromkeys(ACTIVITIES, 0.0))
    validated_demos: int = 0
    approved_assignments: int = 0
    pending_assignments: int = 0
    pending_seconds: float = 0.0

    @property
    def hours(self) -> float:
        return sum(self.seconds.values()) / 3600


def mine(queryset, person_field: str, only, time_field: str, period=(None, None)):
    """``queryset`` narrowed to one person (unless ``only`` is None) and to the days of ``period``."""
    first, last = period
    if first is not None:
        queryset = queryset.filter(**{f"{time_field}__date__gte": first})
    if last is not None:
        queryset = queryset.filter(**{f"{time_field}__date__lte": last})
    return queryset if only is None else queryset.filter(**{person_field: only})


def recording_days(project, only, person_field: str, period):
    """``(person, day, seconds, validated demos)`` of the recordings ``person_field`` took part in."""
    duration = ExpressionWrapper(F("recording_end") - F("recording_start"), output_field=DurationField())
    demos = Demonstration.objects.filter(
        project=project, recording_end__isnull=False, **{f"{person_field}__isnull": False}
    ).exclude(status=DemoStatus.RECORDING)
    grouped = (
        mine(demos, person_field, only, "recording_start", period)
        .order_by()
        .values(person_field, day=TruncDate("recording_start"))
        .annotate(spent=Sum(duration), validated=Count("pk", filter=Q(status=DemoStatus.VALIDATED)))
    )
    return [(row[person_field], row["day"], row["spent"].total_seconds(), row["validated"]) for row in grouped]


def review_days(project, only, idle_gap: float, period):
    """``{(person, day): seconds}`` of review sessions: consecutive edits at most ``idle_gap`` seconds apart."""
    edits = mine(Edit.objects.filter(demonstration__project=project), "author_id", only, "created_at", period)
    spent = defaultdict(float)
    previous_author, previous_time = None, None
    for author, created in edits.order_by("author_id", "created_at").values_list("author_id", "created_at"):
        if author == previous_author:
            gap = (created - previous_time).total_seconds()
            if gap <= idle_gap:
                spent[(author, created.date())] += gap
        previous_author, previous_time = author, created
    return spent


def form_days(project, only, period):
    """``(person, day, seconds, approved, pending seconds, pending)`` of submitted assignments: approved ones (and
    Mind2Web's, reviewed elsewhere) and those not reviewed yet. A person's time counts once however many tasks they
    held at once: each assignment's ``work_seconds`` (its interval ``[submitted − work_seconds, submitted]``) counts
    only where no assignment of theirs accepted earlier already covers it (a sweep over one query's rows, over every
    period, so that pay periods add up to the whole: an assignment across midnight is not paid again in the next)."""
    submitted = Assignment.objects.filter(task__batch__project=project, status=AssignmentStatus.SUBMITTED)
    approved = Q(review=ReviewState.APPROVED) | ~Q(task__batch__kind=BatchKind.FORM)
    pending = Q(review=ReviewState.PENDING, task__batch__kind=BatchKind.FORM)
    rows = (  # every period's assignments: time shared with one submitted in another period counts once overall
        mine(submitted, "worker", only, "submitted_at")
        .filter(approved | pending)
        .annotate(counted=Case(When(approved, then=Value(True)), default=Value(False)))
        .order_by()
        .values_list("worker", "submitted_at", "work_seconds", "counted")
    )
    intervals = sorted(
        (worker, at - dt.timedelta(seconds=seconds or 0.0), at, counted) for worker, at, seconds, counted in rows
    )
    days = defaultdict(lambda: [0.0, 0, 0.0, 0])
    covered_until = {}
    for worker, start, end, counted in intervals:
        reach = covered_until.get(worker, start)
        seconds = max(0.0, (end - max(start, reach)).total_seconds())
        covered_until[worker] = max(reach, end)
        day = days[worker, timezone.localtime(end).date()]
        if counted:
            day[0] += seconds
            day[1] += 1
        else:
            day[2] += seconds
            day[3] += 1
    first, last = period
    return [
        (worker, day, *figures)
        for (worker, day), figures in days.items()
        if (first is None or day >= first) and (last is None or day <= last)
    ]


def activity(project, only, rates: PayRates, period=(None, None)) -> dict:
    """``{username: {day: Day}}`` for the project (everyone, or the one user ``only``); constant queries."""
    days = defaultdict(lambda: defaultdict(Day))
    for person_field in ("navigator", "instructor"):
        for person, day, seconds, validated in recording_days(project, only, person_field, period):
            days[person][day].seconds["recording"] += seconds
            if person_field == "navigator":
                days[person][day].validated_demos += validated
    for (person, day), seconds in review_days(project, only, rates.idle_gap_minutes * 60, period).items():
        days[person][day].seconds["review"] += seconds
    for person, day, seconds, approved, waiting, pending in form_days(project, only, period):
        days[person][day].seconds["form_task"] += seconds
        days[person][day].approved_assignments += approved
        days[person][day].pending_seconds += waiting
        days[person][day].pending_assignments += pending
    names = dict(get_user_model().objects.filter(pk__in=list(days)).values_list("pk", "username"))
    return {
        names[person]: dict(sorted(by_day.items()))
        for person, by_day in sorted(days.items(), key=lambda i: names[i[0]])
    }


def money(value) -> Decimal:
    return Decimal(value).quantize(CENTS, rounding=ROUND_HALF_UP)


def pay_row(person: str, by_day: dict, rates: PayRates) -> dict:
    """One person's totals and pay: hours × rate per activity, overhead × all hours, and per-item rates."""
    hours = {name: sum(day.seconds[name] for day in by_day.values()) / 3600 for name in ACTIVITIES}
    validated = sum(day.validated_demos for day in by_day.values())
    approved = sum(day.approved_assignments for day in by_day.values())
    hourly = {
        "recording": rates.recording_per_hour,
        "review": rates.review_per_hour,
        "form_task": rates.form_task_per_hour,
    }
    amount = sum((Decimal(str(hours[name])) * hourly[name] for name in ACTIVITIES), Decimal(0))
    amount += Decimal(str(sum(hours.values()))) * rates.overhead_per_hour
    amount += validated * rates.per_validated_demo + approved * rates.per_submitted_assignment
    return {
        "person": person,
        **{f"{name}_hours": round(hours[name], 2) for name in ACTIVITIES},
        "validated_demos": validated,
        "approved_assignments": approved,
        "pending_assignments": sum(day.pending_assignments for day in by_day.values()),
        "pending_hours": round(sum(day.pending_seconds for day in by_day.values()) / 3600, 2),
        "pay": money(amount),
        "currency": rates.currency,
    }


PAY_COLUMNS = (
    "person",
    "recording_hours",
    "review_hours",
    "form_task_hours",
    "validated_demos",
    "approved_assignments",
    "pending_assignments",
    "pending_hours",
    "pay",
    "currency",
)
DAY_COLUMNS = (
    "person",
    "day",
    "recording_hours",
    "review_hours",
    "form_task_hours",
    "validated_demos",
    "approved_assignments",
    "pending_assignments",
)


def pay_report(people: dict, rates: PayRates) -> list[dict]:
    return [pay_row(person, by_day, rates) for person, by_day in people.items()]


def day_rows(people: dict) -> list[dict]:
    """One row per person per day with work, for the table and its CSV."""
    return [
        {
            "person": person,
            "day": day.isoformat(),
            **{f"{name}_hours": round(work.seconds[name] / 3600, 2) for name in ACTIVITIES},
            "validated_demos": work.validated_demos,
            "approved_assignments": work.approved_assignments,
            "pending_assignments": work.pending_assignments,
        }
        for person, by_day in people.items()
        for day, work in by_day.items()
    ]


def last_day(people: dict, today: dt.date) -> dt.date:
    """The heatmaps end with the last day of work shown (the year up to it), or today when there is none."""
    return max((day for by_day in people.values() for day in by_day), default=today)


PAY_RATE_FIELDS = (
    "currency",
    "recording_per_hour",
    "review_per_hour",
    "form_task_per_hour",
    "overhead_per_hour",
    "per_validated_demo",
    "per_submitted_assignment",
    "idle_gap_minutes",
)


def check_pay_rates_changeable(user, project_name: str):
    """The project whose pay rates ``user`` sets: its admins (404 outside it, 403 for its other roles)."""
    return check_project_role(user, project_name, (Role.ADMIN,), "change pay rates")


def do_set_pay_rates(project, values: dict) -> PayRates:
    """Store the project's pay rates (the fields of ``PAY_RATE_FIELDS`` in ``values``; the others are kept), checked
    by the model's validators (400 naming the field). The row is made once and locked while it changes: two saves at
    once (the first rates of a project included) both land, one after the other."""
    with transaction.atomic():
        PayRates.objects.get_or_create(project=project)
        rates = PayRates.objects.select_for_update().get(project=project)
        for name in PAY_RATE_FIELDS:
            if name in values:
                setattr(rates, name, values[name])
        try:
            rates.full_clean(exclude=["project"])
        except DjangoValidationError as error:
            problems = [{"field": f, "message": " ".join(messages)} for f, messages in error.message_dict.items()]
            raise ValidationFailed("; ".join(f"{p['field']}: {p['message']}" for p in problems), problems) from None
        rates.save()
    return rates
