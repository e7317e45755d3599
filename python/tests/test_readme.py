"""The Python examples of the READMEs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

READMES = [REPO / "README.md", REPO / "python" / "README.md", REPO / "docs" / "python.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("path", READMES, ids=[str(path.relative_to(REPO)) for path in READMES])
def test_every_python_example_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(path)
    assert blocks, f"{path} has no Python example"
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    for block in blocks:
        exec(compile(block, str(path), "exec"), {})
