"""The API's one router, plus the blob endpoint, token sign-in and the OpenAPI schema and docs."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import errors, manage
from .agents import views as agent_views
from .exports import views
from .forms import views as work_views
from .mind2web import views as mind2web_views
from .recordings import views as recordings

# No format-suffix routes (``/api/exports/1.json``): never documented, and every ``@action`` given one answered 500
# (its ``format`` argument unexpected). The browsable API's ``?format=`` is how to ask for a renderer.
router = DefaultRouter()
router.include_format_suffixes = False
router.register("projects", manage.ProjectViewSet, basename="project")
router.register("recordings", recordings.RecordingViewSet, basename="recording")
router.register("demonstrations", views.DemonstrationViewSet, basename="demonstration")
router.register("exports", views.ExportJobViewSet, basename="export")
router.register("evaluations", views.EvaluationViewSet, basename="evaluation")
router.register("agent-runs", agent_views.AgentRunViewSet, basename="agent-run")
router.register("batches", work_views.BatchViewSet, basename="batch")
router.register("assignments", work_views.AssignmentViewSet, basename="assignment")
router.register("websites", mind2web_views.WebsiteViewSet, basename="website")
router.register("proposal-rounds", mind2web_views.ProposalRoundViewSet, basename="proposal-round")
router.register("proposals", mind2web_views.ProposalViewSet, basename="proposal")
router.register("demonstration-tasks", mind2web_views.DemonstrationTaskViewSet, basename="demonstration-task")

urlpatterns = [
    path("blobs/missing/", recordings.MissingBlobsView.as_view(), name="blobs-missing"),
    path("blobs/<str:sha256>", recordings.BlobView.as_view(), name="blob"),
    path("auth/token/", manage.TokenSignInView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    *router.urls,
    re_path(r"", errors.not_found),  # last: an unknown /api/ path answers the API's JSON 404, not an HTML page
]
