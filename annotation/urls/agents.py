"""Agent runs on form tasks (TurkingBench): results, drill-down, comparison, cancelling; per project, a new run
the model endpoints and the model limits."""

from django.urls import path

from ..views import agents, predictions

urlpatterns = [
    path("agents/runs/", agents.run_list, name="agents-runs"),
    path("agents/runs/<int:run_id>/", agents.run_detail, name="agents-run"),
    path("agents/runs/<int:run_id>/cancel", agents.run_cancel, name="agents-run-cancel"),
    path("agents/runs/<int:run_id>/resume", agents.run_resume, name="agents-run-resume"),
    path("agents/runs/<int:run_id>/instances/<int:row_id>/", agents.instance_detail, name="agents-instance"),
    path(
        "agents/runs/<int:run_id>/instances/<int:row_id>/screenshot.png",
        agents.instance_screenshot,
        name="agents-screenshot",
    ),
    path("agents/runs/<int:run_id>/instances/<int:row_id>/answer.txt", agents.instance_answer, name="agents-answer"),
    path("agents/compare/", agents.compare, name="agents-compare"),
    path("agents/predictions/", predictions.run_list, name="agents-predictions"),
    path("agents/predictions/<int:prediction_id>/", predictions.run_detail, name="agents-prediction"),
    path("agents/predictions/<int:prediction_id>/cancel", predictions.run_cancel, name="agents-prediction-cancel"),
    path(
        "agents/predictions/<int:prediction_id>/predictions.json",
        predictions.run_predictions,
        name="agents-prediction-file",
    ),
    path(
        "agents/predictions/<int:prediction_id>/failures.json",
        predictions.run_failures,
        name="agents-prediction-failures",
    ),
    path("agents/predictions/compare/", predictions.compare, name="agents-predictions-compare"),
    path("projects/<slug:name>/agents/new/", agents.run_new, name="agents-new"),
    path("projects/<slug:name>/agents/limits/", agents.limits, name="agents-limits"),
    path("projects/<slug:name>/agents/endpoints/", agents.endpoints, name="agents-endpoints"),
    path("projects/<slug:name>/agents/endpoints/<int:endpoint_id>/", agents.endpoint_edit, name="agents-endpoint"),
    path(
        "projects/<slug:name>/agents/endpoints/<int:endpoint_id>/delete",
        agents.endpoint_delete,
        name="agents-endpoint-delete",
    ),
]
