"""Admin registrations. The raw capture (turns, blobs) is shown read-only: it is never edited in place."""

from django.contrib import admin

from .models import (
    Blob,
    Demonstration,
    Edit,
    Evaluation,
    ExportJob,
    Membership,
    Project,
    SplitConfig,
    Turn,
    VideoChunk,
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


@admin.register(SplitConfig)
class SplitConfigAdmin(admin.ModelAdmin):
    list_display = ["project", "seed", "valid_fraction", "test_iid_fraction", "test_task_fraction", "updated_at"]


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "format", "status", "progress", "owner", "created_at", "finished_at", "size"]
    list_filter = ["status", "format", "project"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "format", "split", "status", "owner", "created_at"]
    list_filter = ["status", "format", "project"]
    exclude = ["predictions"]


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
