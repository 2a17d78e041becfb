"""API keys: the key file format, keygen, constant-time check, reload on change."""

from __future__ import annotations

import os

import pytest

from apm.cli import main
from ingest.auth import KeyFile, KeyFileError, add_key, hash_line, new_key

pytestmark = pytest.mark.unit


def test_a_new_key_matches_only_its_own_line(tmp_path):
    path = tmp_path / "keys"
    key = add_key(path, "agent fleet")
    other, _ = new_key()
    keys = KeyFile(path)
    assert keys.check(key)
    assert not keys.check(other)
    assert not keys.check(key + "x")
    assert not keys.check(key.split(".")[0] + ".")
    assert not keys.check("")
    assert not keys.check(None)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert path.read_text().rstrip().endswith("agent fleet")
    assert key.split(".", 1)[1] not in path.read_text()  # only the salted hash is stored


def test_file_is_reloaded_when_it_changes_and_bad_edits_keep_the_last_good_set(tmp_path):
    path = tmp_path / "keys"
    first = add_key(path)
    keys = KeyFile(path)
    second = add_key(path)
    assert keys.check(second)
    path.write_text(path.read_text() + "garbage line\n")
    os.utime(path, ns=(1, 1))
    assert keys.check(first) and keys.check(second)


def test_malformed_file_is_refused_at_start_with_the_line_number(tmp_path):
    path = tmp_path / "keys"
    path.write_text("# comment\n\nabc zz-not-hex 00\n")
    with pytest.raises(KeyFileError, match=r"keys:3"):
        KeyFile(path)


def test_no_file_refuses_everyone():
    assert not KeyFile(None).check(new_key()[0])


def test_keygen_prints_a_key_and_the_line_that_accepts_it(tmp_path, capsys):
    path = tmp_path / "keys"
    assert main(["ingest", "keygen", "--label", "ci", "--append", str(path)]) == 0
    out = dict(line.split(": ", 1) for line in capsys.readouterr().out.strip().splitlines())
    assert path.read_text().strip() == out["line"].strip()
    assert KeyFile(path).check(out["key"].strip())
    assert hash_line(out["key"].strip()) != out["line"]  # fresh salt each time
