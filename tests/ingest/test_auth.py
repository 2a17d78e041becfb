"""API keys: the key file format, keygen, constant-time check, reload on change."""

from __future__ import annotations

import logging
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


def test_deleting_the_key_file_revokes_every_key_loudly(tmp_path, caplog):
    """Issue 14, item 14: before, the old keys stayed valid with no log line."""
    path = tmp_path / "keys"
    key = add_key(path)
    keys = KeyFile(path)
    assert keys.check(key)
    path.unlink()
    with caplog.at_level(logging.ERROR, logger="ingest.auth"):
        assert not keys.check(key)
        assert not keys.check(key)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "revoked" in errors[0].getMessage()
    assert str(path) in errors[0].getMessage()
    caplog.clear()
    other = add_key(path)  # a new file: only its keys are valid
    with caplog.at_level(logging.WARNING, logger="ingest.auth"):
        assert keys.check(other)
        assert not keys.check(key)
    assert any("read again" in r.getMessage() for r in caplog.records)


def test_a_bad_edit_is_logged(tmp_path, caplog):
    path = tmp_path / "keys"
    key = add_key(path)
    keys = KeyFile(path)
    path.write_text(path.read_text() + "garbage line\n")
    with caplog.at_level(logging.ERROR, logger="ingest.auth"):
        assert keys.check(key)
    assert any("keeping the last good set" in r.getMessage() for r in caplog.records)


def test_the_file_is_checked_at_most_every_recheck_s(tmp_path):
    path = tmp_path / "keys"
    first = add_key(path)
    now = [100.0]
    keys = KeyFile(path, recheck_s=1.0, clock=lambda: now[0])
    assert keys.check(first)
    path.unlink()
    now[0] += 0.5
    assert keys.check(first)  # not re-checked yet: no stat on every request
    now[0] += 0.6
    assert not keys.check(first)


def test_the_service_answers_401_once_the_key_file_is_gone(make_client, make_batch, key_file):
    client = make_client(keys_recheck_s=0)
    body = {"json": make_batch()}
    assert client.post("/v1/metrics", **body).status_code == 202
    key_file[0].unlink()
    answer = client.post("/v1/metrics", **body)
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"
