"""The review API (docs/review.md#problems): problems reviewers mark on a demo's task or turns, and a project's
taxonomy of problem kinds. Curation itself is the review page's own JSON endpoint (``/review/<demo>/edit``)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions import review

from .serializers import error_responses

ERRORS = error_responses(400, 403, 404, 409)

MarkSerializer = inline_serializer(
    "ProblemMarkRequest",
    {
        "kind": serializers.SlugField(help_text="A key of the project's problem kinds."),
        "turn": serializers.IntegerField(required=False, help_text="The turn's id; none for a task-level kind."),
        "note": serializers.CharField(required=False, max_length=200),
    },
)
KindsSerializer = inline_serializer(
    "ProblemKinds",
    {
        "kinds": serializers.ListField(
            child=inline_serializer(
                "ProblemKind",
                {
                    "key": serializers.SlugField(max_length=32),
                    "label": serializers.CharField(max_length=60),
                    "level": serializers.ChoiceField(choices=["turn", "task"]),
                },
            )
        )
    },
)


def body_of(request) -> dict:
    return request.data if isinstance(request.data, dict) else {}


def marks_answer(demo) -> dict:
    marks = review.marks_of(demo)
    turns = [{"turn": turn, "marks": items} for turn, items in marks["turns"].items()]
    return {"demo": demo.name, "kinds": review.kinds_of(demo.project), **marks, "turns": turns}


class ProblemsView(APIView):
    """A demo's problem marks (everyone who may open it in review); reviewers and admins mark with POST."""

    @extend_schema(operation_id="review_problems_list", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, name):
        """``{"demo", "kinds", "task": [marks], "turns": [{"turn", "marks"}], "counts": {kind: marks}}``; a mark is
        ``{"id", "kind", "label", "turn", "reviewer", "reviewer_id", "note", "at"}``."""
        return Response(marks_answer(review.check_demo_reviewable(request.user, name)))

    @extend_schema(
        operation_id="review_problems_mark", request=MarkSerializer, responses={201: OpenApiTypes.OBJECT, **ERRORS}
    )
    def post(self, request, name):
        """``{"kind", "turn"?, "note"?}``: your mark (201; 200 when you had marked it: its note is replaced)."""
        demo = review.check_can_mark(request.user, name)
        body = body_of(request)
        mark, created = review.do_mark(request.user, demo, body.get("kind"), body.get("turn"), body.get("note"))
        answer = review.mark_as_item(mark)
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ProblemView(APIView):
    """One mark (everyone who may open the demo in review); DELETE unmarks it (its reviewer, or a project admin)."""

    @extend_schema(operation_id="review_problem_get", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, name, mark_id):
        demo = review.check_demo_reviewable(request.user, name)
        return Response(review.mark_as_item(review.check_mark(demo, mark_id)))

    @extend_schema(operation_id="review_problems_unmark", responses={204: None, **ERRORS})
    def delete(self, request, name, mark_id):
        review.do_unmark(request.user, review.check_can_mark(request.user, name), mark_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProblemKindsView(APIView):
    """A project's problem kinds (its members read them; its admins replace them with PUT)."""

    @extend_schema(operation_id="review_problem_kinds_get", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, name):
        """``{"project", "kinds": [{"key", "label", "level", "marks"}]}``."""
        return Response(kinds_answer(review.check_project_kinds_reader(request.user, name)))

    @extend_schema(
        operation_id="review_problem_kinds_set", request=KindsSerializer, responses={200: OpenApiTypes.OBJECT, **ERRORS}
    )
    def put(self, request, name):
        """``{"kinds": [{"key", "label", "level"}]}`` replaces the list: keys are slugs (at most 20 kinds, labels at
        most 60 characters; 400 naming the field); dropping a kind with marks, or changing its level, is a 409
        naming it."""
        project = review.check_project_kinds_admin(request.user, name)
        review.do_set_kinds(project, body_of(request).get("kinds"))
        return Response(kinds_answer(project))


def kinds_answer(project) -> dict:
    used = review.kinds_in_use(project)
    kinds = [{**kind, "marks": used.get(kind["key"], 0)} for kind in review.kinds_of(project)]
    return {"project": project.name, "kinds": kinds}
