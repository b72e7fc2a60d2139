"""The domain model, one module per area: ``capture`` (projects, recordings, turns, blobs) and ``exports``
(split configuration, export jobs, evaluations)."""

from .capture import (
    READ_ROLES,
    RECORDING_ROLES,
    Blob,
    DemoMode,
    Demonstration,
    DemoStatus,
    ImmutableCaptureError,
    Membership,
    Project,
    Role,
    Speaker,
    Turn,
    TurnType,
    VideoChunk,
    new_demo_name,
    sha256_path,
)
from .curation import Comment, DemoReview, Edit, EditKind, TurnCuration, curated_turns
from .exports import Evaluation, ExportFormat, ExportJob, JobStatus, SplitConfig

__all__ = [
    "READ_ROLES",
    "RECORDING_ROLES",
    "Blob",
    "Comment",
    "DemoReview",
    "Edit",
    "EditKind",
    "TurnCuration",
    "curated_turns",
    "DemoMode",
    "DemoStatus",
    "Demonstration",
    "Evaluation",
    "ExportFormat",
    "ExportJob",
    "ImmutableCaptureError",
    "JobStatus",
    "Membership",
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
