"""Forms of the exports pages: the split configuration, an export, an evaluation. They check types and shapes; the
rules live in ``annotation.actions.exports`` and the API's serializers, which the views call."""

from django import forms

from ...actions.exports.turkingbench import DEFAULT_INCLUDE_GOLD, DEFAULT_REVIEW_STATES
from ...lib.splits import SPLITS
from ...models import EXPORTABLE_STATUSES, ExportFormat
from ..manage.forms import lines


class SplitConfigForm(forms.Form):
    """The split configuration as a person types it; lists one per line. Validated by the API's serializer."""

    seed = forms.IntegerField()
    valid_fraction = forms.FloatField(help_text="WebLINX valid, 0 to 1.")
    test_iid_fraction = forms.FloatField(help_text="WebLINX test_iid, 0 to 1.")
    test_task_fraction = forms.FloatField(help_text="Mind2Web test_task, 0 to 1.")
    held_out_websites = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_subcategories = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_regions = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_domains = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text="Mind2Web: held-out categories."
    )

    LISTS = ("held_out_websites", "held_out_subcategories", "held_out_regions", "held_out_domains")

    @classmethod
    def for_config(cls, config):
        initial = {name: getattr(config, name) for name in ("seed", "valid_fraction", "test_iid_fraction")}
        initial["test_task_fraction"] = config.test_task_fraction
        initial.update({name: "\n".join(getattr(config, name)) for name in cls.LISTS})
        return cls(initial=initial)

    def as_data(self) -> dict:
        data = dict(self.cleaned_data)
        data.update({name: lines(data[name]) for name in self.LISTS})
        return data


STATUS_CHOICES = [(status.value, status.label) for status in EXPORTABLE_STATUSES]


REVIEW_STATE_CHOICES = [
    ("approved", "Approved"),
    ("pending", "Pending (submitted, not yet reviewed)"),
    ("rejected", "Rejected"),
]


class ExportForm(forms.Form):
    """An export: the format, then the filters of that format (demo statuses for WebLINX and Mind2Web; batches,
    review states, gold rows and exact cells for TurkingBench). The page shows only the chosen format's filters."""

    format = forms.ChoiceField(choices=ExportFormat.choices)
    splits = forms.CharField(
        required=False,
        help_text="Splits to include, comma-separated (empty = all). WebLINX: "
        + ", ".join(SPLITS["weblinx"])
        + "; Mind2Web: "
        + ", ".join(SPLITS["mind2web"])
        + "; TurkingBench: the names of the project's split lists (e.g. evaluation_tasks_easy).",
    )
    statuses = forms.MultipleChoiceField(
        choices=STATUS_CHOICES, initial=["validated"], widget=forms.CheckboxSelectMultiple, required=False
    )
    batches = forms.TypedMultipleChoiceField(
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The form batches whose batch.csv the export writes (all of them to start with).",
    )
    review_states = forms.MultipleChoiceField(
        choices=REVIEW_STATE_CHOICES,
        initial=list(DEFAULT_REVIEW_STATES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Which workers' submitted answers become rows of batch.csv, by the requester's review: approved "
        "and pending (not yet reviewed) by default; rejected work only when you tick it.",
    )
    include_gold = forms.BooleanField(
        required=False,
        initial=DEFAULT_INCLUDE_GOLD,
        label="Include gold rows",
        help_text="Also write each batch's gold rows (the known answers imported with the batch, one row per "
        "annotator of the file) before the workers' rows; on by default, so an imported TurkingBench task exports "
        "back with its answers. Workers' answers to gold tasks are rows like any other (the review states choose "
        "them).",
    )
    exact_cells = forms.BooleanField(
        required=False,
        initial=False,
        label="Exact cells (for TurkingBench's own tools)",
        help_text="Off (the default): a cell beginning with = + - or @ is written with a leading ' so that a "
        "spreadsheet shows it as text instead of running it; the platform's own readers take the ' off, but "
        "TurkingBench's scripts and pandas see it (e.g. -3_Very_Informal becomes '-3_Very_Informal). On: every cell "
        "exactly as stored, as TurkingBench's tools expect; do not open that batch.csv in a spreadsheet, a worker's "
        "answer could run there as a formula.",
    )
    archive_format = forms.ChoiceField(choices=[("tar.gz", "tar.gz"), ("zip", "zip")])

    def __init__(self, *args, batches=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["batches"].choices = [(batch.pk, batch.name) for batch in batches]
        self.fields["batches"].initial = [batch.pk for batch in batches]

    def split_list(self) -> list[str]:
        return [split.strip() for split in self.cleaned_data["splits"].split(",") if split.strip()]

    def clean(self):
        data = super().clean()
        chosen_tb = data.get("format") == ExportFormat.TURKINGBENCH
        if chosen_tb and self.fields["batches"].choices and not data.get("batches"):
            self.add_error("batches", "Choose at least one batch.")
        return data

    def export_options(self) -> dict:
        """The chosen format's filters, as ``do_create_export`` takes them (the other format's are not sent)."""
        data = self.cleaned_data
        if data["format"] == ExportFormat.TURKINGBENCH:
            names = ("batches", "review_states", "include_gold", "exact_cells")
            return {name: data[name] for name in names}
        return {"statuses": data["statuses"]}


class EvaluationForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, label) for name, label in ExportFormat.choices if name in SPLITS])
    split = forms.ChoiceField(choices=[(s, s) for s in dict.fromkeys(SPLITS["weblinx"] + SPLITS["mind2web"])])
    predictions = forms.FileField(help_text="A JSON list: WebLINX results.json rows, or Mind2Web step predictions.")
