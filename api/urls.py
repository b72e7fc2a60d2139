"""The API's one router over every area's viewsets, plus the blob endpoints, token sign-in and the OpenAPI schema and
docs."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import errors, manage
from .agents import views as agents
from .exports import views as exports
from .forms import views as forms
from .mind2web import views as mind2web
from .recordings import views as recordings

# No format-suffix routes (``/api/exports/1.json``): never documented, and every ``@action`` given one answered 500
# (its ``format`` argument unexpected). The browsable API's ``?format=`` is how to ask for a renderer.
router = DefaultRouter()
router.include_format_suffixes = False
router.register("projects", manage.ProjectViewSet, basename="project")
router.register("recordings", recordings.RecordingViewSet, basename="recording")
router.register("demonstrations", exports.DemonstrationViewSet, basename="demonstration")
router.register("exports", exports.ExportJobViewSet, basename="export")
router.register("evaluations", exports.EvaluationViewSet, basename="evaluation")
router.register("agent-runs", agents.AgentRunViewSet, basename="agent-run")
router.register("model-endpoints", agents.ModelEndpointViewSet, basename="model-endpoint")
router.register("prediction-runs", agents.PredictionRunViewSet, basename="prediction-run")
router.register("batches", forms.BatchViewSet, basename="batch")
router.register("assignments", forms.AssignmentViewSet, basename="assignment")
router.register("websites", mind2web.WebsiteViewSet, basename="website")
router.register("proposal-rounds", mind2web.ProposalRoundViewSet, basename="proposal-round")
router.register("proposals", mind2web.ProposalViewSet, basename="proposal")
router.register("demonstration-tasks", mind2web.DemonstrationTaskViewSet, basename="demonstration-task")

urlpatterns = [
    path("blobs/missing/", recordings.MissingBlobsView.as_view(), name="blobs-missing"),
    path("blobs/<str:sha256>", recordings.BlobView.as_view(), name="blob"),
    path("auth/token/", manage.TokenSignInView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    *router.urls,
    re_path(r"", errors.not_found),  # last: an unknown /api/ path answers the API's JSON 404, not an HTML page
]
