"""Admin registrations. The raw capture (turns, blobs) is shown read-only: it is never edited in place."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from .actions import forms
from .models import (
    AgentRun,
    Assignment,
    Batch,
    Blob,
    Demonstration,
    Edit,
    Evaluation,
    ExportJob,
    Invitation,
    Membership,
    PayRates,
    Project,
    ProposedTask,
    SeedTask,
    SplitConfig,
    Task,
    Turn,
    VideoChunk,
    Website,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "title", "created_at"]
    search_fields = ["name", "title"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """The raw capture is immutable: viewable, never changed or added through the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def api_file_link(url: str, stored_name: str):
    """A stored file, linked where it is served: the API, with the reader's rights (``/media/`` is not served)."""
    return format_html('<a href="{}">{}</a>', url, stored_name) if stored_name else "–"


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ["seq", "type", "timestamp", "speaker", "utterance", "intent", "url"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Demonstration)
class DemonstrationAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "project",
        "status",
        "navigator",
        "category",
        "subcategory",
        "region",
        "instructor_sees_screen",
        "recording_start",
    ]
    list_filter = ["project", "status", "mode", "category", "region", "instructor_sees_screen"]
    search_fields = ["name", "task_description", "navigator__username"]
    readonly_fields = [
        "name",
        "client_id",
        "navigator",
        "recording_start",
        "recording_end",
        "user_agent",
        "recorder_version",
        "created_at",
        "updated_at",
    ]
    inlines = [TurnInline]


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ["demonstration", "seq", "type", "timestamp", "speaker", "intent", "url"]
    list_filter = ["type", "intent"]
    search_fields = ["demonstration__name", "utterance", "url"]
    list_select_related = ["demonstration"]


@admin.register(Blob)
class BlobAdmin(ReadOnlyAdmin):
    list_display = ["sha256", "media_type", "size", "created_at"]
    list_filter = ["media_type"]
    search_fields = ["sha256"]
    exclude = ["file"]
    readonly_fields = ["stored_file"]

    @admin.display(description="file")
    def stored_file(self, blob):
        return api_file_link(reverse("blob", args=[blob.sha256]), blob.file.name)


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    """Who invited whom and when; revoking is done on the navigator's page or in the side panel (it also tells the
    live session). The nonce is never shown: with the secret key it gives the code."""

    list_display = ["demonstration", "state", "created_by", "created_at", "expires_at", "used_by", "revoked_by"]
    list_select_related = ["demonstration", "created_by", "used_by", "revoked_by"]
    exclude = ["nonce"]
    search_fields = ["demonstration__name"]


@admin.register(SplitConfig)
class SplitConfigAdmin(admin.ModelAdmin):
    list_display = ["project", "seed", "valid_fraction", "test_iid_fraction", "test_task_fraction", "updated_at"]


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "format", "status", "progress", "owner", "created_at", "finished_at", "size"]
    list_filter = ["status", "format", "project"]
    exclude = ["file"]
    readonly_fields = ["archive"]

    @admin.display(description="file")
    def archive(self, job):
        name = job.file.name if job.is_downloadable else ""
        return api_file_link(reverse("export-download", args=[job.pk]), name)


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "format", "split", "status", "owner", "created_at"]
    list_filter = ["status", "format", "project"]
    exclude = ["predictions"]


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "solver", "split", "metric", "status", "progress", "owner", "created_at"]
    list_filter = ["status", "split", "project"]
    exclude = ["results"]


@admin.register(VideoChunk)
class VideoChunkAdmin(ReadOnlyAdmin):
    list_display = ["demonstration", "index", "blob", "started_at", "created_at"]
    list_select_related = ["demonstration"]


@admin.register(Edit)
class EditAdmin(ReadOnlyAdmin):
    """The review history: append-only; changed only through the review page (so undo stays consistent)."""

    list_display = ["demonstration", "revision", "kind", "author", "turn", "created_at"]
    list_filter = ["kind"]
    search_fields = ["demonstration__name", "author__username"]
    list_select_related = ["demonstration", "author"]


# --- Form tasks --------------------------------------------------------------------------------------------------


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    """Batches are uploaded through the web app, the API or ``import_turkingbench``; here their settings change
    (through the same action, so a new number of assignments per task re-decides completion)."""

    list_display = ["name", "project", "kind", "assignments_per_task", "published", "active", "completed", "created_at"]
    list_filter = ["project", "kind", "published", "active", "completed"]
    search_fields = ["name", "source_name", "project__name"]
    filter_horizontal = ["workers", "worker_groups"]
    readonly_fields = [
        "project",
        "kind",
        "source_name",
        "html_template",
        "template_fields",
        "has_submit_button",
        "uses_crowd_elements",
        "csv_filename",
        "csv_columns",
        "completed",
        "created_by",
        "created_at",
        # quality settings change on the batch's review page and the API (annotation.actions.quality.gold)
        "auto_approve_seconds",
        "gold_rate",
        "gold_threshold",
        "gold_min_answers",
        "grants_qualification",
        "grant_threshold",
    ]

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        fields = {
            name: form.cleaned_data[name] for name in form.changed_data if name not in ("workers", "worker_groups")
        }
        forms.do_update_batch_settings(obj, **fields)


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ["batch", "index", "taken", "submitted", "completed"]
    list_filter = ["completed", "batch__project"]
    search_fields = ["batch__name"]
    list_select_related = ["batch"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    """Assignments change only through the work queue (accept, submit, skip, return, expire)."""

    list_display = ["pk", "task", "worker", "status", "accepted_at", "submitted_at", "work_seconds"]
    list_filter = ["status", "task__batch__project"]
    search_fields = ["worker__username", "task__batch__name"]
    list_select_related = ["task__batch", "worker"]
    exclude = ["token_nonce"]


@admin.register(PayRates)
class PayRatesAdmin(admin.ModelAdmin):
    list_display = [
        "project",
        "currency",
        "recording_per_hour",
        "review_per_hour",
        "form_task_per_hour",
        "overhead_per_hour",
        "per_validated_demo",
        "per_submitted_assignment",
    ]


class SeedTaskInline(admin.TabularInline):
    model = SeedTask
    fields = ["text", "source"]
    extra = 1


@admin.register(Website)
class WebsiteAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "domain", "subdomain", "target_tasks", "created_at"]
    list_filter = ["project", "domain"]
    search_fields = ["name", "url", "domain", "subdomain"]
    inlines = [SeedTaskInline]


@admin.register(ProposedTask)
class ProposedTaskAdmin(admin.ModelAdmin):
    list_display = ["text", "website", "proposer", "status", "reviewer", "created_at"]
    list_filter = ["status", "website__project"]
    search_fields = ["text", "final_text", "website__name", "proposer__username"]
    readonly_fields = ["round", "website", "proposer", "text", "similar_to", "demo_task", "created_at"]
