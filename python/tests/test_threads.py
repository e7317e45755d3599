"""Many threads projecting one history while one thread records into it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import agenthistory
from conftest import call, output, user


def test_projections_made_while_recording_are_each_a_whole_version() -> None:
    history = agenthistory.History([user("start")])
    done = threading.Event()
    failures: list[str] = []
    seen_lengths: list[int] = []

    def record() -> None:
        for index in range(2000):
            history.record(call(f"c{index}"))
            if index % 3:
                history.record(output(f"c{index}"))
        done.set()

    def project() -> None:
        while not done.is_set():
            for target in ("responses", "chat", "anthropic"):
                projection = history.project(target=target)
                if json.loads(projection.json()) != projection.items():
                    failures.append(f"{target}: json and items differ")
            responses = history.project()
            items = responses.items()
            calls = {item["call_id"] for item in items if item["type"] == "function_call"}
            outputs = [item["call_id"] for item in items if item["type"] == "function_call_output"]
            # Every call answered exactly once, whatever version the projection saw.
            if sorted(outputs) != sorted(calls):
                failures.append(f"unpaired at {len(items)} items")
            seen_lengths.append(len(items))

    writer = threading.Thread(target=record)
    readers = [threading.Thread(target=project) for _ in range(4)]
    for thread in readers:
        thread.start()
    writer.start()
    writer.join()
    for thread in readers:
        thread.join()
    assert failures == []
    # The projections saw several versions: they ran while the history grew.
    assert len(set(seen_lengths)) > 1
    final = history.project()
    assert len(final) == 1 + 2 * 2000


def test_a_session_records_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    with agenthistory.Session.create(path, durability="buffered") as session:
        def record(writer: int) -> None:
            for index in range(200):
                session.record(user(f"{writer}-{index}"))

        threads = [threading.Thread(target=record, args=(writer,)) for writer in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        live = session.history
    assert len(live) == 800
    assert agenthistory.resume(path).items() == live.items()
