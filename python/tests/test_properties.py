"""Properties of the binding over generated histories (hypothesis): the projection is the
pure-Python reference repair, every target passes its validator, the history never changes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import agenthistory
from conftest import assistant, output, user


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """User and assistant messages, calls with unique ids, and outputs: for an earlier call,
    for none (an orphan), or missing (an interrupted call)."""
    items: list[dict[str, Any]] = [user("start")]
    calls: list[str] = []
    answered: set[str] = set()
    for step in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "output", "orphan"]))
        if kind == "user":
            items.append(user(f"u{step}"))
        elif kind == "assistant":
            items.append(assistant(f"a{step}"))
        elif kind == "call":
            call_id = f"c{step}"
            calls.append(call_id)
            items.append({"type": "function_call", "id": f"fc_{step}", "call_id": call_id, "name": "shell", "arguments": "{}"})
        elif kind == "output" and calls:
            call_id = draw(st.sampled_from(calls))
            if call_id not in answered:
                answered.add(call_id)
                items.append(output(call_id, f"out {step}"))
        elif kind == "orphan":
            items.append(output(f"gone{step}"))
    return items


def reference(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Codex's repair, written again over plain lists: an output whose call is nowhere is
    dropped; a call with no output anywhere gets an `aborted` one right after it."""
    called = {item["call_id"] for item in items if item["type"] == "function_call"}
    answered = {item["call_id"] for item in items if item["type"] == "function_call_output"}
    view: list[dict[str, Any]] = []
    for item in items:
        if item["type"] == "function_call_output" and item["call_id"] not in called:
            continue
        view.append(item)
        if item["type"] == "function_call" and item["call_id"] not in answered:
            view.append({"type": "function_call_output", "call_id": item["call_id"], "output": "aborted"})
    return view


def without_synthetic_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in item.items() if not (key == "id" and item["type"] == "function_call_output")}
        for item in items
    ]


@settings(max_examples=200, deadline=None)
@given(histories())
def test_the_projection_is_the_reference_repair_and_leaves_the_history(items: list[dict[str, Any]]) -> None:
    history = agenthistory.History(items)
    before = history.items_json()
    projection = history.project()
    assert without_synthetic_ids(projection.items()) == reference(items)
    assert json.loads(projection.json()) == projection.items()
    assert history.items_json() == before
    # The same history gives the same bytes: the synthetic ids are stable.
    assert agenthistory.History(items).project().json() == projection.json()


@settings(max_examples=200, deadline=None)
@given(histories())
def test_every_target_passes_its_validator(items: list[dict[str, Any]]) -> None:
    history = agenthistory.History(items)
    for target in ("responses", "chat", "anthropic"):
        projection = history.project(target=target)
        findings = agenthistory.validate(projection.items(), target=target)
        errors = [finding for finding in findings if finding["severity"] == "error"]
        assert errors == [], (target, errors)
    # Not vacuous: the durable items, unrepaired, break the rules whenever a call is unanswered
    # or an output orphaned.
    if without_synthetic_ids(reference(items)) != items:
        assert agenthistory.validate(items, target="responses")


@settings(max_examples=100, deadline=None)
@given(histories(), st.integers(0, 5))
def test_a_fork_and_a_rollback_leave_the_parent(items: list[dict[str, Any]], turns: int) -> None:
    parent = agenthistory.History(items)
    before = parent.items_json()
    child = parent.fork()
    child.drop_last_user_turns(min(turns, child.user_turn_count))
    child.record(user("only the child"))
    assert parent.items_json() == before
    assert child.items()[-1] == user("only the child")
