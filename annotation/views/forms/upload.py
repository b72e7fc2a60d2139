"""The batch upload form of the web app (Turkle/MTurk style) and the one call it makes; the REST API
(``POST /api/batches/``) goes through the same ``parse_upload`` and action. A batch uploaded here starts unpublished:
its page lists what to check (gold, qualifications, ...) beside the Publish button."""

from django import forms

from ...actions import ActionError
from ...actions.forms import (
    BatchSettings,
    check_project_for_batches,
    do_create_form_batch,
    managed_projects,
    parse_upload,
    warnings_for,
)


class BatchUploadForm(forms.Form):
    project = forms.ChoiceField(help_text="A project where you are a researcher or admin.")
    name = forms.CharField(max_length=200, required=False, help_text="Default: the CSV's file name.")
    template = forms.FileField(help_text="The HTML template, with ${column} placeholders.")
    csv = forms.FileField(label="CSV of inputs", help_text="One task per row; a header naming the columns.")
    assignments_per_task = forms.IntegerField(min_value=1, max_value=1000, initial=1)
    allotted_minutes = forms.IntegerField(
        min_value=1, max_value=525600, initial=60, label="Time per assignment (minutes)"
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Instructions")

    def __init__(self, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.user, self.too_large = user, False
        self.fields["project"].choices = [(p.name, p.name) for p in managed_projects(user)]

    def add_action_error(self, error: ActionError) -> None:
        self.too_large = error.status == 413
        fields = [e.get("field") for e in error.errors if e.get("field") in self.fields]
        if fields:
            for entry in error.errors:
                self.add_error(entry["field"] if entry.get("field") in self.fields else None, entry["message"])
        else:
            self.add_error(None, error.detail)


def create_batch(user, form: BatchUploadForm):
    """Check and store the uploaded batch; returns ``(batch, warnings)``."""
    data = form.cleaned_data
    project = check_project_for_batches(user, data["project"])
    parsed = parse_upload(data["template"], data["csv"])
    name = data["name"] or (data["csv"].name or "batch").removesuffix(".csv")
    settings_ = BatchSettings(
        assignments_per_task=data["assignments_per_task"],
        allotted_seconds=data["allotted_minutes"] * 60,
        published=False,
        description=data["description"],
    )
    batch = do_create_form_batch(user, project, name, parsed, settings_)
    return batch, warnings_for(parsed)
