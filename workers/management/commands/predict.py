"""`python manage.py predict`: a model's predictions for a WebLINX or Mind2Web export split, from an
OpenAI-compatible endpoint, as the predictions file ``manage.py evaluate`` takes (``workers.agents.predict``).

    manage.py predict --format weblinx|mind2web --data EXPORT --split S --out preds.json \\
        --url http://127.0.0.1:8000/v1 --model NAME [--key-env OPENAI_API_KEY] [--evaluate] \\
        [--turns official|all] [--rounding official|exact]
    manage.py predict ... --project P --endpoint NAME        # a model endpoint stored in the project

``preds.json`` is the list of predictions; ``preds.report.json`` holds the answers that could not be read
(``failures``, with the raw answer), the token and time usage and why the run stopped early, if it did. With
``--evaluate`` the predictions are scored at once (``preds.scores.json``, the aggregate printed), as ``evaluate``
scores them. WebLINX: ``--turns`` picks the turns asked about and scored, ``--rounding`` the evaluation's rounding,
both official by default. The key is read
from the environment variable ``--key-env`` names (a key on the command line would show in process lists) or
from the stored endpoint; it is never printed or written.
"""

import json
import os
from pathlib import Path
from types import SimpleNamespace

from django.conf import settings
from django.core.management import BaseCommand, CommandError

from agents.llm import Budget, ChatClient, Endpoint, EndpointError, endpoint_problems
from annotation.actions import ActionError
from annotation.actions.endpoints import check_endpoint_for_project, model_limits
from annotation.models import Project
from workers.agents.predict import FORMATS, PredictError, Settings, evaluate, predict
from workers.exports.metrics import MetricsError

from .evaluate import add_weblinx_protocol, format_value


class Command(BaseCommand):
    help = "Predict a WebLINX or Mind2Web export split with an OpenAI-compatible model; write the predictions."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--data", required=True, type=Path, help="The export directory.")
        parser.add_argument("--split", required=True, help="valid, test_iid, test_task, ...")
        parser.add_argument("--out", required=True, type=Path, help="Where to write the predictions (JSON list).")
        parser.add_argument("--url", help="The endpoint's base URL (…/v1).")
        parser.add_argument("--model", help="The model's name at the endpoint.")
        parser.add_argument("--key-env", default="OPENAI_API_KEY", help="Environment variable holding the key.")
        parser.add_argument("--project", help="With --endpoint: the project whose stored endpoint to use.")
        parser.add_argument("--endpoint", help="A model endpoint stored in --project (its URL, model and key).")
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--max-tokens", type=int, default=256)
        parser.add_argument("--timeout", type=float, default=60.0, help="Seconds per request.")
        parser.add_argument("--in-flight", type=int, default=None, help="Requests at once (PREDICT_IN_FLIGHT).")
        parser.add_argument("--max-requests", type=int, default=None, help="Budget: at most this many requests.")
        parser.add_argument("--candidates", type=int, default=Settings.candidates, help="Mind2Web: choices shown.")
        parser.add_argument("--html-chars", type=int, default=Settings.html_chars, help="Page characters kept.")
        parser.add_argument("--evaluate", action="store_true", help="Score the predictions at once.")
        add_weblinx_protocol(parser)

    def handle(self, *args, **options):
        for key in ("data", "out"):  # call_command passes keyword values as given
            options[key] = Path(options[key])
        endpoint = self.endpoint(options)
        out = options["out"]
        run_settings = Settings(
            candidates=options["candidates"],
            html_chars=options["html_chars"],
            turns=options["turns"],
            rounding=options["rounding"],
        )
        client = ChatClient(endpoint, budget=Budget(max_requests=options["max_requests"]))
        try:
            result = predict(options["format"], options["data"], options["split"], client, run_settings, self.progress)
        except PredictError as exc:
            raise CommandError(str(exc)) from exc
        except EndpointError as exc:
            raise CommandError(f"the endpoint failed: {exc.reason}") from exc
        finally:
            client.close()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result["predictions"], indent=1, ensure_ascii=False) + "\n")
        report = {key: value for key, value in result.items() if key != "predictions"}
        report_path = out.with_suffix(".report.json")
        report_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        usage = result["usage"]
        self.stdout.write(
            f"{len(result['predictions'])} predictions for {result['items']} "
            f"{'turns' if options['format'] == 'weblinx' else 'steps'} written to {out}; "
            f"{len(result['failures'])} answers could not be read (in {report_path}); "
            f"{usage['answers']} answers ({usage['cached']} cached), {usage['tokens_in']} tokens in, "
            f"{usage['tokens_out']} out"
        )
        if result["stopped"]:
            self.stdout.write(self.style.WARNING(f"stopped early: {result['stopped']}"))
        if options["evaluate"]:
            self.evaluate(options, result["predictions"], out, run_settings)

    def endpoint(self, options) -> Endpoint:
        in_flight = options["in_flight"] or settings.PREDICT_IN_FLIGHT
        sampling = {
            "temperature": options["temperature"],
            "max_tokens": options["max_tokens"],
            "timeout": options["timeout"],
            "in_flight": in_flight,
        }
        if options["endpoint"]:
            project = Project.objects.filter(name=options["project"] or "").first()
            if project is None:
                raise CommandError(f"--endpoint needs --project naming a project; no project {options['project']!r}")
            try:
                stored = check_endpoint_for_project(project, options["endpoint"])
            except ActionError as error:
                raise CommandError(error.detail) from error
            url, model, key = stored.url, stored.model, stored.key
            # a stored endpoint keeps the site's address policy and its project's reply cap; a --url is the
            # operator's own
            sampling["allow_private"] = settings.MODEL_ENDPOINTS_ALLOW_PRIVATE
            sampling["max_reply_bytes"] = model_limits(project).max_reply_bytes
        else:
            if not options["url"] or not options["model"]:
                raise CommandError("give --url and --model, or --project and --endpoint")
            url, model, key = options["url"], options["model"], os.environ.get(options["key_env"], "")
        problems = endpoint_problems(SimpleNamespace(url=url, model=model, key=key, **sampling))  # every bad one
        if problems:
            raise CommandError(
                "; ".join(f"--{name.replace('_', '-')}: {message}" for name, message in problems.items())
            )
        return Endpoint(url, model, key, **sampling)

    def evaluate(self, options, predictions: list, out: Path, run_settings: Settings) -> None:
        if not predictions:
            raise CommandError("nothing to evaluate: no answer could be read")
        try:
            scores = evaluate(options["format"], options["data"], options["split"], predictions, run_settings)
        except MetricsError as exc:
            raise CommandError(f"evaluation: {exc}") from exc
        scores_path = out.with_suffix(".scores.json")
        payload = {"format": options["format"], "split": options["split"], **scores}
        scores_path.write_text(json.dumps(payload, indent=2) + "\n")
        self.stdout.write(f"Scores written to {scores_path}")
        for key, value in scores["aggregate"].items():
            self.stdout.write(f"  {key:<20}  {format_value(value) if isinstance(value, float) else value:>7}")

    def progress(self, done: int, total: int) -> None:
        if done != getattr(self, "_shown", None) and (done == total or done % 25 == 0):
            self._shown = done
            self.stderr.write(f"answered {done}/{total}")
