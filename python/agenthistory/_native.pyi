"""Type stubs of the native module (python/src); agenthistory re-exports every name."""

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias, final

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
    "TranscriptError",
    "WriterLockError",
    "project",
    "read_transcript",
    "read_transcript_with_report",
    "resume",
    "resume_with_report",
    "validate",
]

_Item: TypeAlias = dict[str, Any] | str | bytes
"""An item: a dict (or any JSON-shaped value), or its JSON text (kept verbatim)."""

_Target: TypeAlias = Literal["responses", "chat", "anthropic"]
_Durability: TypeAlias = Literal["buffered", "flush", "sync_data"]
_StrPath: TypeAlias = str | os.PathLike[str]

SYNTHETIC_ID_NAMESPACE: str
"""The UUID namespace of the synthetic outputs' ids (UUIDv5 of the call's item id)."""
ABORTED_OUTPUT: str
"""The text of a synthetic output: `aborted`."""

class Error(ValueError):
    """Any error of agenthistory; the location attributes are None where the error names none."""

    path: str | None
    line: int | None
    byte: int | None
    position: int | None

class ItemError(Error):
    """An item that is not valid JSON, not an object, or too large to store."""

class RolloutError(Error):
    """A rollout that cannot be read or resumed as a whole."""

class TranscriptError(Error):
    """A Claude Code transcript that cannot be read as a whole."""

class RolloutWriteError(Error):
    """Appending to a rollout failed."""

class WriterLockError(RolloutWriteError):
    """Another writer (a second session, or Codex) holds the rollout."""

class SnapshotError(Error):
    """A snapshot that cannot be written, opened or trusted."""

class ProjectionError(Error):
    """A strict projection found the history's protocol shape broken."""

class StreamError(Error):
    """A streamed response that cannot be accumulated."""

    event: int | None
    """The event's number in the stream, from 1."""

@final
class History:
    """An agent's history: a persistent vector of items, O(1) to fork."""

    def __new__(cls, items: Iterable[_Item] | None = None) -> History: ...
    def record(self, item: _Item) -> int | None:
        """Records one item; its position, or None when the library filters it out."""

    def extend(self, items: Iterable[_Item]) -> None:
        """Records every item, or none of them when one is bad."""

    def __len__(self) -> int: ...
    def items(self) -> list[dict[str, Any]]:
        """The durable items, as dicts."""

    def items_json(self) -> bytes:
        """The durable items as one JSON array, written from the stored texts."""

    def fork(self) -> History:
        """An independent copy, O(1)."""

    def __copy__(self) -> History: ...
    def __deepcopy__(self, memo: Any) -> History: ...
    def drop_last_user_turns(self, n: int) -> None:
        """Drops the last n user turns and everything after the first of them."""

    @property
    def user_turn_count(self) -> int: ...
    @property
    def estimated_tokens(self) -> int: ...
    def project(
        self,
        target: _Target = "responses",
        modalities: str = "text,image",
        strict: bool = False,
    ) -> Projection:
        """The history projected for target, repaired in the projection only."""

@final
class Projection:
    """A history projected for one target: what is sent, and what was repaired to send it."""

    @property
    def target(self) -> _Target: ...
    def items(self) -> list[dict[str, Any]]:
        """The items (Responses) or messages (Chat, Anthropic) sent, as dicts."""

    def json(self) -> bytes:
        """The JSON array sent, copied from the stored items' bytes."""

    def system_texts(self) -> list[str]:
        """Anthropic: the texts of the request's `system`; empty for the other targets."""

    @property
    def report(self) -> list[dict[str, Any]]:
        """Every repair: kind, its fields, position, item_kind, call_id, stage."""

    def counts(self) -> dict[str, int]:
        """The repairs counted by kind."""

    def __len__(self) -> int: ...

def project(
    items: Iterable[_Item],
    target: _Target = "responses",
    modalities: str = "text,image",
    strict: bool = False,
) -> Projection:
    """Projects a list of items without keeping a history."""

@final
class Session:
    """A history and its rollout file kept in step; a context manager that closes it."""

    @staticmethod
    def create(
        path: _StrPath,
        durability: _Durability = "sync_data",
        thread_id: str | None = None,
        base_instructions: str | None = None,
    ) -> Session:
        """Starts a session in a new rollout at path (which must not exist)."""

    @staticmethod
    def resume(
        path: _StrPath,
        snapshot: _StrPath | None = None,
        durability: _Durability = "sync_data",
    ) -> Session:
        """Resumes the session in the rollout at path and goes on appending to it."""

    def record(self, item: _Item) -> int | None: ...
    def extend(self, items: Iterable[_Item]) -> None:
        """Records every item; all are checked first, so a bad one writes none."""

    @property
    def history(self) -> History:
        """The history now: an O(1) copy, independent of what is recorded later."""

    def write_snapshot(self, path: _StrPath) -> dict[str, Any]:
        """Writes a snapshot of the history; returns its header."""

    def compact(self, summary: str) -> None:
        """Compacts the history into the model's summary and appends the `compacted` line."""

    def rollback(self, n: int) -> None:
        """Rolls the last n user turns back and appends the `thread_rolled_back` event."""

    def begin_turn(self, settings: dict[str, Any] | str | bytes, turn_id: str | None = None) -> str:
        """Begins a Codex turn (task_started, turn_context); its id. Refused while one is active."""

    def complete_turn(self, last_agent_message: str | None = None) -> None:
        """Completes the active turn (task_complete)."""

    def abort_turn(self, reason: Literal["interrupted", "replaced", "review_ended"] = "interrupted") -> None:
        """Aborts the active turn (turn_aborted)."""

    @property
    def active_turn(self) -> str | None:
        """The id of the active turn, or None."""

    def flush(self) -> None: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def path(self) -> Path:
        """The rollout file."""
    @property
    def report(self) -> dict[str, Any] | None:
        """What resuming read (skipped lines, a torn tail, ...) and its `source`; None if created."""

    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Flushes and releases the file; closing twice is allowed."""

    def __enter__(self) -> Session: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]: ...

def resume(path: _StrPath, snapshot: _StrPath | None = None) -> History:
    """Resumes the Codex rollout at path, read-only."""

def resume_with_report(
    path: _StrPath, snapshot: _StrPath | None = None
) -> tuple[History, dict[str, Any]]:
    """As resume, with what was read as a dict."""

def read_transcript(path: _StrPath) -> History:
    """The conversation a resume of the Claude Code transcript at path sends, as a history."""

def read_transcript_with_report(path: _StrPath) -> tuple[History, dict[str, Any]]:
    """As read_transcript, with what reading found and how the conversation was chosen."""

_StreamFormat: TypeAlias = Literal["responses", "chat", "anthropic"]

@final
class StreamAccumulator:
    """Accumulates one streamed response; only complete items reach the target."""

    def __new__(cls, target: History | Session, format: _StreamFormat = "responses") -> StreamAccumulator: ...
    def push(self, event: Any) -> list[dict[str, Any]]:
        """Handles one event (an SDK event object, a dict, or its JSON text); its updates."""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Handles raw server-sent-event bytes, split anywhere; the updates they made."""

    def finish(self) -> dict[str, Any]:
        """The input has ended: the complete items are recorded, the rest dropped; the summary."""

    def abort(self) -> dict[str, Any]:
        """Cancels the stream; the summary."""

    @property
    def summary(self) -> dict[str, Any]: ...
    @property
    def ended(self) -> bool: ...

@final
class ToolPlan:
    """An immutable list of tool specs (the Responses `tools` form), serialized once."""

    def __new__(cls, specs: Iterable[Any]) -> ToolPlan: ...
    def specs(self) -> list[dict[str, Any]]: ...
    def __len__(self) -> int: ...

@final
class PromptCompiler:
    """Compiles whole request bodies: model, instructions, tools, settings, repaired input."""

    def __new__(
        cls,
        model: str,
        instructions: str | None = None,
        tools: ToolPlan | Iterable[Any] | None = None,
        parallel_tool_calls: bool = False,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
        max_output_tokens: int | None = None,
        prompt_cache_key: str | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        store: bool | None = None,
        stream: bool | None = None,
        include: list[str] | None = None,
    ) -> PromptCompiler: ...
    def compile(
        self,
        history: History,
        target: _Target = "responses",
        modalities: str = "text,image",
        strict: bool = False,
    ) -> Request:
        """The request for history to target, its input repaired in the projection only."""

@final
class Request:
    """A compiled request."""

    @property
    def target(self) -> _Target: ...
    def body(self) -> bytes:
        """The JSON body, as an HTTP client sends it."""

    @property
    def dropped_tools(self) -> list[dict[str, Any]]:
        """The tool specs the target has no equivalent for (index, type, name)."""

    @property
    def left_out(self) -> list[str]:
        """The settings the target's body has no field for."""

    @property
    def report(self) -> list[dict[str, Any]]: ...
    def counts(self) -> dict[str, int]: ...

def validate(body: Any, target: _Target = "responses") -> list[dict[str, Any]]:
    """Checks a request body (or a bare input array) against target's rules; the findings."""
