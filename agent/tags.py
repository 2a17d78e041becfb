"""The host tags the agent sends with every snapshot: those it knows by itself (``os``,
``arch``, ``agent_version``) and the user's ``tags`` from agent.toml and its ``agent.d/``
fragments (merged tag by tag, later files win). The user's tags win over the agent's own on
the same key: an operator may know better (a container reports the host's kernel as ``os``).
Every tag follows the shared rule of apm.tags (docs/agent.md, Tags)."""

from __future__ import annotations

import platform
from collections.abc import Mapping

from agent.version import VERSION
from apm.tags import MAX_TAG_VALUE_LEN, tags_error

__all__ = ["BUILTIN_TAG_KEYS", "builtin_tags", "host_tags", "host_tags_error"]

BUILTIN_TAG_KEYS = ("os", "arch", "agent_version")


def _value(text: str) -> str:
    """A value the rule takes: printable characters only, at most MAX_TAG_VALUE_LEN."""
    return "".join(c for c in text if c.isprintable())[:MAX_TAG_VALUE_LEN]


def builtin_tags() -> dict[str, str]:
    """``os`` (``linux``), ``arch`` (``x86_64``, ``aarch64``) and ``agent_version``."""
    return {
        "os": _value(platform.system().lower()),
        "arch": _value(platform.machine().lower()),
        "agent_version": _value(VERSION),
    }


def host_tags(user: Mapping[str, str], builtin: Mapping[str, str] | None = None) -> dict[str, str]:
    """The tags sent: the agent's own, then the user's over them, sorted by key."""
    merged = {**(builtin_tags() if builtin is None else builtin), **user}
    return dict(sorted(merged.items()))


def host_tags_error(user: object) -> str | None:
    """Why the user's ``tags`` cannot be sent (alone or with the agent's own), or None."""
    problem = tags_error(user)
    if problem is None and isinstance(user, dict):
        problem = tags_error(host_tags(user))
    if problem is None:
        return None
    key, why = problem
    return f"{key}: {why}" if key else why
