"""Bad input of every kind Python can pass: a typed error naming where, nothing changed."""

from __future__ import annotations

import json
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
    with pytest.raises(agenthistory.ItemError):
        history.record(item)
    assert history.items_json() == before


def test_a_value_that_is_not_json_is_refused() -> None:
    history = agenthistory.History()
    with pytest.raises(agenthistory.ItemError, match="JSON"):
        history.record({"type": "message", "bad": object()})
    with pytest.raises(agenthistory.ItemError, match="JSON"):
        history.record({"type": "x", "value": float("nan")})  # JSON has no NaN
    with pytest.raises(agenthistory.ItemError) as raised:
        history.extend([user("ok"), {"type": "x", "bad": object()}])
    assert raised.value.position == 1
    with pytest.raises(agenthistory.ItemError):
        history.record('{"type":"x","text":"\ud800"}')  # a lone surrogate: not Unicode text
    with pytest.raises(agenthistory.Error, match="not one item"):
        history.extend(json.dumps(user("one item")))
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


def envelope(payload: str) -> bytes:
    return ('{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":' + payload + "}").encode()


# Lines of the bad-input catalogue (docs/reliability.md), each skipped with its reason.
CATALOGUE = {
    "malformed-json": (b'{"type":"response_item","payload":', "invalid_json"),
    "trailing-characters": (ITEM.strip().encode() + b" x", "invalid_json"),
    "array-line": (b"[1,2]", "not_an_envelope"),
    "null-line": (b"null", "not_an_envelope"),
    "envelope-without-type": (b'{"payload":{}}', "not_an_envelope"),
    "item-without-type": (envelope('{"role":"user","content":[]}'), "invalid_item"),
    "item-of-the-wrong-shape": (envelope('{"type":"function_call","name":"f","arguments":""}'), "invalid_item"),
    "invalid-utf8-in-an-item": (
        envelope('{"type":"message","role":"user","content":[{"type":"input_text","text":"?"}]}').replace(b'"?"', b'"\xff"'),
        "invalid_utf8",
    ),
    "raw-nul-in-a-string": (envelope('{"type":"message","role":"user","content":[{"type":"input_text","text":"a\x00b"}]}'), "invalid_json"),
    "lone-surrogate": (envelope('{"type":"message","role":"user","content":[{"type":"input_text","text":"\\ud800"}]}'), "invalid_item"),
    "deep-nesting": (envelope('{"type":"x","v":' + "[" * 10000 + "]" * 10000 + "}"), "invalid_item"),
    "number-out-of-range": (envelope('{"type":"x","v":1e400}'), "invalid_item"),
}


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_catalogued_bad_line_is_skipped_with_its_reason_line_and_byte(name: str, tmp_path: Path) -> None:
    line, reason = CATALOGUE[name]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(META.encode() + line + b"\n" + ITEM.encode())
    before = path.read_bytes()
    history, report = agenthistory.resume_with_report(path)
    assert [(s["line"], s["offset"], s["reason"]) for s in report["skipped"]] == [(2, len(META), reason)]
    assert history.items() == [user("hi")]
    assert path.read_bytes() == before


def test_inputs_that_are_not_rollouts_are_named(tmp_path: Path) -> None:
    gzip = tmp_path / "rollout.jsonl.gz"
    gzip.write_bytes(b"\x1f\x8b\x08\x00" + bytes(64))
    with pytest.raises(agenthistory.RolloutError, match="gzip") as raised:
        agenthistory.resume(gzip)
    assert raised.value.path == str(gzip)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(agenthistory.RolloutError, match="NUL"):
        agenthistory.resume(binary)


def test_a_byte_order_mark_is_passed_over_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (META + ITEM).encode())
    history, report = agenthistory.resume_with_report(path)
    assert history.items() == [user("hi")]
    assert report["repaired"] and report["skipped"] == []


def test_a_truncated_snapshot_falls_back_to_the_rollout(tmp_path: Path) -> None:
    path, snapshot = tmp_path / "rollout.jsonl", tmp_path / "rollout.snap"
    with agenthistory.Session.create(path) as session:
        session.extend([user("one"), user("two")])
        session.write_snapshot(snapshot)
        live = session.history
    snapshot.write_bytes(snapshot.read_bytes()[:-10])
    assert agenthistory.resume(path, snapshot=snapshot).items() == live.items()


def test_a_snapshot_never_replaces_a_file_that_is_not_one(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    with agenthistory.Session.create(tmp_path / "rollout.jsonl") as session:
        session.record(user("hi"))
        with pytest.raises(agenthistory.SnapshotError) as raised:
            session.write_snapshot(precious)
    assert raised.value.path == str(precious)
    assert precious.read_text() == "keep me"


def test_every_exception_has_the_location_attributes_even_when_raised_by_python() -> None:
    error = agenthistory.RolloutError("raised by hand")
    assert (error.path, error.line, error.byte, error.position) == (None, None, None, None)
    assert agenthistory.StreamError("x").event is None
    with pytest.raises(agenthistory.Error) as raised:
        agenthistory.History().project(target="nope")  # type: ignore[arg-type]
    assert raised.value.path is None
