"""`python manage.py generate_seed_tasks --project NAME [--website NAME ...] [--count N]`: seed tasks for a
project's websites from the OpenAI-compatible chat endpoint at ``SEED_TASKS_LLM_URL`` (off when unset)."""

from django.core.management import BaseCommand, CommandError

from annotation.actions import ActionError
from annotation.actions.mind2web import do_generate_seed_tasks
from annotation.models import Website


class Command(BaseCommand):
    help = (
        "Ask the configured language model (SEED_TASKS_LLM_URL, SEED_TASKS_LLM_MODEL, SEED_TASKS_LLM_KEY) for seed "
        "tasks exercising different functions of each website (SEED_TASKS_PER_WEBSITE, default 50); keeps new ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--website", action="append", default=[], help="Only this website (repeatable).")
        parser.add_argument("--count", type=int, default=None, help="Tasks to ask for per website.")

    def handle(self, *args, project, website, count, **options):
        websites = Website.objects.filter(project__name=project).select_related("project").order_by("name")
        if website:
            websites = websites.filter(name__in=website)
        if not websites.exists():
            raise CommandError(f"no website to generate seed tasks for in project {project!r}")
        for site in websites:
            try:
                created = do_generate_seed_tasks(site, count)
            except ActionError as error:
                raise CommandError(f"{site.name}: {error.detail}") from None
            self.stdout.write(f"{site.name}: {len(created)} new seed tasks")
