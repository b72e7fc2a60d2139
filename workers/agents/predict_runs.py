"""What a prediction-run job does on the worker (``docs/agents.md``, "Predictions for WebLINX and Mind2Web"):
export the run's split with the exporter researchers download, ask the project's model endpoint for every turn or
step (``workers.agents.predict``, ``in_flight`` requests at once), keep the predictions, the answers it could not
read and the usage, and with ``evaluate`` score the predictions on the same export. A cancel is noticed within a
heartbeat, even while every request hangs: the job ends then, nothing more is asked or tried again; an endpoint
that cannot be used fails the run with its reason (never the key, never what answered); a split with nothing to
predict fails it saying so."""

import logging
from pathlib import Path

from agents.llm import ChatClient, EndpointError
from annotation.actions.predictions import chat_endpoint
from annotation.models import JobStatus, PredictionRun

from ..exports import dataset
from ..exports.exporters import get_exporter
from ..exports.jobs import count_demos, tree_sha256
from ..runners import Progress, finish_clean, run_job
from .predict import Settings, evaluate, predict

log = logging.getLogger(__name__)


def execute(run: PredictionRun, workdir: Path) -> None:
    out, statuses = workdir / "data", dataset.DEFAULT_STATUSES
    total = count_demos(run.project, run.format, statuses, [run.split])
    exporting = Progress(run, 0, 0.2)
    exported = []
    demos = counted(dataset.export_demos(run.project, run.format, statuses, [run.split]), exported)
    with dataset.storage_blobs(workdir / "blobs") as blobs:
        get_exporter(run.format).export(demos, out, blobs, lambda done: exporting(done / max(1, total)))
    if not exported:
        error = f"nothing to predict: split {run.split!r} has no validated demonstrations (any more)"
        finish_clean(run, workdir, JobStatus.FAILED, error=error)
        return
    asking = Progress(run, 0.2, 0.7)
    try:
        client = ChatClient(chat_endpoint(run))
    except (EndpointError, ValueError) as error:
        finish_clean(run, workdir, JobStatus.FAILED, error=f"the model endpoint cannot be used: {error}")
        return
    try:
        made = predict(
            run.format,
            out,
            run.split,
            client,
            Settings(candidates=run.candidates, turns=run.turns),
            lambda done, total: asking(done / max(1, total)),
        )
    except EndpointError as error:
        finish_clean(run, workdir, JobStatus.FAILED, error=f"the model endpoint failed: {error.reason}")
        return
    finally:
        client.close()
    if not made["items"]:
        what = f"{run.turns} turns to predict" if run.format == "weblinx" else "steps"
        error = (
            f"nothing to predict: the {run.format} export of split {run.split!r} has no {what} (no validated "
            "demonstration of the split has any)"
        )
        finish_clean(run, workdir, JobStatus.FAILED, error=error)
        return
    results = {}
    if run.evaluate and made["predictions"]:
        Progress(run, 0.9, 0)(1, force=True)
        results = evaluate(run.format, out, run.split, made["predictions"], Settings(turns=run.turns))
        results["coverage"] = {"items": made["items"], "predicted": len(made["predictions"])}
    finish_clean(
        run,
        workdir,
        JobStatus.DONE,
        predictions=made["predictions"],
        failures=made["failures"],
        usage={**made["usage"], "items": made["items"]},
        results=results,
        stopped=made["stopped"] or "",
        data_version=tree_sha256(out),
    )


def counted(demos, seen: list):
    """``demos`` as they go by, each noted in ``seen``."""
    for demo in demos:
        seen.append(demo.name)
        yield demo


def run_prediction(run_id: int) -> None:
    run_job(PredictionRun, run_id, execute)
