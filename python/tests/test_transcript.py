"""Claude Code transcripts from Python: the conversation a resume sends, as a History whose
Anthropic projection gives back the file's blocks, with what reading found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agenthistory
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "claude-code"


def test_a_transcript_reads_as_the_conversation_a_resume_sends() -> None:
    history = agenthistory.read_transcript(FIXTURES / "interrupted.jsonl")
    messages = json.loads(history.project("anthropic").json())
    assert agenthistory.validate(messages, target="anthropic") == []
    # The call left unanswered at the end is answered in the projection only.
    last = messages[-1]["content"][0]
    assert last == {"type": "tool_result", "tool_use_id": "toolu_i2", "content": "aborted", "is_error": True}
    assert all("aborted" not in json.dumps(item) for item in history.items())


def test_the_report_names_rescues_drops_and_what_was_read_past() -> None:
    _, report = agenthistory.read_transcript_with_report(FIXTURES / "progress_fork.jsonl")
    [rescue] = report["conversation"]["rescues"]
    assert (rescue["line"], rescue["kind"], rescue["now_under"]) == (6, "progress_fork", "a2")
    assert report["transcript"]["read_past"] == {"progress": 1}
    _, interrupted = agenthistory.read_transcript_with_report(FIXTURES / "interrupted.jsonl")
    kinds = [dropped["what"]["kind"] for dropped in interrupted["conversation"]["dropped"]]
    assert kinds == ["api_error", "thinking_only"]
    assert interrupted["model"] == "claude-opus-4-5"


def test_the_anthropic_projection_gives_back_the_blocks_the_file_holds() -> None:
    path = FIXTURES / "blocks.jsonl"
    blocks = [
        block
        for line in path.read_text().splitlines()
        for block in json.loads(line)["message"]["content"]
    ]
    messages = json.loads(agenthistory.read_transcript(path).project("anthropic").json())
    assert [block for message in messages for block in message["content"]] == blocks


def test_a_file_that_is_no_transcript_raises_a_transcript_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1]\n2\n")
    with pytest.raises(agenthistory.TranscriptError) as raised:
        agenthistory.read_transcript(bad)
    assert raised.value.path == str(bad)
    assert isinstance(raised.value, agenthistory.Error)
