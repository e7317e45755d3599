"""An OpenAI Agents SDK session (the `agents.memory.Session` protocol) backed by a Codex rollout.

`get_items` returns the history's repaired projection, so the Runner never sends a call without
its output, even after a crash between the two; the rollout holds only what was recorded. The
SDK is not a dependency of this module: it only has the protocol's shape.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from agenthistory._native import Error, Session, project

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
    (`{"role": "user", "content": "text"}`, no `type`) becomes a `message` with a text part."""
    if not isinstance(item, dict):
        raise Error(f"an SDK item must be a dict, not {type(item).__name__}")
    full: dict[str, Any] = dict(item)
    if "type" not in full and "role" in full:
        full = {"type": "message", **full}
    if full.get("type") == "message" and isinstance(full.get("content"), str):
        part = "output_text" if full.get("role") == "assistant" else "input_text"
        full["content"] = [{"type": part, "text": full["content"]}]
    return full


class HistorySession:
    """An Agents SDK session whose items live in the rollout at `path` (created when missing,
    resumed and continued when it exists). The file's lock is held until `close()`: one writer.

    `pop_item` and `clear_session` are written as rollbacks, so a resume gives what they left:
    `pop_item` rolls the last user turn back and records again what it held but the last item;
    `clear_session` rolls every user turn back (items before the first user message, which the
    SDK does not write, would stay).
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
        # The tail of a repaired projection can only start with an output whose call was cut
        # off (a call's output follows it); projecting the tail again drops it.
        return project(items[-limit:]).items()

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest `limit` items (all when None) of the repaired projection, in order."""
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
            turn_start = _last_user_turn_start(history.fork(), len(items))
            if turn_start is None:
                raise Error("the last item comes before the first user message: it cannot be popped")
            self._session.rollback(1)
            self._session.extend(items[turn_start:-1])
            return items[-1]

    async def pop_item(self) -> Any | None:
        """Removes the most recent item (durably, as a rollback) and returns it."""
        return await asyncio.to_thread(self._pop)

    def _clear(self) -> None:
        with self._lock:
            turns = self._session.history.user_turn_count
            if turns:
                self._session.rollback(turns)

    async def clear_session(self) -> None:
        """Rolls every user turn back: the session is empty on this and every later resume."""
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


def _last_user_turn_start(history: Any, length: int) -> int | None:
    """The position of the message that starts the last user turn, or None without one."""
    turns = history.user_turn_count
    if turns == 0:
        return None
    history.drop_last_user_turns(1)
    start: int = len(history)
    return start if start < length else None
