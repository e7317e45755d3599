"""Projection to request bytes and fork, agenthistory against pure Python, as ratios in one run.

The baseline is what a Python agent loop does without the library: a `model_view` that pairs
every call with an output (an `aborted` one for a call that has none, orphan outputs dropped)
over its own list of dicts, then `json.dumps` of the result. Both sides produce the same request
bytes (checked). Run from the repository root after `pip install ./python`:

    python python/bench/bench_projection.py [--sizes 1000,10000,100000] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from typing import Any

import agenthistory

Item = dict[str, Any]


def items_of(n: int) -> list[Item]:
    """A coding agent's history: user turns, reasoning-free assistant text, tool calls with
    outputs of a few hundred bytes, and one call in fifty left unanswered (an interruption)."""
    items: list[Item] = []
    index = 0
    while len(items) < n:
        kind = index % 4
        if kind == 0:
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"step {index}: run the tests"}]})
        elif kind == 1:
            call_id = f"call_{index}"
            items.append({"type": "function_call", "id": f"fc_{index}", "call_id": call_id, "name": "shell", "arguments": json.dumps({"command": ["cargo", "test", str(index)]})})
            if index % 50 != 1:
                items.append({"type": "function_call_output", "call_id": call_id, "output": "test result: ok. " * 20})
        else:
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"All tests pass at step {index}."}]})
        index += 1
    return items[:n]


def model_view(items: list[Item]) -> list[Item]:
    """The pure-Python repair: one pass to find the answered calls, one to build the view."""
    called = {item["call_id"] for item in items if item["type"] == "function_call"}
    answered = {item["call_id"] for item in items if item["type"] == "function_call_output"}
    view: list[Item] = []
    for item in items:
        if item["type"] == "function_call_output" and item["call_id"] not in called:
            continue
        view.append(item)
        if item["type"] == "function_call" and item["call_id"] not in answered:
            view.append({"type": "function_call_output", "call_id": item["call_id"], "output": "aborted"})
    return view


def python_bytes(items: list[Item]) -> bytes:
    return json.dumps(model_view(items), separators=(",", ":")).encode()


def best(f: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(n: int, repeat: int) -> dict[str, float]:
    items = items_of(n)
    history = agenthistory.History(items)
    # The same request, but for the synthetic outputs' ids (the library gives them one).
    ours = json.loads(history.project().json())
    theirs = model_view(items)
    assert [{k: v for k, v in item.items() if k != "id" or item["type"] != "function_call_output"} for item in ours] == theirs
    step = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one more"}]}

    def library_next_step() -> None:
        # The agent loop: one item recorded, then the next request's bytes.
        history.record(step)
        history.project().json()

    def python_next_step() -> None:
        items.append(step)
        python_bytes(items)

    fresh = agenthistory.History(items)
    start = time.perf_counter()
    fresh.project().json()  # the first projection of a history: nothing cached yet
    cold = time.perf_counter() - start
    result = {
        "items": float(n),
        "python_request_s": best(python_next_step, repeat),
        "library_request_s": best(library_next_step, repeat),
        "library_first_request_s": cold,
        "python_copy_s": best(lambda: copy.copy(items), repeat),
        "library_fork_s": best(history.fork, repeat * 10),
    }
    result["request_speedup"] = result["python_request_s"] / result["library_request_s"]
    result["first_request_speedup"] = result["python_request_s"] / cold
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="one JSON object per size")
    args = parser.parse_args()
    rows = [measure(int(size), args.repeat) for size in args.sizes.split(",")]
    base_fork = rows[0]["library_fork_s"]
    for row in rows:
        row["fork_vs_smallest"] = row["library_fork_s"] / base_fork
        if args.json:
            print(json.dumps(row))
    if not args.json:
        print(f"{'items':>8} {'python step':>12} {'library step':>13} {'speedup':>8} {'1st request':>12} {'speedup':>8} {'py copy':>10} {'fork':>10} {'fork/1st':>9}")
        for row in rows:
            print(
                f"{int(row['items']):>8} {row['python_request_s'] * 1e3:>10.2f}ms {row['library_request_s'] * 1e3:>11.3f}ms "
                f"{row['request_speedup']:>7.1f}x {row['library_first_request_s'] * 1e3:>10.2f}ms {row['first_request_speedup']:>7.1f}x {row['python_copy_s'] * 1e6:>8.1f}us {row['library_fork_s'] * 1e6:>8.2f}us {row['fork_vs_smallest']:>8.2f}x"
            )


if __name__ == "__main__":
    main()
