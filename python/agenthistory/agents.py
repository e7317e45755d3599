"""An OpenAI Agents SDK session (the `agents.memory.Session` protocol) backed by a Codex rollout.

`get_items` returns the history's repaired projection, so the Runner never sends a call without
its output, even after a crash between the two; the rollout holds only what was recorded. The
SDK is not a dependency of this module: it only has the protocol's shape.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from agenthistory._native import Error, Session

__all__ = ["HistorySession"]

# Session ids that are not UUIDs name their rollout's thread by a UUIDv5 in this namespace.
_SESSION_ID_NAMESPACE = uuid.UUID("6f1c2d0e-3b7a-5c1e-9a4d-2e8f7b6c5a41")


def _thread_id(session_id: str) -> str:
    try:
        return str(uuid.UUID(session_id))
    except ValueError:
        return str(uuid.uuid5(_SESSION_ID_NAMESPACE, session_id))


def _as_item(item: Any) -> dict[str, Any]:
    """A Responses input item in the full form the history stores: the SDK's short message form
    (`{"role": "user", "content": "text"}`, no `type`) becomes a `message` with a text part, and
    a `system` message a `developer` one (the history keeps no system message, as Codex's)."""
    if not isinstance(item, dict):
        raise Error(f"an SDK item must be a dict, not {type(item).__name__}")
    full: dict[str, Any] = dict(item)
    if "type" not in full and "role" in full:
        full = {"type": "message", **full}
    if full.get("type") == "message" and full.get("role") == "system":
        full["role"] = "developer"
    if full.get("type") == "message" and isinstance(full.get("content"), str):
        part = "output_text" if full.get("role") == "assistant" else "input_text"
        full["content"] = [{"type": part, "text": full["content"]}]
    return full


class HistorySession:
    """An Agents SDK session whose items live in the rollout at `path` (created when missing,
    resumed and continued when it exists; `durability` as for `Session`, `flush` by default).
    The file's lock is held until `close()`: one writer. The `session_id` names the thread of a
    new rollout (itself when it is a UUID, else a UUIDv5 of it); an existing rollout keeps its
    own thread id.

    `pop_item` and `clear_session` are written as rollbacks, so a resume gives what they left:
    `pop_item` rolls the last user turn back and records again what it held but its last item
    (refused when the session has no user turn, or when the turn began before a compaction);
    `clear_session` rolls every user turn back (items before the first user message, such as a
    developer message given as a run's input, stay).
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        path: str | os.PathLike[str],
        *,
        durability: Literal["buffered", "flush", "sync_data"] = "flush",
    ) -> None:
        self.session_id = session_id
        self._path = Path(path)
        self._lock = threading.Lock()
        if self._path.exists():
            self._session = Session.resume(self._path, durability=durability)
        else:
            self._session = Session.create(
                self._path,
                durability=durability,
                thread_id=_thread_id(session_id),
            )

    @property
    def path(self) -> Path:
        """The rollout file."""
        return self._path

    def _items(self, limit: int | None) -> list[dict[str, Any]]:
        with self._lock:
            items = self._session.history.project().items()
        if limit is None:
            return items
        if limit <= 0:
            return []
        return items[_window_start(items, limit) :]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest `limit` items (all when None) of the repaired projection, in order. A
        window never starts between a call and its output: it then reaches back to the call,
        and holds a few more than `limit`."""
        return await asyncio.to_thread(self._items, limit)

    def _add(self, items: list[Any]) -> None:
        normalized = [_as_item(item) for item in items]
        with self._lock:
            self._session.extend(normalized)

    async def add_items(self, items: list[Any]) -> None:
        """Records the items and appends them to the rollout."""
        await asyncio.to_thread(self._add, list(items))

    def _pop(self) -> dict[str, Any] | None:
        with self._lock:
            history = self._session.history
            items = history.items()
            if not items:
                return None
            before = history.fork()
            if before.user_turn_count == 0:
                raise Error("pop_item rolls the last user turn back, and the session has no user turn")
            before.drop_last_user_turns(1)
            kept = before.items()
            if kept != items[: len(kept)]:
                raise Error("the last user turn began before a compaction: pop_item cannot roll it back")
            # Not one write: a crash between the rollback and the re-recording loses the rest of
            # the last turn from the file.
            self._session.rollback(1)
            self._session.extend(items[len(kept) : -1])
            return items[-1]

    async def pop_item(self) -> Any | None:
        """Removes the most recent item (durably, as a rollback) and returns it."""
        return await asyncio.to_thread(self._pop)

    def _clear(self) -> None:
        with self._lock:
            if len(self._session.history):
                # Every turn a rollback can reach (the library stops at the first user message).
                self._session.rollback(sys.maxsize)

    async def clear_session(self) -> None:
        """Rolls every user turn back, on this and every later resume; items before the first
        user message stay."""
        await asyncio.to_thread(self._clear)

    def close(self) -> None:
        """Flushes the rollout and releases its lock."""
        self._session.close()

    async def __aenter__(self) -> HistorySession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _window_start(items: list[dict[str, Any]], limit: int) -> int:
    """Where the last `limit` items start, moved back to the call of any output they hold."""
    # The call each output answers: the latest call before it with its id.
    call_of: dict[int, int] = {}
    latest: dict[Any, int] = {}
    for index, item in enumerate(items):
        if "call_id" not in item:
            continue
        if str(item.get("type", "")).endswith("_output"):
            if item["call_id"] in latest:
                call_of[index] = latest[item["call_id"]]
        else:
            latest[item["call_id"]] = index
    start = max(len(items) - limit, 0)
    for index in range(len(items) - 1, -1, -1):
        if index < start:
            break
        start = min(start, call_of.get(index, start))
    return start
