"""agenthistory.agents.HistorySession with the real OpenAI Agents SDK (openai-agents from PyPI):
a Runner whose model calls a tool, a crash between the call and its output, a second run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import agents
import pytest
from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import agenthistory
from agenthistory.agents import HistorySession
from conftest import call, user

agents.set_tracing_disabled(True)  # no trace export from the tests


class Crash(BaseException):
    """The process dies: nothing after it runs (a BaseException, as KeyboardInterrupt is)."""


def unanswered(items: list[Any]) -> list[str]:
    """The call ids the provider would answer with a 400: calls without an output after them."""
    calls = [item["call_id"] for item in items if item.get("type") == "function_call"]
    outputs = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
    return [call_id for call_id in calls if call_id not in outputs]


class StubModel(Model):
    """Answers with a tool call on the first request of a run, then with a message; records every
    input it is sent and refuses, like the API, one with an unanswered call."""

    def __init__(self, tool_call: bool) -> None:
        self.tool_call = tool_call
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else json.loads(json.dumps(input, default=str))
        self.inputs.append(items)
        missing = unanswered(items)
        if missing:
            raise RuntimeError(f"400: No tool output found for function call {missing[0]}")
        if self.tool_call and len(self.inputs) == 1:
            output: Any = ResponseFunctionToolCall(
                type="function_call", id="fc_run", call_id="call_run", name="run_tests", arguments="{}", status="completed"
            )
        else:
            output = ResponseOutputMessage(
                type="message", id=f"msg_{len(self.inputs)}", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text="all green", annotations=[])],
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def agent_with(model: StubModel, crash: bool) -> Agent[Any]:
    @function_tool
    def run_tests() -> str:
        """Runs the test suite."""
        if crash:
            raise Crash()
        return "ok"

    return Agent(name="coder", instructions="fix the build", model=model, tools=[run_tests])


def test_a_crash_in_the_tool_loses_only_the_unfinished_turn(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    session = HistorySession("build-fixer", path)
    with pytest.raises(Crash):
        asyncio.run(Runner.run(agent_with(StubModel(tool_call=True), crash=True), "run the tests", session=session))
    session.close()  # the process is gone; its lock with it
    # The SDK writes a run's input first and a turn's items once its tools have run.
    assert [item["content"] for item in agenthistory.resume(path).items()] == [
        [{"type": "input_text", "text": "run the tests"}]
    ]
    resumed = HistorySession("build-fixer", path)
    second = StubModel(tool_call=False)
    result = asyncio.run(Runner.run(agent_with(second, crash=False), "try again", session=resumed))
    assert result.final_output == "all green"
    assert unanswered(second.inputs[0]) == []
    resumed.close()


class CrashingWrite(HistorySession):
    """Dies while writing a turn: the call reaches the rollout, its output does not."""

    def _add(self, items: list[Any]) -> None:
        kinds = [item.get("type") for item in items]
        if "function_call_output" in kinds:
            super()._add(items[: kinds.index("function_call") + 1])
            raise Crash()
        super()._add(items)


def test_a_run_after_a_crash_between_a_call_and_its_output_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    session = CrashingWrite("build-fixer", path)
    with pytest.raises(Crash):
        asyncio.run(Runner.run(agent_with(StubModel(tool_call=True), crash=False), "run the tests", session=session))
    session.close()
    durable = agenthistory.resume(path).items()
    assert unanswered(durable) == ["call_run"]

    resumed = HistorySession("build-fixer", path)
    second = StubModel(tool_call=False)
    result = asyncio.run(Runner.run(agent_with(second, crash=False), "try again", session=resumed))
    assert result.final_output == "all green"
    sent = second.inputs[0]
    assert unanswered(sent) == []
    answer = next(item for item in sent if item.get("type") == "function_call_output")
    assert (answer["call_id"], answer["output"]) == ("call_run", agenthistory.ABORTED_OUTPUT)
    items = asyncio.run(resumed.get_items())
    assert items[-1]["content"][0]["text"] == "all green"
    resumed.close()
    # The repair reached the request only: the rollout still holds the call without an output.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    payloads = [line["payload"] for line in lines if line["type"] == "response_item"]
    assert unanswered(payloads) == ["call_run"]
    assert all(payload.get("output") != "aborted" for payload in payloads)


def test_an_unanswered_call_in_the_rollout_is_answered_in_what_the_runner_sends(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as writer:
        writer.extend([user("run the tests"), call("call_lost", item_id="fc_lost")])
    session = HistorySession("s", path)
    model = StubModel(tool_call=False)
    result = asyncio.run(Runner.run(agent_with(model, crash=False), "and now?", session=session))
    assert result.final_output == "all green"
    sent = model.inputs[0]
    answer = next(item for item in sent if item.get("type") == "function_call_output")
    assert (answer["call_id"], answer["output"]) == ("call_lost", "aborted")
    session.close()
    assert unanswered(agenthistory.resume(path).items()) == ["call_lost"]


def test_the_protocol_methods(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = HistorySession("protocol", tmp_path / "rollout.jsonl")
        assert isinstance(session, agents.memory.Session)
        await session.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"}])
        await session.add_items([{"role": "user", "content": "two"}, call("c1"), {"role": "assistant", "content": "b"}])
        items = await session.get_items()
        assert [item["type"] for item in items] == ["message", "message", "message", "function_call", "function_call_output", "message"]
        # A window that would start between a call and its output reaches back to the call.
        assert [item["type"] for item in await session.get_items(limit=2)] == [
            "function_call", "function_call_output", "message"
        ]
        assert len(await session.get_items(limit=3)) == 3
        assert len(await session.get_items(limit=1)) == 1
        assert await session.get_items(limit=0) == []
        popped = await session.pop_item()
        assert popped is not None and popped["content"][0]["text"] == "b"
        assert [item.get("call_id") for item in await session.get_items()][-2:] == ["c1", "c1"]
        session.close()
        reopened = HistorySession("protocol", tmp_path / "rollout.jsonl")
        assert len(await reopened.get_items()) == 5  # the pop survives a resume
        await reopened.clear_session()
        assert await reopened.get_items() == []
        assert await reopened.pop_item() is None
        reopened.close()
        again = HistorySession("protocol", tmp_path / "rollout.jsonl")
        assert await again.get_items() == []
        again.close()

    asyncio.run(scenario())


def test_one_writer_per_rollout(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    first = HistorySession("one", path)
    with pytest.raises(agenthistory.WriterLockError):
        HistorySession("one", path)
    first.close()


def test_a_system_message_is_kept_as_a_developer_message(tmp_path: Path) -> None:
    async def scenario() -> list[Any]:
        async with HistorySession("s", tmp_path / "rollout.jsonl") as session:
            await session.add_items([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
            return await session.get_items()

    items = asyncio.run(scenario())
    assert [(item["role"], item["content"][0]["text"]) for item in items] == [("developer", "be brief"), ("user", "hi")]


def big_user(text: str) -> dict[str, Any]:
    # Over Codex's budget of user-message tokens kept by a compaction (20k tokens).
    return user(text + " " + "x" * 100_000)


def test_pop_and_clear_after_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as writer:
        writer.extend([big_user("u0"), assistant_item("a0"), big_user("u1"), assistant_item("a1")])
        writer.compact("they talked")
        before = writer.history.items()

    async def scenario() -> None:
        session = HistorySession("s", path)
        # The last user turn began before the compaction: a rollback would not give the items
        # before it, so the pop is refused and nothing changes.
        with pytest.raises(agenthistory.Error, match="compaction"):
            await session.pop_item()
        assert await session.get_items() == before
        await session.add_items([{"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"}])
        popped = await session.pop_item()
        assert popped is not None and popped["content"][0]["text"] == "a2"
        assert (await session.get_items())[-1]["content"][0]["text"] == "u2"
        await session.clear_session()
        assert await session.get_items() == []
        session.close()
        again = HistorySession("s", path)
        assert await again.get_items() == []
        again.close()

    asyncio.run(scenario())


def test_pop_without_a_user_turn_is_refused(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with HistorySession("s", tmp_path / "rollout.jsonl") as session:
            await session.add_items([{"role": "assistant", "content": "hello"}])
            with pytest.raises(agenthistory.Error, match="no user turn"):
                await session.pop_item()
            assert len(await session.get_items()) == 1

    asyncio.run(scenario())


def assistant_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def test_an_existing_file_that_is_not_a_rollout_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("")
    with pytest.raises(agenthistory.RolloutError):
        HistorySession("s", path)
    assert path.read_text() == ""
