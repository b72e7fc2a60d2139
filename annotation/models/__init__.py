"""The domain model, one module per area: ``manage`` (projects, members, roles), ``recordings`` (demonstrations,
turns, video, blobs), ``review`` (curation edits, comments, the review state), ``live`` (invitations), ``forms``
(batches, tasks, assignments: the queue), ``mind2web`` (websites, seed tasks, proposals), ``exports`` (split
configuration, export jobs, evaluations), ``agents`` (agent runs) and ``stats`` (pay rates). One app, one set of
tables and migrations: the modules only group the classes."""

from .agents import (
    AgentFieldResult,
    AgentMetric,
    AgentModelAnswer,
    AgentRun,
    AgentRunInstance,
    ModelEndpoint,
    PredictionRun,
)
from .exports import Evaluation, ExportFormat, ExportJob, JobStatus, SplitConfig
from .forms import HOLDING_STATUSES, Assignment, AssignmentStatus, Batch, BatchKind, Task
from .live import Invitation, code_digest
from .manage import READ_ROLES, RECORDING_ROLES, Membership, Project, Role
from .mind2web import ProposalRound, ProposalStatus, ProposedTask, SeedSource, SeedTask, Website
from .recordings import (
    EXPORTABLE_STATUSES,
    TASK_METADATA,
    Blob,
    DemoMode,
    Demonstration,
    DemoStatus,
    ImmutableCaptureError,
    ProjectBlob,
    Speaker,
    Turn,
    TurnType,
    VideoChunk,
    new_demo_name,
    sha256_path,
)
from .review import Comment, DemoReview, Edit, EditKind, TurnCuration, curated_turns
from .stats import PayRates

__all__ = [
    "AgentFieldResult",
    "AgentMetric",
    "AgentModelAnswer",
    "AgentRun",
    "AgentRunInstance",
    "ProposalRound",
    "ProposalStatus",
    "ProposedTask",
    "SeedSource",
    "SeedTask",
    "Website",
    "HOLDING_STATUSES",
    "Assignment",
    "AssignmentStatus",
    "Batch",
    "BatchKind",
    "Task",
    "READ_ROLES",
    "RECORDING_ROLES",
    "Blob",
    "Invitation",
    "PayRates",
    "code_digest",
    "ProjectBlob",
    "Comment",
    "DemoReview",
    "Edit",
    "EditKind",
    "TurnCuration",
    "curated_turns",
    "DemoMode",
    "DemoStatus",
    "EXPORTABLE_STATUSES",
    "TASK_METADATA",
    "Demonstration",
    "Evaluation",
    "ExportFormat",
    "ExportJob",
    "ImmutableCaptureError",
    "JobStatus",
    "Membership",
    "ModelEndpoint",
    "PredictionRun",
    "Project",
    "Role",
    "SplitConfig",
    "Speaker",
    "Turn",
    "TurnType",
    "VideoChunk",
    "new_demo_name",
    "sha256_path",
]
