"""agenthistory: a persistent, immutable conversation-history engine for LLM agents.

The history is repaired for the model in the projection only; the durable history, and the
rollout a session writes, never hold a repair. See docs/python.md in the repository.
"""

from agenthistory import _native
from agenthistory._native import *  # noqa: F403 (the native module's names are the package's)

__all__ = _native.__all__
