"""Helpers for the server tests: a scripted workspace and a websocket client that waits for messages."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import ClientWebSocketResponse, WSMsgType
from aiohttp.test_utils import TestClient
from workspace_kit import LLM_YAML, team_yaml

from dominds.driver.engine import Engine
from dominds.rtws import Rtws

TOKEN = "test-token-123"

TEAM_YAML = team_yaml({"lead": "plans and delegates", "coder": "writes code", "tester": "checks code"}, fbr_effort=1)


COST_RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "hello", "response": "Hi.", "usage": {"input_tokens": 30000, "output_tokens": 9000}},
    {
        "agent": "lead",
        "message": "delegate",
        "response": "!?@coder please implement X\n",
        "usage": {"input_tokens": 1200, "output_tokens": 300},
    },
    {"agent": "coder", "contains": "implement X", "response": "Done.", "usage": {"input_tokens": 5000, "output_tokens": 700}},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks.", "usage": {"input_tokens": 800, "output_tokens": 50}},
]
"""Replies with token usage, priced by workspace_kit's llm.yaml ($1/M in, $2/M out): the tree costs $0.0571."""

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "hello", "response": "Hello **there**! <script>alert(1)</script>"},
    {"agent": "lead", "message": "delegate", "response": "Asking coder.\n!?@coder please implement X\n"},
    {"agent": "coder", "contains": "please implement X", "response": "Implemented X."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, X is done."},
    {"agent": "lead", "message": "paint", "response": "!?@human Which colour?\n!?Red or blue.\n"},
    {"agent": "lead", "message": "blue", "response": "Painting it blue."},
    {
        "agent": "lead",
        "message": "think and tool",
        "stream": [
            {"thinking": "Let me think."},
            {"saying": "I will add a reminder."},
            {"func_call": {"name": "add_reminder", "arguments": {"content": "remember X"}}},
        ],
    },
    {"agent": "lead", "role": "tool", "contains": "Reminder", "response": "Reminder added."},
    {"agent": "lead", "message": "slow", "response": "x" * 400, "delay_ms": 20, "chunk_chars": 4},
    {"agent": "lead", "message": "fail", "error": {"kind": "rejected", "status": 401, "message": "bad key"}},
    {"agent": "lead", "message": "nest", "response": "!?@coder build Y\n"},
    {"agent": "coder", "contains": "build Y", "response": "!?@tester check Y\n"},
    {"agent": "tester", "contains": "check Y", "response": "Y checked."},
    {"agent": "coder", "contains": "@tester provided response", "response": "Y built and checked."},
]


def write_workspace(
    root: Path, responses: list[dict[str, Any]] | None = None, suggestions: list[str] | None = None
) -> Rtws:
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    db: dict[str, Any] = {"responses": RESPONSES if responses is None else responses}
    if suggestions is not None:
        db["suggestions"] = suggestions
    (rtws.minds_dir / "scripted" / "test.yaml").write_text(
        yaml.safe_dump(db, allow_unicode=True, sort_keys=False)
    )
    (root / "tasks" / "t.tsk").mkdir(parents=True, exist_ok=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the feature.\n")
    rtws.ensure_layout()
    return rtws


Predicate = Callable[[dict[str, Any]], bool]


class WsClient:
    """A websocket with a background reader: every message is kept, tests wait for the ones they need."""

    def __init__(self, ws: ClientWebSocketResponse) -> None:
        self.ws = ws
        self.received: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._cursor = 0
        self.closed_with: int | None = None
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type == WSMsgType.TEXT:
                self.received.append(json.loads(msg.data))
                self._changed.set()
        self.closed_with = self.ws.close_code
        self._changed.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(message))

    async def wait_for(self, predicate: Predicate, timeout: float = 5.0) -> dict[str, Any]:
        """The first message after the cursor that matches; moves the cursor past it."""

        async def scan() -> dict[str, Any]:
            while True:
                for index in range(self._cursor, len(self.received)):
                    if predicate(self.received[index]):
                        self._cursor = index + 1
                        return self.received[index]
                if self.closed_with is not None:
                    raise AssertionError(f"socket closed ({self.closed_with}) while waiting")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), timeout)

    async def wait_type(self, type_: str, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
        return await self.wait_for(
            lambda m: m.get("type") == type_ and all(m.get(k) == v for k, v in fields.items()), timeout
        )

    async def request(
        self, message: dict[str, Any], reply_type: str | None = None, timeout: float = 5.0
    ) -> dict[str, Any]:
        """Send with a fresh requestId and return the reply (or the error) carrying it."""
        request_id = f"r{len(self.received)}-{id(message)}"
        await self.send({**message, "requestId": request_id})
        reply = await self.wait_for(lambda m: m.get("requestId") == request_id, timeout)
        if reply_type is not None:
            assert reply["type"] == reply_type, reply
        return reply

    async def wait_after(self, earlier: dict[str, Any], predicate: Predicate, timeout: float = 5.0) -> dict[str, Any]:
        """The first message after ``earlier`` (one already received) that matches; the cursor stays.

        For waits that run concurrently on one socket, where a cursor moved by one would skip the other's."""
        start = next(i for i, m in enumerate(self.received) if m is earlier) + 1

        async def scan() -> dict[str, Any]:
            while True:
                for message in self.received[start:]:
                    if predicate(message):
                        return message
                if self.closed_with is not None:
                    raise AssertionError(f"socket closed ({self.closed_with}) while waiting")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), timeout)

    def seen(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        """Every message of a type received so far (events published before a reply come before it)."""
        return [
            m
            for m in self.received
            if m.get("type") == kind and all(m.get(k) == v for k, v in fields.items())
        ]

    def since_cursor(self) -> list[dict[str, Any]]:
        return self.received[self._cursor :]

    def events_of(self, self_id: str, *, replay: bool = False) -> list[dict[str, Any]]:
        """Channel events (live, or with ``replay=True`` replayed ones) of one dialog, in arrival order."""
        return [
            m
            for m in self.received
            if (m.get("dialog") or {}).get("selfId") == self_id
            and m["type"] != "dialog_ready"
            and bool(m.get("replay")) == replay
            and "seq" in m
        ]

    async def close(self) -> None:
        await self.ws.close()
        await self._reader


@dataclass
class Served:
    engine: Engine
    client: TestClient[Any, Any]
    token: str | None
    sockets: list[WsClient]

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def ws(self, **kwargs: Any) -> WsClient:
        """An authenticated websocket, after its welcome and problems snapshot."""
        protocols = kwargs.pop("protocols", ("dominds", f"dominds-auth.{self.token}") if self.token else ())
        raw = await self.client.ws_connect("/ws", protocols=protocols, **kwargs)
        sock = WsClient(raw)
        self.sockets.append(sock)
        await sock.wait_type("welcome")
        await sock.wait_type("problems_snapshot")
        return sock

    async def get(self, path: str) -> tuple[int, Any]:
        resp = await self.client.get(path, headers=self.auth())
        return resp.status, await resp.json()

    async def post(self, path: str, body: Any = None) -> tuple[int, Any]:
        resp = await self.client.post(path, json=body, headers=self.auth())
        return resp.status, await resp.json()


ServeFactory = Callable[..., Awaitable[Served]]
