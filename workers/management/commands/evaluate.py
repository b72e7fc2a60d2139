"""`python manage.py evaluate`: score model predictions against an exported benchmark split, offline.

    manage.py evaluate --format weblinx --data EXPORT --split valid --predictions results.json --out scores.json
    manage.py evaluate --format mind2web --data EXPORT --split test_task --predictions preds.json --out scores.json
    manage.py evaluate --format turkingbench --data DIR --predictions preds.json --out scores.json [--metric paper]

WebLINX: EXPORT holds ``splits.json`` and ``demonstrations/``; predictions are the official results.json list of
``{demo_name, turn_index, output_predicted}``, scored by the official protocol (``--turns official``: only the
turns the official code predicts; ``--rounding official``: turn metrics to 2 decimals) unless told otherwise.
Mind2Web: EXPORT holds ``<split>.json`` record lists; predictions
are ``{annotation_id, action_index, backend_node_id, operation: {op, value}}``. The scores (``workers.exports.metrics``)
are written as JSON and the aggregate is printed. TurkingBench: DIR holds ``tasks/<name>/template.html +
batch.csv`` (and ``splits/``); predictions are ``{task, instance, fields}`` entries, applied on the real pages in
headless Chromium and scored by ``agents`` (official scorer, or ``--metric paper``); ``--split`` is optional.
"""

import json
from pathlib import Path

from django.core.management import BaseCommand, CommandError

from annotation.lib.weblinx_turns import DEFAULT_TURN_SET, TURN_SETS
from workers.exports.metrics import MetricsError, mind2web, weblinx

FORMATS = ("weblinx", "mind2web", "turkingbench")


def read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CommandError(f"{what} {path} does not exist") from exc
    except (OSError, ValueError) as exc:
        raise CommandError(f"{what} {path} is not readable JSON: {exc}") from exc


def mind2web_records(data: Path, split: str) -> list:
    """The records of ``data/<split>.json``; CommandError naming the splits present otherwise."""
    path = data / f"{split}.json"
    if not path.is_file():
        present = sorted(candidate.stem for candidate in data.glob("*.json"))
        raise CommandError(f"unknown split {split!r}; {data} has: {', '.join(present) or 'no <split>.json files'}")
    return read_json(path, "split file")


def add_weblinx_protocol(parser) -> None:
    """``--turns`` and ``--rounding``: the WebLINX protocol, official by default (``predict`` takes them too)."""
    parser.add_argument(
        "--turns",
        choices=TURN_SETS,
        default=DEFAULT_TURN_SET,
        help="WebLINX: official = the turns the official code predicts; all = every turn but the instructor's chat.",
    )
    parser.add_argument(
        "--rounding",
        choices=weblinx.ROUNDINGS,
        default="official",
        help="WebLINX: official = turn metrics to 2 decimals, as the official pipeline's CSV; exact = every digit.",
    )


def format_value(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = "Score model predictions against a WebLINX or Mind2Web export split; write the scores as JSON."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--format", required=True, choices=FORMATS, help="Benchmark format.")
        parser.add_argument("--data", required=True, type=Path, help="The export directory.")
        parser.add_argument(
            "--split",
            help="Split to score (valid, test_iid, test_task ...); TurkingBench: optional, restricts the tasks.",
        )
        parser.add_argument("--predictions", required=True, type=Path, help="JSON list of predictions.")
        parser.add_argument("--out", required=True, type=Path, help="Where to write the scores (JSON).")
        add_weblinx_protocol(parser)
        parser.add_argument(
            "--metric",
            choices=("official", "paper"),
            default="official",
            help="TurkingBench: the official scorer (default) or the paper's metric; never mixed.",
        )

    def handle(self, *args, **options):
        # call_command("evaluate", data="/dir") passes keyword values as given, not through argparse's type=Path
        for key in ("data", "predictions", "out"):
            options[key] = Path(options[key])
        data, split = options["data"], options["split"]
        if not data.is_dir():
            raise CommandError(f"data directory {data} does not exist")
        predictions = read_json(options["predictions"], "predictions file")
        if options["format"] == "turkingbench":
            return self.turkingbench(data, split, predictions, options)
        if not split:
            raise CommandError(f"--split is required for {options['format']}")
        try:
            if options["format"] == "weblinx":
                protocol = {"turns": options["turns"], "rounding": options["rounding"]}
                result = weblinx.evaluate(data, split, predictions, **protocol)
            else:
                result = mind2web.evaluate(mind2web_records(data, split), predictions)
        except MetricsError as exc:
            raise CommandError(str(exc)) from exc
        self.write(options["out"], {"format": options["format"], "split": split, **result})
        self.print_table(options["format"], split, result)

    def write(self, out: Path, result: dict) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        self.stdout.write(f"Scores written to {out}")

    def turkingbench(self, data: Path, split, predictions, options) -> None:
        from agents.offline import PredictionError, evaluate
        from agents.turkle import Dataset

        try:
            dataset = Dataset(data)
            result = evaluate(dataset, predictions, metric=options["metric"], split=split, progress=self.progress)
        except (FileNotFoundError, PredictionError) as exc:
            raise CommandError(str(exc)) from exc
        self.write(options["out"], {"format": "turkingbench", "split": split, **result})
        overall = result["overall"]
        self.stdout.write(f"TurkingBench ({result['metric']} metric): {len(result['instances'])} instances")
        width = max(len(task) for task in result["tasks"]) if result["tasks"] else 0
        for task, table in result["tasks"].items():
            self.stdout.write(f"  {task:<{width}}  {format_value(table['all']):>7}")
        summary = result["summary"]
        label = f"overall (mean over {summary['tasks_scored']} of {summary['tasks']} tasks)"
        self.stdout.write(f"  {label:<{width}}  {format_value(overall):>7}")
        label = f"mean over {summary['instances']} instances"
        self.stdout.write(f"  {label:<{width}}  {format_value(summary['instance_mean']):>7}")
        for row in summary["tasks_unscorable"]:
            self.stdout.write(f"  left out: {row['task']}: {row['reason']}")

    def progress(self, done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            self.stderr.write(f"scored {done}/{total} instances")

    def print_table(self, format_name: str, split: str, result: dict) -> None:
        aggregate = result["aggregate"]
        if format_name == "weblinx":
            title = (
                f"WebLINX {split} ({result['turns']} turns, {result['rounding']} rounding): {aggregate['turns']} turns "
                f"scored, {len(result['dropped'])} predictions dropped, {len(result['outside'])} outside the turns"
            )
        else:
            title = f"Mind2Web {split}: {aggregate['tasks']} tasks, {aggregate['steps']} steps (macro averages)"
        rows = [(key, value) for key, value in aggregate.items() if key not in ("turns", "tasks", "steps")]
        width = max(len(key) for key, _ in rows)
        self.stdout.write(title)
        for key, value in rows:
            self.stdout.write(f"  {key:<{width}}  {format_value(value):>7}")
