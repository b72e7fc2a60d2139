"""Shapes of the quality API: submitted work under review, decisions, qualifications, a batch's quality settings."""

from rest_framework import serializers

from annotation.models import Assignment, Decision, Qualification, QualificationScore, ReviewState


class ReviewSerializer(serializers.ModelSerializer):
    """A submitted assignment as its reviewer sees it (gold figures included: never shown to workers)."""

    batch = serializers.IntegerField(source="task.batch_id", read_only=True)
    batch_name = serializers.CharField(source="task.batch.name", read_only=True)
    is_gold = serializers.BooleanField(source="task.is_gold", read_only=True)
    worker = serializers.SlugRelatedField(slug_field="username", read_only=True)
    reviewed_by = serializers.CharField(source="reviewed_by.username", read_only=True, allow_null=True, default=None)
    answers = serializers.JSONField(read_only=True)
    task_index = serializers.IntegerField(source="task.index", read_only=True, help_text="The task's index, from 0.")
    worker_gold = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="The worker's gold accuracy in this batch: the mean gold score of every answer they submitted to a "
        "gold task of it, pending, approved and rejected alike (null: no gold answer yet).",
    )
    worker_gold_answers = serializers.IntegerField(
        read_only=True, help_text="How many gold answers worker_gold is the mean of."
    )

    class Meta:
        model = Assignment
        fields = [
            "id",
            "batch",
            "batch_name",
            "task",
            "task_index",
            "is_gold",
            "worker",
            "answers",
            "submitted_at",
            "work_seconds",
            "review",
            "feedback",
            "reviewed_at",
            "reviewed_by",
            "reopened_at",
            "gold_score",
            "worker_gold",
            "worker_gold_answers",
            "flagged",
        ]
        read_only_fields = fields


class DecisionSerializer(serializers.Serializer):
    """One entry of an assignment's decision trail."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=Decision.Kind.choices,
        help_text="manual (one assignment), bulk (several, or by filter), csv (the results CSV uploaded back), auto "
        "(approved after the batch's delay), reopen, undo.",
    )
    kind_label = serializers.CharField()
    from_state = serializers.CharField(help_text="The review before: pending, approved or rejected.")
    to_state = serializers.CharField(help_text="The review after: pending, approved or rejected.")
    by = serializers.CharField(allow_null=True, help_text="Who; null for the automatic approval.")
    at = serializers.DateTimeField()
    feedback = serializers.CharField(help_text="The feedback the decision gave, or the undo's reason.")
    undoes = serializers.IntegerField(allow_null=True, help_text="An undo: the decision it undid.")
    undone = serializers.BooleanField(help_text="This decision was undone.")
    undoable = serializers.BooleanField(
        help_text="An undo of it would be accepted now (within FORM_DECISION_UNDO_MINUTES, no later decision stands)."
    )


class ReviewDetailSerializer(ReviewSerializer):
    """A submitted assignment with its decision trail, oldest first."""

    trail = DecisionSerializer(many=True, read_only=True)

    class Meta(ReviewSerializer.Meta):
        fields = [*ReviewSerializer.Meta.fields, "trail"]
        read_only_fields = fields


class UndoSerializer(serializers.Serializer):
    decision = serializers.IntegerField(
        required=False, help_text="The trail entry to undo (default: the latest decision that stands)."
    )
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000, help_text="Why, for the trail.")


class FeedbackSerializer(serializers.Serializer):
    feedback = serializers.CharField(required=False, allow_blank=True, help_text="The reason the worker sees.")


class ReviewFilterSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    worker = serializers.CharField(required=False, allow_blank=True)
    review = serializers.ChoiceField(choices=ReviewState.choices, required=False, allow_blank=True)
    flagged = serializers.BooleanField(required=False, allow_null=True, default=None)
    gold_below = serializers.FloatField(required=False, allow_null=True)
    gold_at_least = serializers.FloatField(required=False, allow_null=True)


class DecideSerializer(serializers.Serializer):
    """Decide on ``assignments`` (ids), or on the pending work a ``filter`` selects in one batch."""

    decision = serializers.ChoiceField(choices=["approve", "reject"])
    feedback = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    assignments = serializers.ListField(child=serializers.IntegerField(), required=False, max_length=10_000)
    filter = ReviewFilterSerializer(required=False)
    dry_run = serializers.BooleanField(
        required=False,
        default=False,
        help_text="With filter: change nothing, answer how many pending rows it selects and their selection digest.",
    )
    selection = serializers.CharField(
        required=False,
        help_text="With filter: the digest a dry run answered; when the pending rows it selects changed since, "
        "nothing is decided (409 with the count now).",
    )

    def validate(self, data):
        if ("assignments" in data) == ("filter" in data):
            raise serializers.ValidationError({"assignments": "give assignments (ids) or filter, not both"})
        if "assignments" in data and not data["assignments"]:
            raise serializers.ValidationError({"assignments": "name at least one assignment"})
        if "assignments" in data and (data.get("dry_run") or "selection" in data):
            raise serializers.ValidationError({"dry_run": "dry_run and selection go with filter"})
        return data


class DecidedSerializer(serializers.Serializer):
    changed = serializers.IntegerField(help_text="Assignments whose decision changed (already so: not counted).")
    selected = serializers.IntegerField(
        required=False, help_text="A dry run: the pending rows the filter selects (what it would change)."
    )
    selection = serializers.CharField(required=False, help_text="A dry run: the digest of those rows.")


class DecisionsUploadSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    csv = serializers.FileField(help_text="The batch's results CSV with Approve (x) or Reject (a reason) filled in.")


class DecisionsAppliedSerializer(serializers.Serializer):
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class ScoreSerializer(serializers.ModelSerializer):
    worker = serializers.SlugRelatedField(slug_field="username", read_only=True)
    granted_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = QualificationScore
        fields = ["worker", "score", "source", "granted_by", "updated_at"]
        read_only_fields = fields


class QualificationSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    scores = ScoreSerializer(many=True, read_only=True)

    class Meta:
        model = Qualification
        fields = ["id", "project", "name", "description", "created_at", "scores"]
        read_only_fields = fields


class QualificationCreateSerializer(serializers.Serializer):
    project = serializers.CharField()
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class GrantSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="Username of a member of the project.")
    score = serializers.FloatField(required=False, default=1.0, help_text="0–1.")


class RevokeSerializer(serializers.Serializer):
    worker = serializers.CharField()


class RequirementSerializer(serializers.Serializer):
    qualification = serializers.CharField()
    min_score = serializers.FloatField()


class QualitySettingsSerializer(serializers.Serializer):
    """A batch's quality settings; in a PATCH every key is optional and checked by the action (400 naming it)."""

    batch = serializers.IntegerField(read_only=True)
    gold_rate = serializers.FloatField(help_text="Share (0–1) of each worker's tasks that are gold.")
    gold_threshold = serializers.FloatField(allow_null=True, help_text="Block below this gold accuracy (0–1).")
    gold_min_answers = serializers.IntegerField(help_text="Gold answers before the threshold applies (≥ 1).")
    auto_approve_seconds = serializers.IntegerField(
        allow_null=True,
        required=False,
        help_text="The auto-approval delay in seconds (null: never auto-approve); the pages show it in minutes.",
    )
    auto_approve_minutes = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="The same delay in minutes (null: never); a PATCH gives a whole number of minutes or seconds, "
        "not both.",
    )
    grants_qualification = serializers.CharField(allow_null=True, help_text="Onboarding: the qualification earned.")
    grant_threshold = serializers.FloatField(help_text="Gold accuracy (0–1) that earns it.")
    requirements = RequirementSerializer(many=True)
    gold_tasks = serializers.ListField(child=serializers.IntegerField(), read_only=True, help_text="Indices.")
    counts = serializers.DictField(child=serializers.IntegerField(), read_only=True, help_text="Work by review state.")
    blocked = serializers.ListField(child=serializers.DictField(), read_only=True)
    unblocked = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="Blocks a manager lifted: worker, accuracy, reason, at, lifted_at, lifted_by, lift_reason.",
    )


class UnblockSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="The username of a worker blocked from the batch.")
    reason = serializers.CharField(max_length=500, help_text="Why; the worker reads it on their work page.")


class GoldSerializer(serializers.Serializer):
    tasks = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1),
        required=False,
        help_text="Task indices (from 0), each with a non-blank Answer.* value in the CSV; its non-blank values become "
        "the known answers.",
    )
    gold = serializers.BooleanField(required=False, default=True, help_text="false: unmark.")
    assignment = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**63 - 1,
        help_text="Take the known answers from this assignment's non-blank answers.",
    )


class GoldMarkedSerializer(serializers.Serializer):
    changed = serializers.IntegerField()
