"""The forms API: form batches (upload Turkle-style, settings, results CSV, statistics, tasks with preview URLs)
and assignments. Thin: each view checks with ``annotation.actions.forms`` and calls one action."""

import json

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, renderers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotation.actions import forms
from annotation.actions.errors import NotFound, invalid
from annotation.actions.forms import batches
from annotation.models import Assignment, Batch, BatchKind, Project, Task

from ..downloads import csv_download
from ..parsers import LimitedJSONParser
from ..serializers import ErrorSerializer, error_responses
from . import serializers as ws

ERRORS = error_responses(400, 403, 404, 409, 413)
SUBMIT_ERRORS = error_responses(400, 403, 404, 409, 410, 413)


class CSVRenderer(renderers.BaseRenderer):
    """``text/csv`` for the results download, so a client may ask for it (``Accept: text/csv``). The CSV itself is
    streamed by ``api.downloads.csv_download``; an error is answered as JSON
    (``BatchViewSet.finalize_response``)."""

    media_type, format, charset = "text/csv", "csv", "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data.encode() if isinstance(data, str) else json.dumps(data).encode()


def batches_for(user):
    """Form batches of projects where ``user`` sees statistics, plus the published ones they may work on. Mind2Web's
    proposal and demonstration batches are served by their own endpoints (``api/mind2web/views.py``)."""
    seen = Project.objects.for_user(user, forms.STATS_ROLES)
    workable = forms.workable_batches(user).filter(published=True)
    return (
        Batch.objects.forms()
        .filter(Q(project__in=seen) | Q(pk__in=workable.values("pk")))
        .select_related("project", "created_by")
        .prefetch_related("workers", "worker_groups")
        # tasks_total and tasks_done are the batch's counters: nothing is counted per request
        .order_by("-created_at", "-pk")
    )


class BatchViewSet(mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Batches of distributed work: upload one (template + CSV), change its settings, follow its progress, read its
    results (Turkle's CSV) and its tasks."""

    serializer_class = ws.BatchSerializer
    parser_classes = [LimitedJSONParser, MultiPartParser, FormParser]
    filterset_fields = {"project__name": ["exact"], "kind": ["exact"], "completed": ["exact"]}
    http_method_names = ["get", "post", "patch", "head", "options"]

    def finalize_response(self, request, response, *args, **kwargs):
        """An error of the CSV download is the API's JSON error, labelled as JSON (it was JSON text as text/csv)."""
        if response.status_code >= 400 and isinstance(getattr(request, "accepted_renderer", None), CSVRenderer):
            request.accepted_renderer, request.accepted_media_type = renderers.JSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Batch.objects.none()
        return batches_for(self.request.user)

    def annotated(self, batch) -> Batch:
        return self.get_queryset().get(pk=batch.pk)

    @extend_schema(
        request={"multipart/form-data": ws.BatchCreateSerializer},
        responses={201: ws.BatchCreatedSerializer, **ERRORS},
    )
    def create(self, request):
        """Upload a batch: ``template`` and ``csv`` files plus settings (multipart). One task per distinct row of
        input values; ``Answer.*`` columns become gold answers. Every problem is named (400), files over the limits
        are 413 (a body over both files' limits is refused before it is read, ``config.body_guard``), and nothing
        is stored unless all of it is valid."""
        form = ws.BatchCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        project = forms.check_project_for_batches(request.user, data.pop("project"))
        template, csv_file = data.pop("template"), data.pop("csv")
        parsed = forms.parse_upload(template, csv_file)
        name = data.pop("name", None) or (csv_file.name or "batch").removesuffix(".csv")
        batch_settings = forms.BatchSettings(**settings_of(data))
        batch = forms.do_create_form_batch(request.user, project, name, parsed, batch_settings)
        body = ws.BatchCreatedSerializer(self.annotated(batch)).data
        body["warnings"] = forms.warnings_for(parsed)
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"application/json": ws.BatchUpdateSerializer}, responses={200: ws.BatchSerializer, **ERRORS}
    )
    def partial_update(self, request, pk=None):
        """Change a batch's settings (researchers and admins of its project)."""
        batch = forms.check_batch_manageable(request.user, self.get_object().pk)
        # partial: a setting left out (of form data too) stays as it is, never read as false
        form = ws.BatchUpdateSerializer(data=request.data if isinstance(request.data, dict) else {}, partial=True)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        if "name" in data and data["name"] != batch.name:
            forms.create.check_names_free(batch.project, [data["name"]])
        batch = forms.do_update_batch_settings(batch, **data)
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR, 403: OpenApiResponse(ErrorSerializer), 404: None},
        description="Turkle's results CSV: one row per submitted assignment, every value quoted, CRLF.",
    )
    @action(detail=True, methods=["get"], renderer_classes=[CSVRenderer, renderers.JSONRenderer])
    def results(self, request, pk=None):
        """The Turkle results CSV (columns as Turkle writes them; several values of one name joined with ``|``)."""
        batch = forms.check_batch_manageable(request.user, self.get_object().pk)
        return csv_download(*forms.results_download(batch))

    @extend_schema(request=ws.AcceptSerializer, responses={201: ws.AssignmentSerializer, 204: None, **ERRORS})
    @action(detail=True, methods=["post"])
    def accept(self, request, pk=None):
        """Accept the batch's next task for you (or resume the one you hold): 201 with the assignment, 204 when none
        is left for you. With ``task`` (a task of the batch you previewed), that task, 409 when it has no slot for
        you; in a batch that serves gold tasks the queue chooses, so you get its next task instead (the answer's
        ``task`` says which). A batch you may not work on is a 403 saying why (not among its workers, blocked by its
        gold tasks, a required qualification missing); a closed one 409."""
        if not str(pk).isdecimal():
            raise NotFound(f"no form batch {str(pk)[:40]!r} among your projects")
        batch = forms.check_batch_accept(request.user, int(pk))
        form = ws.AcceptSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        if "task" in form.validated_data:
            assignment = forms.do_accept_task(request.user, task_of(batch, form.validated_data["task"]))
        else:
            assignment = forms.do_accept_next(request.user, batch)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(ws.AssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: ws.BatchStatsSerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def stats(self, request, pk=None):
        """Progress and time: tasks done, assignments per status, per-worker counts and work time (total, median)."""
        batch = forms.check_batch_stats(request.user, self.get_object().pk)
        return Response(forms.batch_stats(batch))

    @extend_schema(responses={200: ws.TaskSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def tasks(self, request, pk=None):
        """The batch's tasks in instance order, with inputs, gold answers and a signed preview URL (researchers and
        admins)."""
        batch = forms.check_batch_manageable(request.user, self.get_object().pk)
        page = self.paginate_queryset(batch.tasks.order_by("index"))
        return self.get_paginated_response(ws.TaskSerializer(page, many=True, context={"request": request}).data)

    def managed_batch(self, request):
        """The batch of the URL, for its managers: 404 outside your projects, 403 for another role."""
        return forms.check_batch_manageable(request.user, self.get_object().pk)

    @extend_schema(request=None, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        """Publish: workers see the batch and get its tasks (the batch page lists what to check first). 409 when it
        is already published."""
        batch = batches.do_publish(self.managed_batch(request))
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(request=None, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def unpublish(self, request, pk=None):
        """Unpublish: off the workers' lists, no new assignments; those already out may still be submitted. 409
        when it is not published."""
        batch = batches.do_unpublish(self.managed_batch(request))
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(request=None, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """Pause: no new assignments are handed out; the active ones may still be submitted. 409 when paused."""
        batch = batches.do_pause(self.managed_batch(request))
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(request=None, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Resume a paused batch: it hands out work again. 409 when it is not paused."""
        batch = batches.do_resume(self.managed_batch(request))
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(request=ws.BatchExtendSerializer, responses={200: ws.BatchExtendedSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def extend(self, request, pk=None):
        """More time: ``allotted_seconds`` for the assignments handed out from now on, and/or
        ``active_extra_seconds`` added to the expiry of every active assignment."""
        batch = self.managed_batch(request)
        form = ws.BatchExtendSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        done = batches.do_extend(batch, **form.validated_data)
        body = ws.BatchExtendedSerializer(self.annotated(batch)).data
        body["extended_assignments"] = done["extended"]
        return Response(body)

    @extend_schema(request=ws.BatchAddAssignmentsSerializer, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"], url_path="add-assignments")
    def add_assignments(self, request, pk=None):
        """``count`` more workers per task: completed tasks open again for the new assignments."""
        batch = self.managed_batch(request)
        form = ws.BatchAddAssignmentsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        batch = batches.do_add_assignments(batch, form.validated_data["count"])
        return Response(self.get_serializer(self.annotated(batch)).data)

    @extend_schema(request=ws.BatchInstructionsSerializer, responses={200: ws.BatchSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def instructions(self, request, pk=None):
        """Replace the instructions shown above the task (``description``; blank removes them)."""
        batch = self.managed_batch(request)
        form = ws.BatchInstructionsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        batch = batches.do_edit_instructions(batch, form.validated_data["description"])
        return Response(self.get_serializer(self.annotated(batch)).data)


def task_of(batch, task_id) -> Task:
    task = batch.tasks.filter(pk=task_id).select_related("batch").first()
    if task is None:
        raise invalid("task", f"batch {batch.name!r} has no task {task_id}")
    return task


def settings_of(data: dict) -> dict:
    keys = ("assignments_per_task", "allotted_seconds", "published", "active", "description", "workers")
    values = {key: data[key] for key in keys if key in data}
    if "worker_groups" in data:
        values["worker_groups"] = data["worker_groups"]
    return values


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Assignments of form batches: your own, and every assignment of the batches you manage (researchers, admins).
    Your own active ones you submit, skip or return here as through the task frame and the assignment page (the
    same actions, the same refusals). Mind2Web's proposal rounds and demonstration tasks are under
    ``/api/proposal-rounds/`` and ``/api/demonstration-tasks/``."""

    serializer_class = ws.AssignmentSerializer
    parser_classes = [LimitedJSONParser]
    filterset_fields = {"task__batch": ["exact"], "status": ["exact"], "worker__username": ["exact"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        user = self.request.user
        managed = forms.managed_projects(user)
        return (
            Assignment.objects.filter(Q(worker=user) | Q(task__batch__project__in=managed))
            .filter(task__batch__kind=BatchKind.FORM)
            .select_related("task", "worker")
            .order_by("-accepted_at", "-pk")
        )

    @extend_schema(request=ws.SubmitSerializer, responses={200: ws.AssignmentSerializer, **SUBMIT_ERRORS})
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Submit the answers of your active assignment, once. 409 when it already ended (a second submission), 410
        when it expired; 403 (``access_ended``) when you may no longer work on its batch (no longer a member or
        in a role that works, account deactivated, a required qualification revoked, blocked): nothing is stored
        and the assignment is returned, its reason in ``ended_reason``."""
        assignment = forms.check_assignment_of(request.user, pk)
        form = ws.SubmitSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        answers = forms.answers_from_json(form.validated_data["answers"])
        forms.check_answers(answers, assignment.task.batch.html_template)
        forms.do_submit(assignment.pk, answers)
        return Response(ws.AssignmentSerializer(self.get_queryset().get(pk=assignment.pk)).data)

    @extend_schema(request=None, responses={200: ws.SkippedSerializer, **SUBMIT_ERRORS})
    @action(detail=True, methods=["post"])
    def skip(self, request, pk=None):
        """Skip your active assignment and take the batch's next task (the skipped one comes last for you):
        ``{"skipped", "next"}``, ``next`` null when none is left. Refusals as for ``submit``."""
        assignment = forms.check_assignment_of(request.user, pk)
        following = forms.do_skip(assignment)
        skipped = self.get_queryset().get(pk=assignment.pk)
        body = {"skipped": ws.AssignmentSerializer(skipped).data, "next": None}
        if following is not None:
            body["next"] = ws.AssignmentSerializer(following).data
        return Response(body)

    @extend_schema(request=None, responses={200: ws.AssignmentSerializer, **SUBMIT_ERRORS})
    @action(detail=True, methods=["post"], url_path="return")
    def give_back(self, request, pk=None):
        """Return your active assignment unanswered: its slot goes back to the queue. 409 when it already ended,
        410 when it expired."""
        assignment = forms.check_assignment_of(request.user, pk)
        forms.do_return(assignment)
        return Response(ws.AssignmentSerializer(self.get_queryset().get(pk=assignment.pk)).data)
