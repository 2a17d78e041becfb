"""The agent's config files: the main TOML file, then the fragments beside it in ``agent.d/``
(``*.toml``, lexical order, each one overriding the keys it sets; ``tags`` tables merge tag by
tag), merged into one document.

Every file is checked on its own so that an error names the file and the key: a key the agent
does not know, TOML it cannot parse, or an ``api_key`` in a file that others may read (the key
is a secret: such a file must be mode 0600 or 0640 at most). Values are checked later, by the
settings class, against the merged document."""

from __future__ import annotations

import grp
import os
import pwd
import stat
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MERGED_KEYS",
    "SECRET_KEYS",
    "ConfigFileError",
    "ConfigFiles",
    "fragments_dir",
    "read_config",
    "unreadable_by",
]

# Tables merged key by key across the files (a later file's entry wins), where every other key
# is replaced whole: ``tags = { role = "web" }`` in agent.toml and ``tags = { dc = "eu-1" }``
# in agent.d/ give both tags.
MERGED_KEYS = frozenset({"tags"})
# Keys whose values are masked when settings are printed and that only private files may hold.
SECRET_KEYS = frozenset({"api_key"})


class ConfigFileError(ValueError):
    """A file the agent cannot use; the message names the file and the key."""


@dataclass
class ConfigFiles:
    document: dict[str, Any] = field(default_factory=dict)
    # Which file each key came from (the last one that set it).
    origin: dict[str, Path] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def fragments_dir(config: Path) -> Path:
    """``/etc/apm/agent.toml`` -> ``/etc/apm/agent.d``."""
    return config.with_name(config.stem + ".d")


def _read_one(path: Path, known: Collection[str]) -> dict[str, Any]:
    try:
        text = path.read_text()
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
    document = document.get("agent", document)
    if not isinstance(document, dict):
        raise ConfigFileError(f"{path}: [agent] must be a table")
    for key in sorted(document):
        if key not in known:
            raise ConfigFileError(f"{path}: unknown key {key!r}")
    for key in sorted(SECRET_KEYS & set(document)):
        if document[key] and mode & stat.S_IROTH:
            raise ConfigFileError(
                f"{path}: {key}: the file holds a secret but others may read it "
                f"(mode {stat.S_IMODE(mode):04o}); chmod 0600 {path}"
            )
    return document


def read_config(config: Path, known: Collection[str]) -> ConfigFiles:
    """The merged document of ``config`` and its ``agent.d/*.toml`` fragments. A missing
    fragments directory is fine; a missing main file is an error."""
    out = ConfigFiles()
    fragments = fragments_dir(config)
    paths = [config]
    if fragments.is_dir():
        paths += sorted(p for p in fragments.glob("*.toml") if p.is_file())
    for path in paths:
        for key, value in _read_one(path, known).items():
            earlier = out.document.get(key)
            if key in MERGED_KEYS and isinstance(earlier, dict) and isinstance(value, dict):
                value = {**earlier, **value}
            out.document[key] = value
            out.origin[key] = path
        out.files.append(path)
    return out


def unreadable_by(user: str, paths: Collection[Path]) -> Path | None:
    """The first of ``paths`` that ``user`` could not read (by the mode bits: root, who runs
    ``check-config`` by hand, reads everything, the service's user may not), checking each
    file's directories too; None if all are readable or ``user`` does not exist here."""
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        return None
    gids = {account.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}

    def allowed(path: Path, want: int) -> bool:
        st = path.stat()
        if st.st_uid == account.pw_uid:
            return bool(st.st_mode & (want << 6))
        if st.st_gid in gids:
            return bool(st.st_mode & (want << 3))
        return bool(st.st_mode & want)

    for path in paths:
        path = Path(os.path.abspath(path))
        dirs = [d for d in path.parents if d != Path("/")]
        if not allowed(path, os.R_OK) or not all(allowed(d, os.X_OK) for d in dirs):
            return path
    return None
