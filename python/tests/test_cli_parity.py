"""The package projects the bundled sessions exactly as the command line does."""

from __future__ import annotations

from pathlib import Path

import pytest

import agenthistory
from conftest import ROLLOUTS, cli_project

SESSIONS = sorted(ROLLOUTS.glob("*.jsonl"))


@pytest.mark.parametrize("target", ["responses", "chat", "anthropic"])
@pytest.mark.parametrize("path", SESSIONS, ids=[path.name for path in SESSIONS])
def test_the_projection_is_the_clis_byte_for_byte(path: Path, target: str) -> None:
    projected = agenthistory.resume(path).project(target=target)  # type: ignore[arg-type]
    assert projected.json() == cli_project(path, target)


def test_the_bundled_interrupted_session_is_repaired() -> None:
    history = agenthistory.resume(ROLLOUTS / "interrupted.jsonl")
    projection = history.project()
    assert projection.counts().get("synthesized_output", 0) >= 1
    assert len(projection) > len(history) - projection.counts().get("dropped_orphan_output", 0)
