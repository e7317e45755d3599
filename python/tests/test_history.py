"""History: recording, forking, rolling back, projecting."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

import agenthistory
from conftest import assistant, call, output, user


def test_a_dict_is_recorded_and_read_back_as_the_same_item() -> None:
    history = agenthistory.History()
    assert history.record(user("hi")) == 0
    assert history.record(assistant("hello")) == 1
    assert len(history) == 2
    assert history.items() == [user("hi"), assistant("hello")]


def test_json_text_is_kept_verbatim() -> None:
    text = '{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}],"extra":1.50}'
    history = agenthistory.History()
    history.record(text)
    history.record(text.encode())
    assert history.items_json() == f"[{text},{text}]".encode()


def test_extend_records_every_item_or_none() -> None:
    history = agenthistory.History([user("one")])
    history.extend([assistant("two"), user("three")])
    assert len(history) == 3
    with pytest.raises(agenthistory.ItemError) as raised:
        history.extend([user("four"), "{not json", user("five")])
    assert raised.value.position == 1
    assert len(history) == 3
    assert history.items()[-1] == user("three")


def test_a_fork_is_independent_of_its_parent() -> None:
    parent = agenthistory.History([user("a"), assistant("b")])
    child = parent.fork()
    shallow = copy.copy(parent)
    deep = copy.deepcopy(parent)
    child.record(user("only the child"))
    parent.record(user("only the parent"))
    assert [item["content"][0]["text"] for item in child.items()] == ["a", "b", "only the child"]
    assert [item["content"][0]["text"] for item in parent.items()] == ["a", "b", "only the parent"]
    assert len(shallow) == 2 and len(deep) == 2


def test_dropping_user_turns_goes_back_to_before_them() -> None:
    history = agenthistory.History([user("1"), assistant("a"), user("2"), assistant("b"), user("3")])
    assert history.user_turn_count == 3
    history.drop_last_user_turns(2)
    assert history.items() == [user("1"), assistant("a")]
    assert history.user_turn_count == 1


def test_a_call_without_output_gets_a_synthetic_output_in_the_projection_only() -> None:
    history = agenthistory.History([user("run it"), call("c1", item_id="fc_existing")])
    durable = history.items_json()
    projection = history.project()
    synthetic = projection.items()[-1]
    # The Rust library's own doctest pins this id for the call item id `fc_existing`.
    assert synthetic == {
        "type": "function_call_output",
        "id": "fco_742749b0-3645-5d32-a172-676827826a07",
        "call_id": "c1",
        "output": agenthistory.ABORTED_OUTPUT,
    }
    name = uuid.uuid5(uuid.UUID(agenthistory.SYNTHETIC_ID_NAMESPACE), "fco:fc_existing")
    assert synthetic["id"] == f"fco_{name}"
    assert projection.report == [
        {
            "kind": "synthesized_output",
            "output_kind": "function_call_output",
            "output_id": synthetic["id"],
            "position": 1,
            "item_kind": "function_call",
            "call_id": "c1",
            "stage": "projection",
        }
    ]
    assert projection.counts() == {"synthesized_output": 1}
    assert history.items_json() == durable
    assert len(history) == 2


def test_an_output_without_a_call_is_dropped() -> None:
    history = agenthistory.History([user("hi"), output("nobody")])
    projection = history.project()
    assert projection.items() == [user("hi")]
    assert [repair["kind"] for repair in projection.report] == ["dropped_orphan_output"]


def test_the_json_is_the_items_array() -> None:
    history = agenthistory.History([user("hi"), call("c1"), output("c1")])
    projection = history.project()
    assert json.loads(projection.json()) == projection.items() == history.items()
    assert len(projection) == 3


def test_every_target_pairs_the_calls() -> None:
    history = agenthistory.History([user("go"), call("c1"), call("c2"), output("c2")])
    chat = history.project(target="chat")
    assert chat.target == "chat"
    messages = chat.items()
    # Each assistant message with tool calls is followed by one tool message per call.
    for index, message in enumerate(messages):
        for offset, tool_call in enumerate(message.get("tool_calls") or [], start=1):
            answer = messages[index + offset]
            assert (answer["role"], answer["tool_call_id"]) == ("tool", tool_call["id"])
    answered = [message["tool_call_id"] for message in messages if message["role"] == "tool"]
    assert sorted(answered) == ["c1", "c2"]
    anthropic = history.project(target="anthropic")
    results = [
        block["tool_use_id"]
        for message in anthropic.items()
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    assert sorted(results) == ["c1", "c2"]
    assert json.loads(anthropic.json()) == anthropic.items()


def test_images_become_a_placeholder_for_a_text_only_model() -> None:
    image = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}],
    }
    history = agenthistory.History([image])
    assert history.project(modalities="text,image").items() == [image]
    text_only = history.project(modalities="text")
    assert text_only.items()[0]["content"][0]["type"] == "input_text"
    assert text_only.counts() == {"stripped_images": 1}
    assert history.items() == [image]


def test_strict_projection_raises_instead_of_repairing() -> None:
    # An interrupted function call is normal and still repaired; an orphan output is a bug.
    assert len(agenthistory.History([call("c1")]).project(strict=True)) == 2
    history = agenthistory.History([user("hi"), output("nobody")])
    with pytest.raises(agenthistory.ProjectionError, match="projection"):
        history.project(strict=True)
    with pytest.raises(agenthistory.ProjectionError):
        agenthistory.project([output("nobody")], target="chat", strict=True)


def test_the_pure_function_projects_a_list() -> None:
    items = [user("hi"), call("c1")]
    projection = agenthistory.project(items, target="chat")
    assert projection.items()[-1] == {"role": "tool", "tool_call_id": "c1", "content": "aborted"}
    assert items == [user("hi"), call("c1")]


def test_unknown_names_are_errors() -> None:
    history = agenthistory.History()
    with pytest.raises(agenthistory.Error, match="unknown target"):
        history.project(target="gemini")  # type: ignore[arg-type]
    with pytest.raises(agenthistory.Error):
        history.project(modalities="text,smell")


def test_a_system_message_is_filtered_out_as_codex_does() -> None:
    history = agenthistory.History()
    system = {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "rules"}]}
    assert history.record(system) is None
    assert history.record(user("hi")) == 0
    assert history.items() == [user("hi")]
