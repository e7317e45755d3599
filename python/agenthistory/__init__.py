"""agenthistory: a persistent, immutable conversation-history engine for LLM agents.

The history is repaired for the model in the projection only; the durable history, and the
rollout a session writes, never hold a repair. See docs/python.md in the repository.
"""

from agenthistory._native import (
    ABORTED_OUTPUT,
    SYNTHETIC_ID_NAMESPACE,
    Error,
    History,
    ItemError,
    Projection,
    ProjectionError,
    PromptCompiler,
    Request,
    RolloutError,
    RolloutWriteError,
    Session,
    SnapshotError,
    StreamAccumulator,
    StreamError,
    ToolPlan,
    WriterLockError,
    project,
    resume,
    resume_with_report,
    validate,
)

__all__ = [
    "ABORTED_OUTPUT",
    "SYNTHETIC_ID_NAMESPACE",
    "Error",
    "History",
    "ItemError",
    "Projection",
    "ProjectionError",
    "PromptCompiler",
    "Request",
    "RolloutError",
    "RolloutWriteError",
    "Session",
    "SnapshotError",
    "StreamAccumulator",
    "StreamError",
    "ToolPlan",
    "WriterLockError",
    "project",
    "resume",
    "resume_with_report",
    "validate",
]
