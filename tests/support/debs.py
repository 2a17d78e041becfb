"""The real peers that ``make debs`` installs from Debian: a test that needs one asks
:func:`require` for it and fails, naming the program and its package, when it is absent, so
that a machine without them never reports green (a skip would)."""

from __future__ import annotations

import shutil

import pytest

__all__ = ["require"]


def require(program: str, package: str) -> str:
    """The path of ``program``, or the calling test fails saying that Debian's ``package``
    (installed by ``make debs``) provides it. /usr/sbin is searched too: nginx lives there and
    is not on every user's PATH."""
    found = shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/bin")
    if found is None:
        pytest.fail(f"{program} is not installed: `make debs` installs Debian's {package}")
    return found
