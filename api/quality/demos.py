"""The quality API for demonstrations (docs/quality.md): a project's reviewers' agreement and second-review share,
annotators' records, and second reviews (the reviewer's list, one demo's, the second decision)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions import review
from annotation.actions.quality import demos as quality
from annotation.actions.quality.problems import problem_counts

from ..serializers import error_responses

ERRORS = error_responses(400, 403, 404, 409)

ShareSerializer = inline_serializer(
    "SecondReviewShare", {"second_review_percent": serializers.IntegerField(min_value=0, max_value=100)}
)
DecisionSerializer = inline_serializer(
    "SecondDecision",
    {
        "decision": serializers.ChoiceField(choices=["accept", "return", "reject"]),
        "invalid_turns": serializers.ListField(child=serializers.IntegerField(), required=False),
        "comment": serializers.CharField(required=False, max_length=review.second.MAX_COMMENT),
    },
)


def body_of(request) -> dict:
    return request.data if isinstance(request.data, dict) else {}


def second_review_data(second, user) -> dict | None:
    """A second review as the API shows it: the first decision only once the second is made (or to the first
    reviewer), so the second reviewer decides unprompted."""
    if second is None:
        return None
    shown = bool(second.decision) or second.first_reviewer_id == user.pk
    item = quality.second_review_item(second)
    if not shown:
        item.update(first_decision=None, agrees=None, turns_agreeing=None)
    return {"demo": second.demonstration.name, "project": second.demonstration.project.name, **item}


class ReviewersView(APIView):
    """A project's reviewers' agreement on second reviews and its second-review share."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, project):
        """``{"project", "second_review_percent", "second_reviews": {"sent", "decided", "pending", "agreeing"},
        "pairs": [{"reviewers", "demos", "decisions": {"kappa", "items", "observed", "undefined"}, "turns": ...}],
        "problems": {"kinds": [{"key", "label", "level", "marks", "demos", "turns", "compared", "agreeing",
        "agreement"}], "totals": {...}}}`` (reviewers, researchers and admins)."""
        return Response(figures_of(quality.check_project_for_reviewers(request.user, project)))

    @extend_schema(request=ShareSerializer, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def patch(self, request, project):
        """Set ``second_review_percent`` (0-100; project admins)."""
        found = quality.check_project_admin_for_settings(request.user, project)
        review.do_set_second_review_percent(found, body_of(request).get("second_review_percent"))
        return Response(figures_of(found))


def figures_of(project) -> dict:
    return {**quality.reviewers_kappa(project), "problems": problem_counts(project)}


class RecordsView(APIView):
    """Annotators' records in a project: every member's (reviewers, researchers, admins) or one's own (annotators)."""

    @extend_schema(operation_id="quality_demos_records_list", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, project):
        found = quality.check_project_for_records(request.user, project)
        return Response({"project": found.name, "records": quality.records(request.user, found)})


class RecordView(APIView):
    """One member's record with their demos (an annotator: only their own, else 403)."""

    @extend_schema(operation_id="quality_demos_record_retrieve", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, project, id):
        found = quality.check_project_for_records(request.user, project)
        member, role = quality.check_member_record(request.user, found, id)
        demonstrations = quality.record_demos(found, member)
        return Response({**quality.record_of(found, member, role), "demonstrations": demonstrations})


class SecondReviewListView(APIView):
    """The second reviews waiting for you."""

    @extend_schema(operation_id="quality_second_reviews_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        pending = review.pending_second_reviews(request.user)
        return Response({"pending": [second_review_data(second, request.user) for second in pending]})


class SecondReviewView(APIView):
    """One demo's second review (the project's reviewers and admins); its second reviewer decides with POST."""

    @extend_schema(operation_id="quality_second_review_retrieve", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, name):
        demo, second = review.check_second_review(request.user, name)
        return Response({"demo": demo.name, "second_review": second_review_data(second, request.user)})

    @extend_schema(
        operation_id="quality_second_review_decide",
        request=DecisionSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request, name):
        """``{"decision": "accept"|"return"|"reject", "invalid_turns"?: [turn ids], "comment"?}``: 409 when the demo
        was not sent to a second review or it is decided already, 403 when it is another reviewer's."""
        body = body_of(request)
        second = review.do_second_decision(
            request.user, name, body.get("decision"), body.get("invalid_turns"), body.get("comment", "")
        )
        return Response({"demo": name, "second_review": second_review_data(second, request.user)})
