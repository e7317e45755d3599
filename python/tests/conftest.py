"""Shared helpers of the Python suite: items, the repository's bundled sessions, the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ROLLOUTS = REPO / "examples" / "rollouts"


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def call(call_id: str, item_id: str | None = None, name: str = "shell") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}
    if item_id is not None:
        item["id"] = item_id
    return item


def output(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def cli() -> Path:
    """The agent-history binary: $AGENT_HISTORY_BIN (CI sets it), else a build in target/."""
    named = os.environ.get("AGENT_HISTORY_BIN")
    if named:
        return Path(named)
    for profile in ("release", "debug"):
        built = REPO / "target" / profile / "agent-history"
        if built.exists():
            return built
    found = shutil.which("agent-history")
    if found is None:
        pytest.fail("no agent-history binary: run `cargo build` or set AGENT_HISTORY_BIN")
    return Path(found)


def cli_project(path: Path, target: str) -> bytes:
    """What `agent-history project --target TARGET PATH` prints, without its final newline."""
    done = subprocess.run(
        [str(cli()), "project", "--quiet", "--target", target, str(path)],
        check=True,
        capture_output=True,
    )
    return done.stdout.rstrip(b"\n")
