"""`.minds/mcp.yaml`: the MCP servers whose tools members may use, read into ``ServerSpec``s.

``load_mcp_config`` never raises: every mistake is a ``Problem`` with its line and the server it
concerns is left out (the others, and every built-in toolset, keep working). Secrets are written by
reference, ``{env: NAME}`` (optionally ``{env: NAME, prefix: "Bearer "}``), and stay ``SecretRef``s
here: they are resolved only when a server is started, and never written to logs, events or files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from dominds.problems import (
    Problem,
    ProblemCollector,
    compose_yaml,
    did_you_mean,
    is_invalid,
    is_mapping,
    is_null,
    mapping_entries,
    node_line,
    try_node_value,
)
from dominds.rtws import Rtws

MCP_YAML = ".minds/mcp.yaml"
MCP_CONFIG_ERROR = "mcp_workspace_config_error"
"""Kind of every problem found in ``.minds/mcp.yaml``."""
MCP_SERVER_ERROR = "mcp_server_error"
"""Kind of problems met when a server runs: unreachable, a tool name clash, a tool left out."""

SERVER_ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
TOOL_NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}")
Transport = Literal["stdio", "streamable_http"]
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SecretRef:
    """A value taken from the daemon's environment when the server starts: ``prefix + $env``."""

    env: str
    prefix: str = ""

    def __repr__(self) -> str:  # never the value, only where it comes from
        return f"SecretRef(env={self.env!r})"


Value = str | SecretRef


def resolve(values: dict[str, Value], environ: dict[str, str] | Any) -> tuple[dict[str, str], list[str]]:
    """The plain values, and the names of environment variables that are not set."""
    out: dict[str, str] = {}
    missing: list[str] = []
    for key, value in values.items():
        if isinstance(value, SecretRef):
            if value.env in environ:
                out[key] = value.prefix + environ[value.env]
            else:
                missing.append(value.env)
        else:
            out[key] = value
    return out, missing


@dataclass(frozen=True)
class ServerSpec:
    """One server of mcp.yaml, checked; its id is the toolset name members list in team.yaml."""

    id: str
    transport: Transport
    line: int
    """Line of the server's key in mcp.yaml."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, Value], ...] = ()
    cwd: str | None = None
    """Working directory of a stdio server, relative to the workspace root (default: the root)."""
    url: str | None = None
    headers: tuple[tuple[str, Value], ...] = ()
    whitelist: tuple[str, ...] = ()
    """Glob patterns of the server's tool names to keep (empty = all)."""
    blacklist: tuple[str, ...] = ()
    prefix: str = ""
    """Prepended to each tool name the model sees (``gh_`` → ``gh_create_issue``)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    stateful: bool = False
    """True: each dialog gets its own session (a lease); False: one shared session."""
    sampling: bool = False
    """True: the server may ask for a completion (MCP sampling), served by the calling member's model."""
    key_lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)

    def fingerprint(self) -> tuple[Any, ...]:
        """What decides whether a running server must be restarted after mcp.yaml changed."""
        return (self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers, self.stateful)


@dataclass(frozen=True)
class McpConfig:
    servers: dict[str, ServerSpec]
    problems: list[Problem]


_KEYS = ("transport", "command", "args", "env", "cwd", "url", "headers", "tools", "prefix", "timeout_s", "stateful", "sampling")


def load_mcp_config(rtws: Rtws, reserved: frozenset[str] | set[str] = frozenset()) -> McpConfig:
    """Read ``.minds/mcp.yaml``; ``reserved`` are toolset names a server id may not take (the built-ins)."""
    collector = ProblemCollector(MCP_CONFIG_ERROR, MCP_YAML)
    path = rtws.mcp_yaml
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return McpConfig({}, [])
    except (OSError, UnicodeDecodeError) as exc:
        collector.error(None, f"cannot read the file: {exc}; no MCP server is available")
        return McpConfig({}, collector.problems)
    root = compose_yaml(text, collector)
    if root is None or is_null(root):
        return McpConfig({}, collector.problems)
    if not is_mapping(root):
        collector.wrong_type(root, node_line(root), "mcp.yaml", "a mapping with `servers:`")
        return McpConfig({}, collector.problems)
    servers: dict[str, ServerSpec] = {}
    for entry in mapping_entries(root, collector, "mcp.yaml"):
        if entry.key != "servers":
            collector.warning(entry.line, f"unknown key {entry.key!r} ignored{did_you_mean(entry.key, ['servers'])}")
            continue
        if is_null(entry.node):
            continue
        if not is_mapping(entry.node):
            collector.wrong_type(entry.node, entry.line, "`servers`", "a mapping of server id → settings")
            continue
        for server in mapping_entries(entry.node, collector, "servers"):
            who = f"server {server.key!r}"
            if not SERVER_ID_RE.fullmatch(server.key):
                collector.error(
                    server.line,
                    f"{who}: an id starts with a letter and holds letters, digits, '_' and '-' "
                    "(at most 32); server ignored",
                )
            elif server.key in reserved:
                collector.error(server.line, f"{who}: {server.key!r} is a built-in toolset name; server ignored")
            elif not is_mapping(server.node):
                collector.wrong_type(server.node, server.line, who, "a mapping of settings", "server ignored")
            else:
                spec = _read_server(server.key, server.line, server.node, collector)
                if spec is not None:
                    servers[spec.id] = spec
    return McpConfig(servers, collector.problems)


def _read_server(server_id: str, line: int, node: Any, collector: ProblemCollector) -> ServerSpec | None:
    who = f"server {server_id!r}"
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for entry in mapping_entries(node, collector, who):
        if entry.key not in _KEYS:
            collector.warning(entry.line, f"{who}: unknown key {entry.key!r} ignored{did_you_mean(entry.key, _KEYS)}")
            continue
        lines[entry.key] = entry.line
        if entry.key in ("env", "headers"):
            read = _read_values(entry.node, entry.line, f"{who}: `{entry.key}`", collector)
            if read is not None:
                values[entry.key] = read
            continue
        raw = try_node_value(entry.node, collector)
        if is_invalid(raw) or raw is None:
            continue
        checked = _check(entry.key, raw, entry.line, who, collector)
        if checked is not None:
            values[entry.key] = checked
    transport: Transport = values.get("transport") or ("streamable_http" if "url" in values else "stdio")
    if transport == "stdio" and not values.get("command"):
        collector.error(line, f"{who}: a stdio server needs `command`; server ignored")
        return None
    if transport == "streamable_http" and not values.get("url"):
        collector.error(line, f"{who}: a streamable_http server needs `url`; server ignored")
        return None
    for key in ("command", "args", "env", "cwd") if transport == "streamable_http" else ("url", "headers"):
        if key in values:
            collector.warning(lines[key], f"{who}: `{key}` does not apply to a {transport} server; ignored")
    tools = values.get("tools", {})
    return ServerSpec(
        id=server_id,
        transport=transport,
        line=line,
        command=values.get("command"),
        args=tuple(values.get("args", ())),
        env=tuple(values.get("env", {}).items()),
        cwd=values.get("cwd"),
        url=values.get("url"),
        headers=tuple(values.get("headers", {}).items()),
        whitelist=tuple(tools.get("whitelist", ())),
        blacklist=tuple(tools.get("blacklist", ())),
        prefix=values.get("prefix", ""),
        timeout_s=float(values.get("timeout_s", DEFAULT_TIMEOUT_S)),
        stateful=bool(values.get("stateful", False)),
        sampling=bool(values.get("sampling", False)),
        key_lines=lines,
    )


def _check(key: str, raw: Any, line: int, who: str, collector: ProblemCollector) -> Any:
    """The value if it has the right shape, else a problem and ``None``."""
    what = f"{who}: `{key}`"
    if key == "transport":
        if raw in ("stdio", "streamable_http", "streamable-http", "http"):
            return "stdio" if raw == "stdio" else "streamable_http"
        collector.error(line, f"{what} must be stdio or streamable_http, got {raw!r}; ignored")
    elif key in ("command", "cwd", "url"):
        if isinstance(raw, str) and raw.strip():
            if key == "url" and not raw.startswith(("http://", "https://")):
                collector.error(line, f"{what} must be an http:// or https:// URL; ignored")
                return None
            return raw
        collector.error(line, f"{what} must be a non-empty string; ignored")
    elif key == "args":
        if isinstance(raw, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in raw):
            return [str(a) for a in raw]
        collector.error(line, f"{what} must be a list of strings; ignored")
    elif key == "prefix":
        if isinstance(raw, str) and re.fullmatch(r"[a-zA-Z0-9_-]{0,32}", raw):
            return raw
        collector.error(line, f"{what} must be letters, digits, '_' or '-' (at most 32); ignored")
    elif key == "timeout_s":
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 < raw <= 3600:
            return raw
        collector.error(line, f"{what} must be a number of seconds in (0, 3600]; the default {DEFAULT_TIMEOUT_S:g} applies")
    elif key in ("stateful", "sampling"):
        if isinstance(raw, bool):
            return raw
        collector.error(line, f"{what} must be true or false; ignored")
    elif key == "tools":
        return _check_tools(raw, line, what, collector)
    return None


def _check_tools(raw: Any, line: int, what: str, collector: ProblemCollector) -> dict[str, list[str]] | None:
    if not isinstance(raw, dict):
        collector.error(line, f"{what} must be a mapping with `whitelist` and/or `blacklist`; ignored")
        return None
    out: dict[str, list[str]] = {}
    for key, patterns in raw.items():
        if key not in ("whitelist", "blacklist"):
            collector.warning(line, f"{what}: unknown key {key!r} ignored{did_you_mean(str(key), ['whitelist', 'blacklist'])}")
        elif isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
            out[key] = patterns
        elif patterns is not None:
            collector.error(line, f"{what}: `{key}` must be a list of tool names or glob patterns; ignored")
    return out


def _read_values(node: Any, line: int, what: str, collector: ProblemCollector) -> dict[str, Value] | None:
    """A ``NAME: value`` mapping whose values are strings or ``{env: NAME}`` references."""
    if is_null(node):
        return None
    if not is_mapping(node):
        collector.wrong_type(node, line, what, "a mapping of names to strings or {env: NAME}")
        return None
    out: dict[str, Value] = {}
    for entry in mapping_entries(node, collector, what):
        raw = try_node_value(entry.node, collector)
        if is_invalid(raw):
            continue
        if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
            out[entry.key] = str(raw)
        elif (
            isinstance(raw, dict)
            and isinstance(raw.get("env"), str)
            and set(raw) <= {"env", "prefix"}
            and isinstance(raw.get("prefix", ""), str)
        ):
            out[entry.key] = SecretRef(raw["env"], raw.get("prefix", ""))
        else:
            collector.error(
                entry.line, f"{what}: {entry.key!r} must be a string or {{env: NAME}} (optionally with prefix); ignored"
            )
    return out
