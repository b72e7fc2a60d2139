"""The agreement page of a form batch (``quality-agreement``: a table per field and per worker, charts) and its
downloads (CSV per table, JSON of everything). Thin: ``annotation.actions.quality.agreement`` checks and computes."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from ...actions.quality import agreement
from ...lib import charts
from ...lib.agreement import GOLD_NOTE, percent
from ..page_errors import action_errors


def percent_chart(rows, label: str, value: str):
    """Bars of ``value`` (a share) in percent; rows whose figure is undefined are left out of the chart."""
    shown = [row for row in rows if row[value] is not None]
    return charts.bar_chart([row[label] for row in shown], [round(100 * row[value], 1) for row in shown])


@require_GET
@login_required
@action_errors
def agreement_page(request, batch_id: int):
    batch = agreement.check_batch_agreement(request.user, batch_id)
    result = agreement.batch_agreement(batch, tasks=False)
    workers = [
        {**worker, "gold_shown": None if worker["gold_accuracy"] is None else percent(worker["gold_accuracy"])}
        for worker in result["workers"]
    ]
    context = {
        "batch": batch,
        "result": result,
        "workers": workers,
        "gold_note": GOLD_NOTE,
        "field_chart": percent_chart(result["fields"], "name", "majority_share"),
        "worker_chart": percent_chart(result["workers"], "worker", "majority_agreement"),
    }
    return render(request, "quality/agreement.html", context)


@require_GET
@login_required
@action_errors
def agreement_json(request, batch_id: int):
    batch = agreement.check_batch_agreement(request.user, batch_id)
    response = JsonResponse(agreement.batch_agreement(batch), json_dumps_params={"indent": 1})
    response["Content-Disposition"] = content_disposition_header(True, agreement.download_name(batch, "all", "json"))
    return response


@require_GET
@login_required
@action_errors
def agreement_csv(request, batch_id: int, table: str):
    batch = agreement.check_batch_agreement(request.user, batch_id)
    text = agreement.table_csv(agreement.batch_agreement(batch), table)
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, agreement.download_name(batch, table, "csv"))
    return response
