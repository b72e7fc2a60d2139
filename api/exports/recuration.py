"""Re-curation of an imported release (docs/recuration.md): ``/api/projects/<name>/recuration/`` counts every
imported item and lists them (``?status=``, ``?problem=``, paginated); ``…/recuration/<release id>/`` is one item
turn by turn with its ``changes.json`` entry. Reviewers, researchers and admins of the project (403 for annotators,
404 outside it), as the page; ``annotation.actions.exports.recuration`` computes both, as it does ``changes.json``."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers as s
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions.exports import recuration

from ..pagination import Pagination
from ..serializers import error_responses

# The answers' shapes, for the schema (the actions' dicts are answered as they are).


def any_value(**kwargs):
    """A value as the release or review left it: text, a list of websites, a boolean, null."""
    return s.JSONField(**kwargs)


STATUS_HELP = "unchanged, changed or dropped (rejected in review)."


class RecurationDecisionSerializer(s.Serializer):
    reviewer = s.CharField()
    decision = s.CharField()


class RecurationAgreementSerializer(s.Serializer):
    first = RecurationDecisionSerializer()
    second = RecurationDecisionSerializer()
    turns_agreeing = s.IntegerField()
    turns = s.IntegerField()


def agreement():
    return RecurationAgreementSerializer(allow_null=True, help_text="The second review once decided (null until then).")


class RecurationChangeSerializer(s.Serializer):
    index = s.IntegerField(required=False, help_text="A turn's change: the turn's index in the release.")
    field = s.CharField(required=False, help_text="A task change: the field.")
    change = s.ChoiceField(choices=recuration.CHANGE_KINDS)
    to = any_value(required=False)
    by = s.CharField(allow_null=True, help_text="Who made the change that stands.")


# "from" is a Python keyword: declared by name
RecurationChangeSerializer._declared_fields = {
    **{name: field for name, field in RecurationChangeSerializer._declared_fields.items() if name not in ("to", "by")},
    "from": any_value(required=False),
    "to": RecurationChangeSerializer._declared_fields["to"],
    "by": RecurationChangeSerializer._declared_fields["by"],
}


class RecurationProblemSerializer(s.Serializer):
    kind = s.CharField()
    label = s.CharField()
    turn = s.IntegerField(allow_null=True, help_text="The turn's index in the release; null: the task.")
    by = s.CharField()
    note = s.CharField(allow_null=True, allow_blank=True)


def counts_by(what: str):
    return s.DictField(child=s.IntegerField(), help_text=what)


class RecurationItemSerializer(s.Serializer):
    demo = s.CharField(help_text="The release id.")
    name = s.CharField(help_text="The demo's name on the platform (its review page).")
    split = s.CharField()
    status = s.CharField(help_text=STATUS_HELP)
    review_status = s.CharField()
    changes = counts_by("Changes by kind.")
    problems = counts_by("Problem marks by kind (the kinds marked).")
    agreement = agreement()


class RecurationKindCountSerializer(s.Serializer):
    key = s.CharField()
    label = s.CharField()
    level = s.CharField(help_text="turn, task, or blank for a kind the project no longer lists.")
    turn_marks = s.IntegerField()
    task_marks = s.IntegerField()
    marks = s.IntegerField()
    items = s.IntegerField()


class RecurationSecondReviewsSerializer(s.Serializer):
    decided = s.IntegerField()
    same_decision = s.IntegerField()


class RecurationCountsSerializer(s.Serializer):
    items = s.IntegerField()
    status = counts_by("Items by status.")
    changes = counts_by("Changes by kind.")
    problems = RecurationKindCountSerializer(many=True)
    second_reviews = RecurationSecondReviewsSerializer()


class RecurationFiltersSerializer(s.Serializer):
    status = s.CharField(allow_null=True)
    problem = s.CharField(allow_null=True)


class RecurationSerializer(s.Serializer):
    project = s.CharField()
    filters = RecurationFiltersSerializer()
    counts = RecurationCountsSerializer(help_text="Over every imported item.")
    count = s.IntegerField(help_text="Items the filters keep.")
    next = s.URLField(allow_null=True)
    previous = s.URLField(allow_null=True)
    results = RecurationItemSerializer(many=True)


class RecurationEntrySerializer(s.Serializer):
    demo = s.CharField(help_text="The release id.")
    status = s.CharField(help_text=STATUS_HELP)
    by = s.CharField(required=False, allow_null=True, help_text="dropped: who rejected it.")
    masked = s.BooleanField(required=False)
    turns = RecurationChangeSerializer(many=True)
    task = RecurationChangeSerializer(many=True)
    problems = RecurationProblemSerializer(many=True)
    agreement = agreement()


class RecurationOriginalTurnSerializer(s.Serializer):
    position = s.IntegerField()
    text = any_value()
    screenshot = s.CharField(allow_null=True)
    target = s.CharField(allow_null=True, help_text="The uid of the element acted on (null: none).")


class RecurationCuratedTurnSerializer(RecurationOriginalTurnSerializer):
    valid = s.BooleanField()


class RecurationTurnSerializer(s.Serializer):
    index = s.IntegerField(help_text="The turn's index in the release.")
    turn = s.IntegerField(help_text="The raw turn's id.")
    type = s.CharField()
    speaker = s.CharField()
    intent = s.CharField()
    url = s.CharField()
    original = RecurationOriginalTurnSerializer()
    curated = RecurationCuratedTurnSerializer(allow_null=True, help_text="null: deleted in review.")
    changes = RecurationChangeSerializer(many=True)
    problems = RecurationProblemSerializer(many=True)


class RecurationItemDetailSerializer(s.Serializer):
    project = s.CharField()
    item = RecurationItemSerializer()
    task_description = s.CharField()
    changes = RecurationEntrySerializer(help_text="The item's entry in changes.json.")
    turns = RecurationTurnSerializer(many=True)


FILTERS = [
    OpenApiParameter("status", OpenApiTypes.STR, enum=list(recuration.STATUSES), description="Items of this status."),
    OpenApiParameter("problem", OpenApiTypes.STR, description="Items with a mark of this problem kind (its key)."),
    OpenApiParameter("page", OpenApiTypes.INT),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="At most 500."),
]


class RecurationView(APIView):
    """A project's imported items: counts over all of them, then those the filters keep."""

    @extend_schema(
        operation_id="projects_recuration_list",
        parameters=FILTERS,
        responses={200: RecurationSerializer, **error_responses(400, 403, 404)},
    )
    def get(self, request, name):
        project = recuration.check_project_for_recuration(request.user, name)
        query = request.query_params
        data = recuration.recuration_of(project, query.get("status"), query.get("problem"))
        paginator = Pagination()
        page = paginator.paginate_queryset(data.pop("items"), request, view=self)
        answer = paginator.get_paginated_response(page)
        answer.data = {**data, **answer.data}
        return answer


class RecurationItemView(APIView):
    """One imported item: each release turn beside its curated state, with its changes.json entry."""

    @extend_schema(
        operation_id="projects_recuration_item",
        responses={200: RecurationItemDetailSerializer, **error_responses(403, 404)},
    )
    def get(self, request, name, release_id):
        project = recuration.check_project_for_recuration(request.user, name)
        return Response(recuration.item_of(request.user, project, release_id))
