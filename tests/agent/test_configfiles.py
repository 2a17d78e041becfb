"""agent/configfiles.py: which config file the service's user could not read."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from agent.configfiles import unreadable_by

pytestmark = pytest.mark.unit


def test_unreadable_by_names_the_first_file_the_user_cannot_read(tmp_path: Path) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    readable, private = tmp_path / "a.toml", tmp_path / "b.toml"
    readable.write_text("")
    private.write_text("")
    readable.chmod(0o600)
    private.chmod(0o000)
    assert unreadable_by(me, [readable]) is None
    assert unreadable_by(me, [readable, private]) == private
    tmp_path.chmod(0o600)  # no search permission on the directory
    try:
        assert unreadable_by(me, [readable]) == readable
    finally:
        tmp_path.chmod(0o700)


def test_unreadable_by_an_unknown_user_is_none(tmp_path: Path) -> None:
    assert unreadable_by("no-such-user-apm", [tmp_path / "x.toml"]) is None
