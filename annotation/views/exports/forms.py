"""Forms of the exports pages: the split configuration, an export, an evaluation. They check types and shapes; the
rules live in ``annotation.actions.exports`` and the API's serializers, which the views call."""

from django import forms

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


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=ExportFormat.choices)
    splits = forms.CharField(
        required=False,
        help_text="Splits to include, comma-separated (empty = all). WebLINX: "
        + ", ".join(SPLITS["weblinx"])
        + "; Mind2Web: "
        + ", ".join(SPLITS["mind2web"])
        + ".",
    )
    statuses = forms.MultipleChoiceField(
        choices=STATUS_CHOICES, initial=["validated"], widget=forms.CheckboxSelectMultiple
    )
    archive_format = forms.ChoiceField(choices=[("tar.gz", "tar.gz"), ("zip", "zip")])

    def split_list(self) -> list[str]:
        return [split.strip() for split in self.cleaned_data["splits"].split(",") if split.strip()]


class EvaluationForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, label) for name, label in ExportFormat.choices if name in SPLITS])
    split = forms.ChoiceField(choices=[(s, s) for s in dict.fromkeys(SPLITS["weblinx"] + SPLITS["mind2web"])])
    predictions = forms.FileField(help_text="A JSON list: WebLINX results.json rows, or Mind2Web step predictions.")
