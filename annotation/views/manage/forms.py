"""Forms of the management pages: a new project, its settings and choice lists, a member, an invitation link, a new
account. They check types and shapes; the rules live in ``annotation.actions.manage``, which the views call."""

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from ...models import Role


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class ProjectCreateForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Letters, digits, - and _: used in URLs and the API.")
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class ProjectSettingsForm(forms.Form):
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    category_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Categories", help_text="One per line."
    )
    subcategory_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Subcategories", help_text="One per line."
    )
    region_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Regions", help_text="One per line."
    )

    @classmethod
    def for_project(cls, project):
        initial = {"title": project.title, "description": project.description}
        initial.update({field: "\n".join(getattr(project, field)) for field in CHOICE_FIELDS})
        return cls(initial=initial)

    def choices(self) -> dict:
        return {field: lines(self.cleaned_data[field]) for field in CHOICE_FIELDS}


CHOICE_FIELDS = ("category_choices", "subcategory_choices", "region_choices")


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    days = forms.IntegerField(
        min_value=1, max_value=30, initial=7, label="Valid for (days)", help_text="From 1 to 30 days."
    )
    email = forms.EmailField(required=False, help_text="The link is mailed there too.")
    note = forms.CharField(max_length=200, required=False, help_text="Who it is for (only admins see it).")


class JoinForm(UserCreationForm):
    """A new account's username and password, checked as Django's own sign-up form does (unique username,
    ``AUTH_PASSWORD_VALIDATORS``)."""

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username",)


class AccountCreateForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")
