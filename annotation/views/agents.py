"""The results of agent runs in the web app (session): the runs you may read, one run's score table (task × field type,
``all``, overall), one instance's fields with the page screenshot and the gold answers, and two runs side by side.
Researchers and admins of the run's project only; its other roles get a 403, anyone else a 404. A queued or running
run is cancelled from its page by the one who started it or a project admin (403 for other researchers), and a
failed, cancelled or budget-stopped run resumed by them the same way. A project's researchers and admins also add
model endpoints and use any of them (the key is write-only: never filled back); only an endpoint's owner or a project
admin changes or removes it (others read it, 403 on a change). They read the project's model limits, which its admins
change, and start a run from a form (other roles 403, people outside the project 404). Thin: ``actions.agents``,
``actions.endpoints``, ``actions.exports.jobs``."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..actions import ValidationFailed
from ..actions import agents as actions
from ..actions import endpoints as endpoint_actions
from ..actions.agents import RUN_MODEL_SETTINGS
from ..actions.endpoints import LIMITS, URL_CHANGE_NOTE
from ..actions.errors import Conflict
from ..actions.exports import jobs
from ..lib.redact import without_userinfo
from ..models import AgentMetric, ModelEndpoint, ModelLimits, Project, Role
from .exports.pages import cancel_from_page
from .page_errors import action_errors, refusals_as_messages, refusals_on_form

RUNS_SHOWN = 100
ANSWER_SHOWN = 5_000  # characters of a model's answer an instance's page shows; the whole is its download
VALUE_SHOWN = 1_000  # characters of a field's value, call or error an instance's page shows


# --- The pages' forms: types only; the rules (ranges, limits, the solver allow-list, the endpoint, the prompt
# template) live in ``actions.agents`` and ``actions.endpoints``, which the views call, as the API does. ---------

SOLVERS = ("oracle", "do-nothing", "llm")
KEY_HELP = "Stored as a secret and never shown back."


class UrlWithoutCredentials(forms.TextInput):
    """A URL shown back on a refused form without the credentials someone typed into it (``http://user:KEY@host``
    is refused, and the key must not come back in the page)."""

    def format_value(self, value):
        return without_userinfo(super().format_value(value))


class EndpointForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Unique in the project, e.g. local-vllm.")
    url = forms.CharField(
        max_length=500, widget=UrlWithoutCredentials, help_text="The base URL, e.g. http://127.0.0.1:8000/v1."
    )
    model = forms.CharField(max_length=200, help_text="The model's name at the endpoint.")
    key = forms.CharField(
        required=False, max_length=4096, strip=True, widget=forms.PasswordInput(render_value=False), help_text=KEY_HELP
    )
    vision = forms.BooleanField(required=False, help_text="The model reads images: prompts include a screenshot.")


class EndpointChangeForm(forms.Form):
    url = forms.CharField(max_length=500, widget=UrlWithoutCredentials, help_text=URL_CHANGE_NOTE)
    model = forms.CharField(max_length=200)
    key = forms.CharField(
        required=False,
        max_length=4096,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored key. " + KEY_HELP,
    )
    remove_key = forms.BooleanField(required=False, label="Remove the stored key")
    vision = forms.BooleanField(required=False)

    def changes(self) -> dict:
        """The action's changes: a key typed replaces the stored one, none keeps it, ``remove_key`` removes it."""
        data = self.cleaned_data
        key = "" if data["remove_key"] else (data["key"] or None)
        return {"url": data["url"], "model": data["model"], "vision": data["vision"], "key": key}


def optional_int(help_text="") -> forms.IntegerField:
    return forms.IntegerField(required=False, help_text=help_text)


class ModelLimitsForm(forms.Form):
    """The project's model limits (every one required: the page shows them all)."""

    max_tokens = forms.IntegerField(label="Tokens per answer", help_text="The most max_tokens a run may ask.")
    max_in_flight = forms.IntegerField(label="Requests in flight", help_text="The most model requests at once.")
    max_browsers = forms.IntegerField(label="Browsers", help_text="The most browsers of an llm agent run.")
    max_timeout = forms.FloatField(label="Seconds per request", help_text="The most a run may wait for an answer.")
    max_instances = forms.IntegerField(
        label="Instances per run", help_text="The most instances an llm agent run opens (over all its tasks)."
    )
    max_reply_bytes = forms.IntegerField(
        label="Bytes of a reply", help_text="A longer reply is cut there and fails its call."
    )

    @staticmethod
    def initial_from(limits: ModelLimits) -> dict:
        return {name: getattr(limits, name) for name in LIMITS}


class AgentRunForm(forms.Form):
    split = forms.ChoiceField(
        error_messages={"required": "This project has no form batches to run on yet: upload or import one first."},
        help_text="The project's splits that have form batches (how many in brackets).",
    )
    solver = forms.CharField(
        initial="oracle", max_length=200, help_text="oracle, do-nothing, llm, or python:module:Class (allow-listed)."
    )
    instances = optional_int("Instances per task (empty: every instance).")
    seed = forms.IntegerField(initial=0)
    metric = forms.ChoiceField(choices=AgentMetric.choices, initial=AgentMetric.OFFICIAL)
    browsers = optional_int("Headless browsers at once (empty: the worker's cores).")
    # The llm solver's settings (empty for the others).
    endpoint = forms.ChoiceField(required=False, help_text="llm: a model endpoint of the project.")
    temperature = forms.FloatField(required=False, help_text="llm (empty: 0).")
    max_tokens = optional_int("llm: per answer (empty: 1024).")
    in_flight = forms.IntegerField(
        required=False, label="Requests in flight", help_text="llm: model requests at once (empty: browsers)."
    )
    timeout = forms.FloatField(required=False, help_text="llm: seconds per request (empty: 60).")
    budget_requests = optional_int("llm: at most this many model requests (empty: no limit).")
    budget_tokens = optional_int("llm: at most this many tokens (empty: no limit).")
    prompt_template = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="llm: empty for the default prompt; must contain {fields} (docs/agents.md).",
    )

    MODEL = RUN_MODEL_SETTINGS  # the llm settings, as the action names them

    def __init__(self, *args, endpoints=(), splits=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].choices = [("", "—")] + [(name, name) for name in endpoints]
        self.fields["split"].choices = [(name, f"{name} ({size})") for name, size in splits]

    def as_action(self) -> dict:
        data = self.cleaned_data
        return {
            "split": data["split"],
            "solver": data["solver"].strip(),
            "instances_per_task": data["instances"],
            "seed": data["seed"],
            "metric": data["metric"],
            "browsers": data["browsers"],
            **{name: data[name] for name in self.MODEL},
        }


@login_required
@require_GET
def run_list(request):
    runs = actions.runs_readable_by(request.user).order_by("-created_at")[:RUNS_SHOWN]
    projects = Project.objects.for_user(request.user, jobs.EXPORT_ROLES).order_by("name")
    return render(request, "agents/runs.html", {"runs": runs, "projects": projects})


@login_required
@require_GET
@action_errors
def run_detail(request, run_id: int):
    run = actions.check_run_readable(request.user, run_id)
    others = actions.runs_readable_by(request.user).filter(project=run.project).exclude(pk=run.pk)[:RUNS_SHOWN]
    context = {
        "run": run,
        "table": actions.score_table(run),
        "instances": actions.run_instances(run),
        "others": others,
        "may_start": True,  # whoever reads a run is a researcher or admin of its project
        "may_cancel": jobs.may_cancel(request.user, run),
        "may_resume": jobs.may_cancel(request.user, run) and actions.may_resume(run),
    }
    return render(request, "agents/run.html", context)


@login_required
@require_POST
@action_errors
def run_cancel(request, run_id: int):
    """Cancel a queued or running run (its owner or a project admin), then back to its page."""
    run = actions.check_run_readable(request.user, run_id)
    cancel_from_page(request, run, "Cancelled: the instances it finished are kept; it stores no more.")
    return redirect("agents-run", run_id=run.pk)


@login_required
@require_POST
@action_errors
def run_resume(request, run_id: int):
    """Queue a failed, cancelled or budget-stopped run again (its owner or a project admin), then back to its page."""
    run = actions.check_run_readable(request.user, run_id)
    with refusals_as_messages(request, Conflict):
        actions.do_resume_agent_run(request.user, run)
        messages.success(request, "Resumed: the run goes on where it stopped; the model is not asked again.")
    return redirect("agents-run", run_id=run.pk)


@login_required
@require_GET
@action_errors
def instance_detail(request, run_id: int, row_id: int):
    """An instance's fields and screenshot, and (llm) the model's answer cut at ``ANSWER_SHOWN`` characters with a
    download of the whole as stored, and what of it no field took."""
    row = actions.check_instance_readable(request.user, run_id, row_id)
    context = {
        "run": row.run,
        "row": row,
        "fields": row.fields.order_by("pk"),
        "answer_shown": row.answer[:ANSWER_SHOWN],
        "answer_cut": len(row.answer) > ANSWER_SHOWN,
        "value_shown": VALUE_SHOWN,
    }
    return render(request, "agents/instance.html", context)


@login_required
@require_GET
@action_errors
def instance_answer(request, run_id: int, row_id: int):
    """The model's whole answer for the instance, as stored (the key masked, at most ``MAX_ANSWER_CHARS``), as a
    text file: the run's readers only (the project's researchers and admins)."""
    row = actions.check_instance_readable(request.user, run_id, row_id)
    response = HttpResponse(row.answer, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="agent-run-{row.run_id}-instance-{row.pk}-answer.txt"'
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_GET
@action_errors
def instance_screenshot(request, run_id: int, row_id: int):
    row = actions.check_instance_readable(request.user, run_id, row_id)
    if not row.screenshot:
        raise Http404("this instance has no screenshot")
    response = FileResponse(row.screenshot.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
@require_GET
@action_errors
def compare(request):
    ids = [request.GET.get("a", ""), request.GET.get("b", "")]
    missing = [name for name, value in zip("ab", ids, strict=True) if not value.isdecimal()]
    if missing:
        detail = f"Compare takes two run ids, ?a=<run>&b=<run>: choose run {' and '.join(missing)}."
        raise ValidationFailed(detail, [{"field": name, "message": "required"} for name in missing])
    first, second = (actions.check_run_readable(request.user, int(value)) for value in ids)
    table = actions.compare_tables(actions.score_table(first), actions.score_table(second))
    samples = actions.sample_differences(first, second)
    for row in table["rows"]:
        row["other_instances"] = row["task"] in samples["tasks"]
    context = {"a": first, "b": second, "table": table, "samples": samples}
    return render(request, "agents/compare.html", context)


# --- A project's model endpoints and a new run (researchers and admins of the project) ------------------


def agents_project(request, name: str):
    """``(project, your role)`` for a researcher or admin of the project; 404 outside it, 403 for other roles."""
    project = endpoint_actions.check_project_for_models(request.user, name)
    return project, project.role_of(request.user)


def project_endpoint(project, endpoint_id: int) -> ModelEndpoint:
    return get_object_or_404(ModelEndpoint.objects.filter(project=project), pk=endpoint_id)


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def endpoints(request, name: str):
    """The project's model endpoints (whether a key is stored, never the key) and a form to add one."""
    project, role = agents_project(request, name)
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with refusals_on_form(form):
            endpoint = endpoint_actions.do_create_model_endpoint(request.user, project, **form.cleaned_data)
            messages.success(request, f"Model endpoint {endpoint.name} added.")
            return redirect("agents-endpoints", name=project.name)
    listed = list(ModelEndpoint.objects.filter(project=project).select_related("owner", "project"))
    for endpoint in listed:
        endpoint.may_change = endpoint_actions.may_change_endpoint(request.user, endpoint)
    context = {"project": project, "project_role": role, "tab": "agents", "form": form, "endpoints": listed}
    return render(request, "agents/endpoints.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def endpoint_edit(request, name: str, endpoint_id: int):
    """An endpoint: its owner and the project's admins change its URL, model, vision or key (an empty key keeps the
    stored one; a new URL without a key removes it, and the page says so); other researchers read it."""
    project, role = agents_project(request, name)
    endpoint = project_endpoint(project, endpoint_id)
    if request.method == "POST":
        endpoint_actions.check_endpoint_changeable(request.user, endpoint)
    initial = {"url": endpoint.url, "model": endpoint.model, "vision": endpoint.vision}
    form = EndpointChangeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        with refusals_on_form(form):
            _, key_removed = endpoint_actions.do_change_model_endpoint(request.user, endpoint, **form.changes())
            saved = f"Model endpoint {endpoint.name} saved."
            if key_removed:
                messages.warning(
                    request,
                    f"{saved} Its URL changed, so its stored key was removed: give the key "
                    "again for the new URL if it needs one.",
                )
            else:
                messages.success(request, saved)
            return redirect("agents-endpoints", name=project.name)
    endpoint.refresh_from_db()
    context = {
        "project": project,
        "project_role": role,
        "tab": "agents",
        "form": form,
        "endpoint": endpoint,
        "may_change": endpoint_actions.may_change_endpoint(request.user, endpoint),
        "url_change_note": endpoint_actions.URL_CHANGE_NOTE,
    }
    return render(request, "agents/endpoint.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
@action_errors
def endpoint_delete(request, name: str, endpoint_id: int):
    """Remove an endpoint (its owner or a project admin; runs that used it keep their results)."""
    project, _ = agents_project(request, name)
    endpoint = project_endpoint(project, endpoint_id)
    endpoint_actions.do_delete_model_endpoint(request.user, endpoint)
    messages.success(request, f"Model endpoint {endpoint.name} removed.")
    return redirect("agents-endpoints", name=project.name)


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def limits(request, name: str):
    """The project's model limits: its researchers read them, its admins change them."""
    project, role = agents_project(request, name)
    current = endpoint_actions.model_limits(project)
    if request.method == "POST":
        endpoint_actions.check_limits_changeable(request.user, project)
    form = ModelLimitsForm(request.POST or None, initial=ModelLimitsForm.initial_from(current))
    if request.method == "POST" and form.is_valid():
        with refusals_on_form(form):
            endpoint_actions.do_change_model_limits(request.user, project, **form.cleaned_data)
            messages.success(request, "Model limits saved: runs started from now on are checked against them.")
            return redirect("agents-limits", name=project.name)
    context = {
        "project": project,
        "project_role": role,
        "tab": "agents",
        "form": form,
        "limits": current,
        "may_change": role == Role.ADMIN,
    }
    return render(request, "agents/limits.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def run_new(request, name: str):
    """Start an agent run on the project's form tasks (the API's checks); then its page."""
    project, role = agents_project(request, name)
    names = list(ModelEndpoint.objects.filter(project=project).values_list("name", flat=True))
    splits = actions.run_splits(project)
    form = AgentRunForm(
        request.POST or None, endpoints=names, splits=splits, initial={"split": actions.default_split(project, splits)}
    )
    if request.method == "POST" and form.is_valid():
        with refusals_on_form(form):
            run = actions.do_create_agent_run(request.user, project, **form.as_action())
            messages.success(request, "Run queued: a worker starts it; its scores fill in as it goes.")
            return redirect("agents-run", run_id=run.pk)
    context = {
        "project": project,
        "project_role": role,
        "tab": "agents",
        "form": form,
        "splits": splits,
        "solvers": SOLVERS,
        "endpoints": names,
        "limits": endpoint_actions.model_limits(project),
    }
    return render(request, "agents/new.html", context, status=400 if form.errors else 200)
