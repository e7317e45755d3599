"""Session: a history and its rollout kept in step; resume from a rollout or a snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agenthistory
from conftest import assistant, call, output, user


def texts(item: dict[str, Any]) -> str:
    return "".join(part["text"] for part in item["content"])


def rollout_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_session_writes_every_item_and_resumes_to_the_same_history(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path, durability="flush") as session:
        assert session.record(user("list files")) == 0
        session.extend([call("c1", item_id="fc_1"), output("c1", "a b c"), assistant("done")])
        live = session.history
        assert session.path == path
        thread = session.thread_id
    assert session.closed
    lines = rollout_lines(path)
    assert lines[0]["type"] == "session_meta"
    assert lines[0]["payload"]["id"] == thread  # type: ignore[index]
    assert [line["payload"] for line in lines[1:]] == live.items()
    assert agenthistory.resume(path).items_json() == live.items_json()
    with agenthistory.Session.resume(path) as resumed:
        assert resumed.history.items() == live.items()
        assert resumed.report is not None and resumed.report["skipped"] == []


def test_the_rollout_never_holds_a_repair(tmp_path: Path) -> None:
    """The seed scenario: the process stops between a call and its output."""
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.record(user("run the tests"))
        session.record(call("c1", item_id="fc_1"))
        live = session.history
    history = agenthistory.resume(path)
    projection = history.project()
    assert projection.items()[-1]["output"] == "aborted"
    assert history.items() == live.items()
    assert len(history) == 2
    # The session gives the user message an id, as Codex does; the call keeps its own.
    payloads = [line["payload"] for line in rollout_lines(path)[1:]]
    assert payloads == live.items()
    assert payloads[1] == call("c1", item_id="fc_1")
    assert all(payload["type"] != "function_call_output" for payload in payloads)  # type: ignore[index]


def test_a_snapshot_resumes_the_same_history(tmp_path: Path) -> None:
    path, snapshot = tmp_path / "rollout.jsonl", tmp_path / "rollout.snap"
    with agenthistory.Session.create(path) as session:
        session.extend([user("one"), assistant("a")])
        header = session.write_snapshot(snapshot)
        session.record(user("two"))
        live = session.history
    assert header["rollout"]["lines"] == 3
    history, report = agenthistory.resume_with_report(path, snapshot=snapshot)
    assert history.items() == live.items()
    assert report["lines"] == 4
    assert report["source"]["source"] == "snapshot" and report["source"]["covered"]["lines"] == 3
    with agenthistory.Session.resume(path, snapshot=snapshot) as resumed:
        assert resumed.history.items() == live.items()
        assert resumed.report is not None and resumed.report["source"]["source"] == "snapshot"
    assert agenthistory.resume_with_report(path)[1]["source"] == {"source": "rollout"}


def test_compaction_and_rollback_are_written_and_resumed(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.extend([user("1"), assistant("a"), user("2"), assistant("b")])
        session.rollback(1)
        assert [texts(item) for item in session.history.items()] == ["1", "a"]
        session.compact("the user said 1")
        compacted = session.history
        session.record(user("3"))
        live = session.history
    assert "the user said 1" in json.dumps(compacted.items())
    kinds = [line["type"] for line in rollout_lines(path)]
    assert "compacted" in kinds
    assert agenthistory.resume(path).items() == live.items()


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.record(user("hi"))
        with pytest.raises(agenthistory.WriterLockError) as raised:
            agenthistory.Session.resume(path)
        assert isinstance(raised.value, agenthistory.RolloutWriteError)
        assert raised.value.path == str(path)
    # Released by close: resuming now works.
    with agenthistory.Session.resume(path) as resumed:
        assert len(resumed.history) == 1


def test_creating_over_an_existing_file_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.record(user("keep me"))
    before = path.read_bytes()
    with pytest.raises(agenthistory.RolloutWriteError) as raised:
        agenthistory.Session.create(path)
    assert raised.value.path == str(path)
    assert path.read_bytes() == before


def test_a_closed_session_refuses_work(tmp_path: Path) -> None:
    session = agenthistory.Session.create(tmp_path / "rollout.jsonl")
    session.close()
    session.close()
    with pytest.raises(agenthistory.Error, match="closed"):
        session.record(user("late"))


def test_a_bad_item_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.record(user("hi"))
        before = path.read_bytes()
        with pytest.raises(agenthistory.ItemError):
            session.record("[1, 2]")
        assert path.read_bytes() == before
        assert len(session.history) == 1


def test_a_bad_item_in_extend_writes_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        session.record(user("a"))
        before = path.read_bytes()
        with pytest.raises(agenthistory.ItemError) as raised:
            session.extend([user("b"), "{bad", user("c")])
        assert raised.value.position == 1
        assert path.read_bytes() == before
        assert len(session.history) == 1


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(agenthistory.Error, match="durability"):
        agenthistory.Session.create(tmp_path / "a.jsonl", durability="often")  # type: ignore[arg-type]
    with pytest.raises(agenthistory.Error, match="thread id"):
        agenthistory.Session.create(tmp_path / "b.jsonl", thread_id="not a uuid")
    thread = "5973b6c0-94b8-487b-a530-2aeb6098ae0c"
    with agenthistory.Session.create(tmp_path / "c.jsonl", thread_id=thread) as session:
        assert session.thread_id == thread


def active(session: agenthistory.Session) -> str | None:
    """The active turn, read afresh (mypy would keep a narrowed property)."""
    return session.active_turn


def test_turns_are_written_as_codex_writes_them_and_resumed(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path) as session:
        turn = session.begin_turn({"cwd": "/work", "model": "gpt-5.1-codex"})
        assert active(session) == turn
        with pytest.raises(agenthistory.RolloutWriteError, match="turn is active"):
            session.begin_turn({"cwd": "/work"})
        session.record(user("hi"))
        session.complete_turn("done")
        assert active(session) is None
        with pytest.raises(agenthistory.RolloutWriteError, match="no turn is active"):
            session.complete_turn()
        second = session.begin_turn('{"cwd":"/work"}', turn_id="turn-2")
        assert second == "turn-2"
        session.abort_turn("interrupted")
        with pytest.raises(agenthistory.Error, match="abort reason"):
            session.abort_turn("bored")  # type: ignore[arg-type]
        third = session.begin_turn({"cwd": "/work"})
        session.record(user("again"))
    lines = rollout_lines(path)
    events = [line["payload"]["type"] for line in lines if line["type"] == "event_msg"]  # type: ignore[index]
    assert events == ["task_started", "task_complete", "task_started", "turn_aborted", "task_started"]
    contexts = [line["payload"] for line in lines if line["type"] == "turn_context"]
    assert contexts[0] == {"turn_id": turn, "cwd": "/work", "model": "gpt-5.1-codex"}
    # The last turn was never ended: resume says so.
    _, report = agenthistory.resume_with_report(path)
    assert report["incomplete_turn"] is not None
    assert report["incomplete_turn"]["turn_id"] == third
