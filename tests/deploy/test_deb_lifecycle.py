"""The agent's .deb on a clean bookworm root with no network (tests/support/cleanhost.py):
lintian; install (the service is not started without an ingest URL and key, and says so);
upgrade to a rebuilt higher version (the user's config, fragment and spool survive); remove
(config and spool stay); purge (config, spool and user gone). Then check-config and the unit's
command line refusing bad files with one line naming the key."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from agent.install import InstallPlan, render_unit
from tests.support.cleanhost import CleanHost, unit_service

pytestmark = pytest.mark.integration

UNIT = "/lib/systemd/system/apm-agent.service"
WANTS = "/etc/systemd/system/multi-user.target.wants/apm-agent.service"
CONF = "/etc/apm/agent.toml"
SPOOL = "/var/lib/apm-agent/spool"


def _ids(host: CleanHost, name: str) -> tuple[int, int] | None:
    for line in host.path("/etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return int(fields[2]), int(fields[3])
    return None


def _owner(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def _version(host: CleanHost) -> str:
    return host.run(["apm-agent", "--version"]).stdout.strip()


# Runs the command in "$@" in the background until the spool holds a non-empty file, then
# TERMs it; exit 0 when it was still running then, 3 when it exited by itself, 4 when the
# spool stayed empty for 60 s (a wall-clock deadline: a loaded machine starts Python slowly).
_UNTIL_SPOOLED = f"""
"$@" & agent=$!
end=$(( $(date +%s) + 60 ))
until [ -n "$(find {SPOOL} -type f -size +0c)" ]; do
    if ! kill -0 "$agent" 2>/dev/null; then
        wait "$agent"; echo "the agent exited by itself ($?)" >&2; exit 3
    fi
    if [ "$(date +%s)" -ge "$end" ]; then
        kill -TERM "$agent"; wait "$agent"; echo "the spool stayed empty for 60 s" >&2; exit 4
    fi
    sleep 0.2
done
kill -TERM "$agent"; wait "$agent"; exit 0
"""


def _run_the_unit(host: CleanHost) -> subprocess.CompletedProcess[str]:
    """The unit's ExecStart as its user (no network: it spools) until it has spooled."""
    service = unit_service(host.path(UNIT).read_text())
    env = dict(e.split("=", 1) for e in service["Environment"])
    return host.run(
        ["sh", "-c", _UNTIL_SPOOLED, "sh", *shlex.split(service["ExecStart"][0])],
        user=service["User"][0],
        env=env,
        umask=service["UMask"][0],
        check=False,
        timeout=180,
    )


def test_the_package_is_lintian_clean(build_deb) -> None:
    result = subprocess.run(
        ["lintian", "--fail-on", "error,warning", str(build_deb())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_install_upgrade_remove_purge(build_deb, clean_host) -> None:
    first, second = build_deb(), build_deb("0.1.0+test1")
    version = first.name.split("_")[1]
    host = clean_host()

    # Install: the files, the user, the owners; not started, and it says why.
    out = host.install(first)
    assert "the service is NOT started" in out.stderr and "ingest_url" in out.stderr
    assert _version(host) == f"apm-agent {version}"
    uid, gid = _ids(host, "apm-agent") or (-1, -1)
    passwd = host.path("/etc/passwd").read_text().splitlines()
    assert [line.split(":")[6] for line in passwd if line.startswith("apm-agent:")] == [
        "/usr/sbin/nologin"
    ]
    assert 0 < uid < 1000  # a system user
    assert host.path(UNIT).read_text() == render_unit(
        InstallPlan(python="/opt/apm-agent/bin/python")
    )
    assert _owner(host.path(CONF)) == (uid, gid, 0o600)
    assert _owner(host.path(SPOOL)) == (uid, gid, 0o750)
    assert not host.path(WANTS).is_symlink()
    conffiles = host.run(["dpkg-query", "-W", "-f=${Conffiles}", "apm-agent"]).stdout
    assert CONF in conffiles

    # The user configures it (key in the 0600 file, a fragment), and the agent spools.
    conf = host.path(CONF)
    conf.write_text(
        conf.read_text().replace(
            '# ingest_url = "https://ingest.example.internal/v1/metrics"',
            'ingest_url = "http://169.254.9.1:8080/v1/metrics"',
        )
        + '\n# edited by the user\napi_key = "k3y"\n'
    )
    fragment = host.path("/etc/apm/agent.d/10-site.toml")
    fragment.write_text("[agent]\ninterval_s = 1.0\n")
    assert host.run(["apm-agent", "check-config", "--ready"]).returncode == 0
    ran = _run_the_unit(host)
    assert ran.returncode == 0, ran.stderr  # still running when its spool filled
    spool = {p.name: p.read_bytes() for p in host.path(SPOOL).iterdir()}
    assert spool and sum(map(len, spool.values())) > 0, ran.stderr
    edited = conf.read_text()

    # Upgrade: config, fragment and spool survive, the new version runs, the unit is enabled.
    out = host.install(second)
    assert "NOT started" not in out.stderr, out.stderr
    assert _version(host) == f"apm-agent {second.name.split('_')[1]}"
    assert conf.read_text() == edited and _owner(conf) == (uid, gid, 0o600)
    assert fragment.read_text() == "[agent]\ninterval_s = 1.0\n"
    assert {p.name: p.read_bytes() for p in host.path(SPOOL).iterdir()} == spool
    assert host.path(WANTS).is_symlink()

    # Remove: the program goes, the config, the spool and the user stay.
    host.run(["dpkg", "--remove", "apm-agent"])
    assert not host.path("/opt/apm-agent").exists()
    assert not host.path("/usr/bin/apm-agent").exists() and not host.path(UNIT).exists()
    assert conf.read_text() == edited and fragment.exists()
    assert {p.name: p.read_bytes() for p in host.path(SPOOL).iterdir()} == spool
    assert _ids(host, "apm-agent") == (uid, gid)
    status = host.run(["dpkg-query", "-W", "-f=${Status}", "apm-agent"]).stdout
    assert status == "deinstall ok config-files"

    # Purge: config, fragments, spool, user and group gone.
    host.run(["dpkg", "--purge", "apm-agent"])
    assert not host.path("/etc/apm").exists()
    assert not host.path("/var/lib/apm-agent").exists()
    assert not host.path(WANTS).is_symlink()
    assert _ids(host, "apm-agent") is None
    assert not any(
        line.startswith("apm-agent:") for line in host.path("/etc/group").read_text().splitlines()
    )
    gone = host.run(["dpkg-query", "-W", "apm-agent"], check=False)
    assert gone.returncode != 0


BAD = [
    ("[agent]\ncolectors = []\n", 0o600, "unknown key 'colectors'"),
    ("[agent]\ninterval_s = 'often'\n", 0o600, "interval_s: Input should be a valid number"),
    ('[agent]\ningest_url = "ingest.example:8080/v1/metrics"\n', 0o600, "ingest_url:"),
    ('[agent]\napi_key = "k3y"\n', 0o644, "api_key: the file holds a secret but others may read"),
]


def test_check_config_and_the_service_refuse_bad_files(build_deb, clean_host) -> None:
    host = clean_host()
    host.install(build_deb())
    service = unit_service(host.path(UNIT).read_text())
    conf = host.path(CONF)
    for text, mode, expected in BAD:
        conf.write_text(text)
        conf.chmod(mode)
        for argv, user in (
            (["apm-agent", "check-config"], None),
            (shlex.split(service["ExecStart"][0]), service["User"][0]),
        ):
            result = host.run(argv, user=user, check=False, timeout=60)
            assert result.returncode == 2, (argv, result.stderr)
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and expected in lines[0], (argv, result.stderr)
            assert "k3y" not in result.stderr


# postinst configure as dpkg runs it for a fresh install (deb-systemd-helper reads the env).
POSTINST = ["/var/lib/dpkg/info/apm-agent.postinst", "configure", ""]
DPKG_ENV = {"DPKG_MAINTSCRIPT_PACKAGE": "apm-agent", "DPKG_MAINTSCRIPT_NAME": "postinst"}


def test_a_fragment_the_service_cannot_read_keeps_it_stopped(build_deb, clean_host) -> None:
    host = clean_host()
    host.install(build_deb())
    fragment = host.path("/etc/apm/agent.d/20-root-only.toml")
    fragment.write_text('[agent]\ningest_url = "http://169.254.9.1:8080/v1/metrics"\n')
    fragment.write_text(fragment.read_text() + 'api_key = "k3y"\n')
    fragment.chmod(0o600)  # root's: the service's user cannot read it
    checked = host.run(["apm-agent", "check-config", "--ready"], check=False)
    assert checked.returncode == 2, checked.stderr
    assert "20-root-only.toml" in checked.stderr and "apm-agent cannot read" in checked.stderr
    out = host.run(POSTINST, env=DPKG_ENV, check=False)
    assert "the service is NOT started" in out.stderr and "Permission denied" in out.stderr
    assert not host.path(WANTS).is_symlink()
    # 0640 root:apm-agent, as docs/agent.md says: readable by the service, and it is enabled.
    os.chown(fragment, 0, (_ids(host, "apm-agent") or (-1, -1))[1])
    fragment.chmod(0o640)
    assert host.run(["apm-agent", "check-config", "--ready"]).returncode == 0
    out = host.run(POSTINST, env=DPKG_ENV, check=False)
    assert "NOT started" not in out.stderr, out.stderr
    assert host.path(WANTS).is_symlink()
