"""The engine's refusals, in a module of their own so every driver module can raise them without a cycle."""

from __future__ import annotations


class EngineError(Exception):
    """A request the engine refuses; the message says why and what to do."""


class EngineBadRequest(EngineError):
    """The request itself is wrong (unknown agent, bad Taskdoc path, empty text): fix it and retry."""


class QueueFull(EngineError):
    """Too many messages wait unread (in one dialog, or sent by one connection): HTTP 429 and a websocket
    ``error`` naming the limit; the sender retries once the agent has read some."""


class WorkspaceLocked(EngineError):
    """Another daemon (or a writing CLI command) holds the workspace lock."""
