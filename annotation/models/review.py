"""Curation: a reviewer's edits over the immutable raw capture, and the curated state they lead to.

``Edit`` is the append-only history (who, when, what, before/after); ``TurnCuration`` (one row per curated turn)
and ``DemoReview`` (one row per reviewed demonstration) hold the *current* curated state, maintained by the
``do_*`` functions of ``annotation.actions.review`` alongside the history, so pages and exports read it cheaply.
Undoing an edit is a new edit that restores its before-state.
"""

from django.conf import settings
from django.db import models

from .recordings import Demonstration, Turn


class ClaimKind(models.TextChoices):
    """How a reviewer holds a demo from "Review next": only opened (a short hold, so two reviewers are not handed
    the same demo at once) or worked on (the full hold, from their first edit, comment or mark)."""

    OPENED = "opened", "Opened"
    WORKING = "working", "Working"


class DemoReview(models.Model):
    """The review state of one demonstration: its revision (for optimistic concurrency), order and flags."""

    demonstration = models.OneToOneField(
        Demonstration, on_delete=models.CASCADE, primary_key=True, related_name="review"
    )
    revision = models.PositiveIntegerField(
        default=0, help_text="Incremented by every write; writers send the one they saw."
    )
    order = models.JSONField(default=list, blank=True, help_text="Curated order as turn ids; empty = capture order.")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    unsure_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who marked the demo unsure: a second reviewer (someone else) must decide it.",
    )
    quality = models.JSONField(null=True, blank=True, help_text="Cached quality issues of the raw capture.")
    realigned = models.BooleanField(default=False, help_text="Screenshot suggestions computed.")
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text='The reviewer this demo is assigned to: only they get it from "Review next".',
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text='The reviewer holding the demo from "Review next", until claimed_until.',
    )
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim_kind = models.CharField(
        max_length=8,
        choices=ClaimKind.choices,
        blank=True,
        help_text="opened: held REVIEW_OPEN_SECONDS from Review next; working: REVIEW_CLAIM_SECONDS from a write.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"review of {self.demonstration_id} r{self.revision}"

    @property
    def issue_count(self):
        return None if self.quality is None else len(self.quality)


class TurnCuration(models.Model):
    """The curated state of one turn (absent = unchanged): deleted, text override, validity, screenshot, target."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, primary_key=True, related_name="curation")
    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="turn_curations")
    deleted = models.BooleanField(default=False)
    text = models.TextField(null=True, blank=True, help_text="Edited utterance (chat) or typed text (textInput).")
    valid = models.BooleanField(default=True)
    screenshot = models.CharField(max_length=64, blank=True, help_text="Chosen screenshot sha256; blank = the turn's.")
    element = models.JSONField(
        null=True,
        blank=True,
        help_text="The target a reviewer chose on the turn's page, described as the recorder describes an acted "
        "element (attributes, bbox, tagName, xpath, textContent, outerHTML); null = the recorded one.",
    )
    suggested_screenshot = models.CharField(max_length=64, blank=True, help_text="The realign worker's suggestion.")
    suggested_from = models.CharField(
        max_length=12,
        blank=True,
        help_text="How the suggestion was made: video (the frame most like the tab video at the action), "
        "last-before (no video: the last frame at or before the action), own (the turn's only screenshot).",
    )

    def __str__(self):
        return f"curation of turn {self.turn_id}"


STATE_FIELDS = ("deleted", "text", "valid", "screenshot", "element")


class EditKind(models.TextChoices):
    DELETE = "delete", "Delete turn"
    RESTORE = "restore", "Restore turn"
    REORDER = "reorder", "Reorder"
    EDIT_TEXT = "edit_text", "Edit text"
    SET_VALIDITY = "set_validity", "Set validity"
    CHOOSE_SCREENSHOT = "choose_screenshot", "Choose screenshot"
    ACCEPT_SUGGESTIONS = "accept_suggestions", "Accept all suggestions"
    EDIT_METADATA = "edit_metadata", "Edit metadata"
    RETARGET = "retarget", "Change target"
    SET_STATUS = "set_status", "Change status"
    SET_UNSURE = "set_unsure", "Unsure mark"
    COMMENT = "comment", "Comment"
    UNDO = "undo", "Undo"


class Edit(models.Model):
    """One change made in review, append-only. ``before``/``after`` are the state it replaced and set.

    For turn edits they are ``{turn_id: {field: value}}`` maps (several turns for "accept all suggestions"),
    for reorder ``{"order": [...]}``, for metadata and status the demonstration's fields.
    """

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="edits")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=24, choices=EditKind.choices)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    undoes = models.OneToOneField("self", on_delete=models.CASCADE, null=True, blank=True, related_name="undone_by")
    revision = models.PositiveIntegerField(help_text="The demo's revision this edit produced.")

    class Meta:
        ordering = ["demonstration", "-created_at", "-id"]

    def __str__(self):
        return f"{self.kind} on {self.demonstration_id} by {self.author_id}"


class Comment(models.Model):
    """A reviewer's note on a demonstration, optionally pinned to a turn; the annotator sees it."""

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="comments")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, null=True, blank=True, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"comment on {self.demonstration_id}"


class SecondDecision(models.TextChoices):
    """A reviewer's decision on a demo, as agreement compares them (``validate`` is an accept)."""

    ACCEPT = "accept", "Accept"
    RETURN = "return", "Return"
    REJECT = "reject", "Reject"


class SecondReview(models.Model):
    """A reviewed demo sent to a second reviewer (``Project.second_review_percent``): the first decision as it was
    made, and the second one, kept apart (the demo's status stays the first reviewer's) for agreement.

    ``first_turns`` and ``turns`` are ``{turn id: valid}`` over every turn of the demo (a deleted turn counts as
    invalid for the first reviewer); ``turns`` and ``decision`` stay empty until the second reviewer decides."""

    demonstration = models.OneToOneField(
        Demonstration, on_delete=models.CASCADE, primary_key=True, related_name="second_review"
    )
    first_reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    first_decision = models.CharField(max_length=8, choices=SecondDecision.choices)
    first_turns = models.JSONField(default=dict, blank=True)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="second_reviews")
    decision = models.CharField(max_length=8, choices=SecondDecision.choices, blank=True)
    turns = models.JSONField(null=True, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["reviewer", "decision"], name="second_review_reviewer")]

    def __str__(self):
        return f"second review of {self.demonstration_id} by {self.reviewer_id}"


def curated_turns(turns, curations: dict, order: list) -> list:
    """``[(turn, curation or None)]`` in curated order (deleted turns included, flagged by their curation).

    ``turns`` in capture order; ``order`` a list of turn ids (turns missing from it keep their capture place at
    the end); ``curations`` ``{turn_id: TurnCuration}``.
    """
    rank = {turn_id: index for index, turn_id in enumerate(order)}
    ordered = sorted(enumerate(turns), key=lambda item: rank.get(item[1].pk, len(rank) + item[0]))
    return [(turn, curations.get(turn.pk)) for _, turn in ordered]


class ProblemTaxonomy(models.Model):
    """A project's kinds of problem reviewers mark (docs/review.md): ``kinds`` is ``[{"key", "label", "level"}]``,
    ``level`` ``turn`` (a turn or step) or ``task`` (the whole demo). No row: the default kinds."""

    project = models.OneToOneField("Project", on_delete=models.CASCADE, primary_key=True, related_name="+")
    kinds = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"problem kinds of {self.project_id}"


class ProblemMark(models.Model):
    """A reviewer's mark of a problem of one ``kind`` (a key of the project's taxonomy) on a demo's task (no turn)
    or on one raw turn, as comments pin turns: reorder and delete edits leave it in place. Unmarking deletes it."""

    demonstration = models.ForeignKey(Demonstration, on_delete=models.CASCADE, related_name="problem_marks")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, null=True, blank=True, related_name="problem_marks")
    kind = models.SlugField(max_length=32)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["turn", "kind", "reviewer"],
                condition=models.Q(turn__isnull=False),
                name="problem_mark_turn_once",
            ),
            models.UniqueConstraint(
                fields=["demonstration", "kind", "reviewer"],
                condition=models.Q(turn__isnull=True),
                name="problem_mark_task_once",
            ),
        ]

    def __str__(self):
        return f"{self.kind} on {self.demonstration_id}/{self.turn_id or 'task'} by {self.reviewer_id}"
