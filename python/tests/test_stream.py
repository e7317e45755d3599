"""StreamAccumulator: streamed responses of each API, fed as raw SSE bytes, dicts, JSON text or
the openai and anthropic SDKs' own event objects; only complete items are recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic._models
import openai._models
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

import agenthistory
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "stream"
STREAMS = [
    ("responses", "text_message.sse"),
    ("responses", "reasoning.sse"),
    ("responses", "parallel_calls.sse"),
    ("responses", "custom_tool_call.sse"),
    ("chat", "chat_tool_calls.sse"),
    ("anthropic", "anthropic_tool_use.sse"),
]

def sdk_event(format: str, data: str) -> Any:
    """The event object the SDK yields for this data: built as the SDKs build them while
    streaming (`construct_type`, which keeps the fields the server sent and checks nothing)."""
    value = json.loads(data)
    if format == "responses":
        return openai._models.construct_type(type_=ResponseStreamEvent, value=value)
    if format == "chat":
        return openai._models.construct_type(type_=ChatCompletionChunk, value=value)
    return anthropic._models.construct_type(type_=RawMessageStreamEvent, value=value)


def events(path: Path) -> list[str]:
    """The `data` of each event, `[DONE]` left out."""
    return [
        line[len("data: ") :]
        for line in path.read_text().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def accumulate(format: str, feed: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    history = agenthistory.History()
    accumulator = agenthistory.StreamAccumulator(history, format=format)  # type: ignore[arg-type]
    feed(accumulator)
    summary = accumulator.finish()
    return history.items(), summary


@pytest.mark.parametrize(("format", "name"), STREAMS, ids=[name for _, name in STREAMS])
def test_every_form_of_a_stream_records_the_same_items(format: str, name: str) -> None:
    path = FIXTURES / name
    raw = path.read_bytes()
    whole, summary = accumulate(format, lambda acc: acc.feed(raw))
    assert whole, "the stream completes at least one item"
    assert summary["dropped"] == [] and summary["recorded"] == len(whole)

    def in_pieces(acc: agenthistory.StreamAccumulator) -> None:
        for start in range(0, len(raw), 7):
            acc.feed(raw[start : start + 7])

    def as_dicts(acc: agenthistory.StreamAccumulator) -> None:
        for data in events(path):
            acc.push(json.loads(data))

    def as_text(acc: agenthistory.StreamAccumulator) -> None:
        for data in events(path):
            acc.push(data)

    def as_sdk_objects(acc: agenthistory.StreamAccumulator) -> None:
        for data in events(path):
            event = sdk_event(format, data)
            assert not isinstance(event, dict), "an SDK model, not a dict"
            acc.push(event)

    for feed in (in_pieces, as_dicts, as_text, as_sdk_objects):
        items, _ = accumulate(format, feed)
        assert items == whole, feed.__name__


def test_updates_show_deltas_and_the_end() -> None:
    history = agenthistory.History()
    accumulator = agenthistory.StreamAccumulator(history)
    updates = accumulator.feed((FIXTURES / "text_message.sse").read_bytes())
    kinds = [update["type"] for update in updates]
    assert kinds[0] == "added" and kinds[-1] == "ended"
    text = "".join(update["delta"] for update in updates if update["type"] == "delta")
    assert text == history.items()[0]["content"][0]["text"]
    assert accumulator.ended


def test_a_stream_cut_short_records_only_complete_items() -> None:
    raw = (FIXTURES / "parallel_calls.sse").read_bytes()
    second = raw.index(b"event: response.output_item.added", raw.index(b"response.output_item.done"))
    history = agenthistory.History()
    accumulator = agenthistory.StreamAccumulator(history)
    accumulator.feed(raw[: second + 400])
    summary = accumulator.abort()
    assert [item["call_id"] for item in history.items()] == ["call_a"]
    assert [item["output_index"] for item in summary["dropped"]] == [1]
    assert summary["end"] == "aborted"


def test_a_session_writes_each_complete_item(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    raw = (FIXTURES / "parallel_calls.sse").read_bytes()
    first_done = raw.index(b"\n\n", raw.index(b"event: response.output_item.done")) + 2
    with agenthistory.Session.create(path, durability="flush") as session:
        accumulator = agenthistory.StreamAccumulator(session)
        accumulator.feed(raw[:first_done])
        # Written as it completed, before the stream ended.
        written = [json.loads(line) for line in path.read_text().splitlines()][1:]
        assert [line["payload"]["call_id"] for line in written] == ["call_a"]
        accumulator.feed(raw[first_done:])
        accumulator.finish()
        live = session.history
    assert [item["call_id"] for item in live.items()] == ["call_a", "call_b"]
    assert agenthistory.resume(path).items() == live.items()


def test_bad_events_are_stream_errors_naming_the_event() -> None:
    history = agenthistory.History()
    accumulator = agenthistory.StreamAccumulator(history)
    accumulator.push({"type": "response.created", "response": {"id": "r", "output": []}})
    with pytest.raises(agenthistory.StreamError) as raised:
        accumulator.push("{not json")
    assert raised.value.event == 2
    assert len(history) == 0
    with pytest.raises(agenthistory.Error, match="format"):
        agenthistory.StreamAccumulator(history, format="gemini")  # type: ignore[arg-type]
    with pytest.raises(agenthistory.Error, match="History or a Session"):
        agenthistory.StreamAccumulator([])  # type: ignore[arg-type]
