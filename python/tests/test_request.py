"""Whole request bodies (PromptCompiler, ToolPlan) and validate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import agenthistory
from conftest import ROLLOUTS, call, cli, user

TOOLS = [
    {"type": "function", "name": "shell", "description": "Runs a command.", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"type": "web_search"},
]
SESSIONS = sorted(ROLLOUTS.glob("*.jsonl"))


@pytest.mark.parametrize("target", ["responses", "chat", "anthropic"])
@pytest.mark.parametrize("path", SESSIONS, ids=[path.name for path in SESSIONS])
def test_the_body_is_the_clis_byte_for_byte(path: Path, target: str, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    expected = subprocess.run(
        [str(cli()), "project", "--quiet", "--request", "--model", "m-1", "--instructions", "Be brief.",
         "--tools", str(tools), "--target", target, str(path)],
        check=True, capture_output=True,
    ).stdout.rstrip(b"\n")
    compiler = agenthistory.PromptCompiler("m-1", instructions="Be brief.", tools=agenthistory.ToolPlan(TOOLS))
    request = compiler.compile(agenthistory.resume(path), target=target)  # type: ignore[arg-type]
    assert request.body() == expected
    assert request.target == target


def test_what_a_target_cannot_take_is_named() -> None:
    history = agenthistory.History([user("search the web"), call("c1")])
    compiler = agenthistory.PromptCompiler("claude-x", tools=TOOLS, reasoning_effort="high", prompt_cache_key="k")
    request = compiler.compile(history, target="anthropic")
    assert request.dropped_tools == [{"index": 1, "type": "web_search", "name": None}]
    assert set(request.left_out) >= {"reasoning", "prompt_cache_key"}
    body = json.loads(request.body())
    assert [tool["name"] for tool in body["tools"]] == ["shell"]
    assert request.counts()["synthesized_output"] == 1
    assert agenthistory.validate(body, target="anthropic") == []


def test_responses_settings_reach_the_body() -> None:
    compiler = agenthistory.PromptCompiler(
        "gpt-x", instructions="hi", tool_choice="required", store=True, stream=False,
        max_output_tokens=100, include=[],
    )
    body = json.loads(compiler.compile(agenthistory.History([user("go")])).body())
    assert (body["model"], body["instructions"], body["tool_choice"]) == ("gpt-x", "hi", "required")
    assert (body["store"], body["stream"], body["max_output_tokens"]) == (True, False, 100)
    assert body["input"] == [user("go")]


def test_parallel_tool_calls_reach_the_body_without_tools() -> None:
    body = json.loads(agenthistory.PromptCompiler("m", parallel_tool_calls=True).compile(agenthistory.History()).body())
    assert body["parallel_tool_calls"] is True


def test_validate_finds_what_the_api_would_reject() -> None:
    findings = agenthistory.validate([user("hi"), call("c1")], target="responses")
    assert [finding["rule"] for finding in findings] == ["responses_call_without_output"]
    assert findings[0]["ids"] == ["c1"] and findings[0]["severity"] == "error"
    chat = {"messages": [{"role": "tool", "tool_call_id": "x", "content": "orphan"}]}
    assert agenthistory.validate(json.dumps(chat), target="chat")
    assert agenthistory.validate(agenthistory.History([user("hi"), call("c1")]).project().json()) == []


def test_bad_tool_specs_and_bodies_are_errors() -> None:
    with pytest.raises(agenthistory.Error):
        agenthistory.ToolPlan([{"no": "type"}])
    with pytest.raises(agenthistory.Error, match="JSON"):
        agenthistory.validate(b"{not json")
    with pytest.raises(agenthistory.Error, match="unknown target"):
        agenthistory.validate([], target="gemini")  # type: ignore[arg-type]
    assert len(agenthistory.ToolPlan(TOOLS)) == 2
    assert agenthistory.ToolPlan(TOOLS).specs() == TOOLS
