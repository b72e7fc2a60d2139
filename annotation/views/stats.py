"""Statistics, activity and pay pages of a project (docs/stats.md). Thin: access check, then
``annotation.actions.stats`` (``tables``, ``activity``) and a template or a download."""

import datetime as dt
import functools
import io

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods

from ..actions.manage.access import check_project_role
from ..actions.stats import activity
from ..actions.stats.tables import project_stats
from ..lib import charts, spreadsheet
from ..models import READ_ROLES, PayRates, Role
from .page_errors import action_errors, refusals_on_form


def project_for(request, name: str, roles=READ_ROLES, cannot="read its statistics"):
    """The project ``name`` for a member with one of ``roles``: a non-member gets the 404 page, another role the 403
    page (``action_errors``)."""
    return check_project_role(request.user, name, roles, cannot)


def download(filename: str, columns, rows) -> HttpResponse:
    """A CSV attachment: a header row then ``rows`` (lists, or dicts keyed by the columns); formula-like cells (a
    username ``@x``, a label ``=…``) escaped for spreadsheets."""
    buffer = io.StringIO()
    writer = spreadsheet.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row[column] for column in columns] if isinstance(row, dict) else row)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


def json_download(filename: str, data) -> JsonResponse:
    response = JsonResponse(data, safe=False, json_dumps_params={"indent": 1})
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


# --- Statistics -------------------------------------------------------------------------------------------


@require_GET
@login_required
@action_errors
def stats_page(request, name: str):
    project = project_for(request, name)
    tables = project_stats(project)
    for table in tables:
        table.plot = (
            charts.bar_chart(table.column(table.columns[0]), table.column(table.chart)) if table.chart else None
        )
    groups = {}
    for table in tables:
        groups.setdefault(table.group, []).append(table)
    return render(request, "stats/stats.html", {"project": project, "groups": groups})


@require_GET
@login_required
@action_errors
def stats_all(request, name: str):
    project = project_for(request, name)
    tables = [table.as_dict() for table in project_stats(project)]
    return json_download(f"{project.name}-stats.json", {"project": project.name, "tables": tables})


@require_GET
@login_required
@action_errors
def stats_table(request, name: str, key: str, fmt: str):
    project = project_for(request, name)
    table = next((table for table in project_stats(project) if table.key == key), None)
    if table is None:
        raise Http404(f"no statistics table {key!r}")
    filename = f"{project.name}-{key}.{fmt}"
    if fmt == "json":
        return json_download(filename, table.as_dict())
    return download(filename, table.columns, table.rows)


# --- Activity and pay -------------------------------------------------------------------------------------


class BadPeriod(Exception):
    pass


def period_day(request, field: str):
    raw = request.GET.get(field, "").strip()
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise BadPeriod(f"{field}: not a date (YYYY-MM-DD): {raw[:40]!r}") from None


def activity_scope(request, name: str):
    """The project, its rates, whose activity the user may see (everyone's for a project admin, else their own)
    and the period asked for (``?from=YYYY-MM-DD&to=YYYY-MM-DD``, either optional)."""
    project = project_for(request, name, cannot="see activity")
    only = None if project.has_role(request.user, (Role.ADMIN,)) else request.user.pk
    period = (period_day(request, "from"), period_day(request, "to"))
    return project, PayRates.for_project(project), only, period


def bad_period(view):
    """A malformed ``from``/``to`` answers 400 naming the field."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except BadPeriod as error:
            return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")

    return wrapped


def activity_view(view):
    """An activity or pay page: GET only, signed in, a malformed period a 400, refusals the error pages."""
    return require_GET(login_required(bad_period(action_errors(view))))


@activity_view
def activity_page(request, name: str):
    project, rates, only, period = activity_scope(request, name)
    people = activity.activity(project, only, rates, period)
    end = activity.last_day(people, timezone.localdate())
    heatmaps = [
        (person, charts.heatmap({day: work.hours for day, work in by_day.items()}, end))
        for person, by_day in people.items()
    ]
    context = {
        "project": project,
        "rates": rates,
        "period": {"from": request.GET.get("from", ""), "to": request.GET.get("to", "")},
        "query": request.GET.urlencode(),
        "everyone": only is None,
        "heatmaps": heatmaps,
        "days": activity.day_rows(people),
        "pay": activity.pay_report(people, rates),
    }
    return render(request, "stats/activity.html", context)


@activity_view
def activity_csv(request, name: str):
    project, rates, only, period = activity_scope(request, name)
    rows = activity.day_rows(activity.activity(project, only, rates, period))
    return download(f"{project.name}-activity.csv", activity.DAY_COLUMNS, rows)


@activity_view
def pay_csv(request, name: str):
    project, rates, only, period = activity_scope(request, name)
    rows = activity.pay_report(activity.activity(project, only, rates, period), rates)
    return download(f"{project.name}-pay.csv", activity.PAY_COLUMNS, rows)


class PayRatesForm(forms.ModelForm):
    class Meta:
        model = PayRates
        fields = list(activity.PAY_RATE_FIELDS)


@require_http_methods(["GET", "POST"])
@login_required
@action_errors
def pay_rates(request, name: str):
    """Project admins set the pay rates; a bad value re-shows the form with the field's error (400)."""
    project = activity.check_pay_rates_changeable(request.user, name)
    form = PayRatesForm(request.POST if request.method == "POST" else None, instance=PayRates.for_project(project))
    if request.method == "POST":
        if form.is_valid():
            with refusals_on_form(form):
                activity.do_set_pay_rates(project, form.cleaned_data)
                messages.success(request, "Pay rates saved.")
                return redirect("stats-activity", project.name)
        return render(request, "stats/rates.html", {"project": project, "form": form}, status=400)
    return render(request, "stats/rates.html", {"project": project, "form": form})
