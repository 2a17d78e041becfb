"""The synthetic fleet's host tags: ``role``, ``dc`` and ``env`` of each server, a pure
function of the server's index and the seed (docs/loadgen.md, Tags), so that an end-to-end
check knows every server's tags without reading them back.

- ``role`` is the role its name starts with (``ROLES[index % 10]``: ``web-00042`` is a web
  server), so ``FROM web-*`` and ``FROM role:web`` select the same servers;
- ``dc`` is ``DCS[h % 4]`` and ``env`` is ``prod`` for ``(h >> 32) % 20`` below 16,
  ``staging`` below 19, else ``dev`` (80 / 15 / 5 %), where ``h`` is SplitMix64 of
  ``(seed mod 2**32) * 2**32 + index``. Neither depends on the fleet's size, so a server
  keeps its tags when the fleet grows.
"""

from __future__ import annotations

__all__ = ["DCS", "ENVS", "ROLES", "fleet_tags", "server_tags"]

# Server roles by index modulo 10, so queries such as ``FROM web-*`` select a known share.
ROLES = ("web", "web", "web", "web", "api", "api", "api", "db", "cache", "queue")
DCS = ("eu-1", "eu-2", "us-1", "us-2")
ENVS = ("prod", "staging", "dev")
_MASK = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    """One SplitMix64 step (Steele, Lea, Flood 2014): a well-spread 64-bit hash of ``x``."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def server_tags(index: int, seed: int) -> dict[str, str]:
    """The tags of the fleet's server ``index`` (0-based) under ``seed``."""
    if index < 0:
        raise ValueError(f"a server index is >= 0, got {index}")
    h = _splitmix64(((seed & 0xFFFFFFFF) << 32) | (index & 0xFFFFFFFF))
    share = (h >> 32) % 20
    env = ENVS[0] if share < 16 else ENVS[1] if share < 19 else ENVS[2]
    return {"role": ROLES[index % len(ROLES)], "dc": DCS[h % len(DCS)], "env": env}


def fleet_tags(count: int, seed: int) -> list[dict[str, str]]:
    """The tags of servers 0 .. count - 1."""
    return [server_tags(i, seed) for i in range(count)]
