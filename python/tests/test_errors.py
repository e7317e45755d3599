"""Bad input of every kind Python can pass: a typed error naming where, nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

import agenthistory
from conftest import ROLLOUTS, user

META = (
    '{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":'
    '{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0c","timestamp":"2026-11-03T14:00:00.000Z"}}\n'
)
ITEM = (
    '{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":'
    '{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}\n'
)


def test_every_error_is_a_value_error_of_one_hierarchy() -> None:
    for kind in (
        agenthistory.ItemError,
        agenthistory.RolloutError,
        agenthistory.RolloutWriteError,
        agenthistory.WriterLockError,
        agenthistory.SnapshotError,
        agenthistory.ProjectionError,
        agenthistory.StreamError,
    ):
        assert issubclass(kind, agenthistory.Error)
        assert kind.__module__ == "agenthistory"
    assert issubclass(agenthistory.Error, ValueError)
    assert agenthistory.ItemError.__name__ == "ItemError"


@pytest.mark.parametrize(
    "item",
    [
        "{",  # malformed JSON
        "[1, 2]",  # not an object
        '{"type": "message", "role": "user", "content": []} trailing',
        b"\xff\xfe",  # not UTF-8
        "",
    ],
)
def test_a_bad_item_is_refused_and_the_history_is_unchanged(item: str | bytes) -> None:
    history = agenthistory.History([user("hi")])
    before = history.items_json()
    with pytest.raises(agenthistory.Error):
        history.record(item)
    assert history.items_json() == before


def test_a_value_that_is_not_json_is_refused() -> None:
    history = agenthistory.History()
    with pytest.raises(agenthistory.Error, match="JSON"):
        history.record({"type": "message", "bad": object()})
    assert len(history) == 0


def test_a_missing_rollout_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    with pytest.raises(agenthistory.RolloutError) as raised:
        agenthistory.resume(path)
    assert raised.value.path == str(path)
    assert raised.value.line is None


def test_an_empty_or_foreign_file_is_not_a_rollout(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(agenthistory.RolloutError, match="empty"):
        agenthistory.resume(empty)
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"hello": "world"}\n')
    with pytest.raises(agenthistory.RolloutError, match="session_meta"):
        agenthistory.resume(foreign)
    with pytest.raises(agenthistory.RolloutError):
        agenthistory.resume(tmp_path)  # a directory


def test_a_torn_or_malformed_line_is_skipped_and_reported_with_its_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text(META + "{not json}\n" + ITEM + '{"timestamp":"2026-11-03T14:00:02.000Z","ty')
    before = path.read_bytes()
    history, report = agenthistory.resume_with_report(path)
    assert len(history) == 1
    assert report["torn_tail"] is True
    skipped = [(line["line"], line["offset"]) for line in report["skipped"]]
    assert skipped == [(2, len(META)), (4, len(META) + len("{not json}\n") + len(ITEM))]
    assert path.read_bytes() == before  # reading never writes


def test_a_damaged_snapshot_is_not_used_and_the_rollout_is_read(tmp_path: Path) -> None:
    path, snapshot = tmp_path / "rollout.jsonl", tmp_path / "rollout.snap"
    path.write_text(META + ITEM)
    snapshot.write_bytes(b"not a snapshot at all")
    history, report = agenthistory.resume_with_report(path, snapshot=snapshot)
    assert len(history) == 1
    assert report["lines"] == 2


def test_a_snapshot_that_cannot_be_written_names_its_path(tmp_path: Path) -> None:
    with agenthistory.Session.create(tmp_path / "rollout.jsonl") as session:
        session.record(user("hi"))
        target = tmp_path / "no-such-dir" / "rollout.snap"
        with pytest.raises(agenthistory.SnapshotError) as raised:
            session.write_snapshot(target)
        assert raised.value.path == str(target)


def test_a_legacy_rollout_is_read_but_not_resumed_for_writing(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_text(
        '{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0c","timestamp":"2025-04-01T10:00:00.000Z"}\n'
        '{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}\n'
    )
    assert len(agenthistory.resume(legacy)) == 1
    with pytest.raises(agenthistory.RolloutWriteError, match="legacy"):
        agenthistory.Session.resume(legacy)


def test_the_bundled_sessions_resume() -> None:
    for path in sorted(ROLLOUTS.glob("*.jsonl")):
        assert len(agenthistory.resume(path)) > 0, path
