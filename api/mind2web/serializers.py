"""Serializers of the Mind2Web collection API (websites, seed tasks, proposal rounds, proposals, demonstration
tasks). Input checks that name fields live in ``annotation.actions.mind2web``; these shape the JSON."""

from rest_framework import serializers

from annotation.models import Assignment, ProposalRound, ProposedTask, SeedTask, Website

from ..recordings.serializers import RecorderClientSerializer


class WebsiteSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    accepted = serializers.IntegerField(read_only=True, help_text="Accepted proposed tasks.")
    seed_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Website
        fields = [
            "id",
            "project",
            "name",
            "url",
            "domain",
            "subdomain",
            "description",
            "target_tasks",
            "accepted",
            "seed_count",
            "created_at",
        ]
        read_only_fields = fields


class RoundWebsiteSerializer(serializers.ModelSerializer):
    """The website of a proposal round, as the proposer sees it."""

    class Meta:
        model = Website
        fields = ["id", "name", "url", "domain", "subdomain", "description", "target_tasks"]
        read_only_fields = fields


class WebsiteInSerializer(serializers.Serializer):
    """A website to create (``project`` required) or change (PATCH, any subset)."""

    project = serializers.CharField(required=False, help_text="The project's name (create only).")
    name = serializers.CharField(required=False)
    url = serializers.CharField(required=False)
    domain = serializers.CharField(required=False)
    subdomain = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    target_tasks = serializers.IntegerField(required=False, help_text="Default 20.")


class WebsiteImportSerializer(serializers.Serializer):
    project = serializers.CharField()
    file = serializers.FileField(
        help_text="CSV with a header (name,url,domain,subdomain,description,target_tasks) or a JSON list of objects."
    )


class WebsiteImportedSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    websites = WebsiteSerializer(many=True)


class SeedTaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = SeedTask
        fields = ["id", "text", "source", "created_at"]
        read_only_fields = fields


class SeedTasksInSerializer(serializers.Serializer):
    tasks = serializers.ListField(child=serializers.CharField(), required=False, help_text="JSON: the task texts.")
    file = serializers.FileField(
        required=False, help_text="Multipart: a JSON list of strings, a CSV with a task column, or one per line."
    )


class SeedTasksAddedSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="New seed tasks (ones the website had are skipped).")


class ProposalSerializer(serializers.ModelSerializer):
    website = serializers.SlugRelatedField(slug_field="name", read_only=True)
    website_id = serializers.IntegerField(read_only=True)
    proposer = serializers.SlugRelatedField(slug_field="username", read_only=True)
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    too_similar = serializers.BooleanField(read_only=True)
    similar_to = serializers.JSONField(read_only=True, help_text='[{"text", "score", "source": "seed"|"accepted"}]')
    demo_task = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = ProposedTask
        fields = [
            "id",
            "round",
            "website",
            "website_id",
            "proposer",
            "text",
            "too_similar",
            "similar_to",
            "status",
            "final_text",
            "reviewer",
            "reviewed_at",
            "demo_task",
            "created_at",
        ]
        read_only_fields = fields


class RoundSerializer(serializers.ModelSerializer):
    website = RoundWebsiteSerializer(read_only=True)
    seed_draw = serializers.JSONField(read_only=True, help_text='The seed tasks shown: [{"id", "text"}].')
    assignment = serializers.IntegerField(source="assignment_id", read_only=True)
    expires_at = serializers.DateTimeField(source="assignment.expires_at", read_only=True)
    proposals = ProposalSerializer(many=True, read_only=True)

    class Meta:
        model = ProposalRound
        fields = [
            "id",
            "website",
            "assignment",
            "draw_seed",
            "seed_draw",
            "created_at",
            "expires_at",
            "submitted_at",
            "proposals",
        ]
        read_only_fields = fields


class RoundStartSerializer(serializers.Serializer):
    website = serializers.IntegerField(help_text="The id of a website offered to you.")


class RoundSubmitSerializer(serializers.Serializer):
    tasks = serializers.JSONField(help_text="1 to 5 task texts, each non-empty and at most 500 characters.")


class ScreenSerializer(serializers.Serializer):
    decision = serializers.CharField(help_text="accept or reject")
    text = serializers.CharField(
        required=False, allow_blank=True, help_text="Accept: the task as edited (blank = as proposed)."
    )


class DemonstrationTaskSerializer(serializers.ModelSerializer):
    """An assigned demonstration task (the assignment's id is what ``start`` takes)."""

    project = serializers.CharField(source="task.batch.project.name", read_only=True)
    task = serializers.CharField(source="task.inputs.task", read_only=True)
    website = serializers.CharField(source="task.inputs.website", read_only=True)
    url = serializers.CharField(source="task.inputs.url", read_only=True)
    domain = serializers.CharField(source="task.inputs.domain", read_only=True)
    subdomain = serializers.CharField(source="task.inputs.subdomain", read_only=True)
    proposal = serializers.IntegerField(source="task.inputs.proposal", read_only=True)

    class Meta:
        model = Assignment
        fields = [
            "id",
            "project",
            "task",
            "website",
            "url",
            "domain",
            "subdomain",
            "proposal",
            "status",
            "accepted_at",
            "expires_at",
        ]
        read_only_fields = fields


class DemonstrationTakeSerializer(serializers.Serializer):
    project = serializers.CharField()


class DemonstrationStartSerializer(RecorderClientSerializer):
    """What the side panel sends to start a demonstration task (the task fills in the rest)."""


class VerificationCountsSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    discarded = serializers.IntegerField(help_text="Tasks discarded in verification.")
    refined = serializers.IntegerField(help_text="Task descriptions refined.")
    with_steps_discarded = serializers.IntegerField(help_text="Tasks with at least one step discarded.")
