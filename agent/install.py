"""``apm agent install``: the systemd unit (Restart=always, watchdog, a dedicated user and a
sandbox) and a commented TOML config, created with mode 0600 (it holds the API key) so that
it is never readable by others, not even for a moment. The files under deploy/systemd/ are
these same renderings with the defaults."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "InstallPlan",
    "ensure_user",
    "install",
    "render_config",
    "render_unit",
    "write_private",
]

UNIT_NAME = "apm-agent.service"

_UNIT = """\
# The APM host agent. Written by `apm agent install`; see docs/agent.md.
[Unit]
Description=APM host agent (per-second host and StatsD metrics)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
# A dedicated unprivileged user (`apm agent install` creates it) that owns the config and
# the spool; reading host metrics needs no privilege.
User={user}
Group={user}
ExecStart={python} -m agent run --config {config}
# Values in the TOML file can be overridden here, e.g. APM_AGENT_API_KEY=...
EnvironmentFile=-/etc/default/apm-agent
Environment=PYTHONUNBUFFERED=1
Environment=APM_AGENT_SPOOL_DIR={spool_dir}
Restart=always
RestartSec=1
# The agent pings systemd every second, so 30 s of silence means it hangs: restart it.
WatchdogSec=30
StateDirectory=apm-agent
# Never take the host down with it.
Nice=10
MemoryMax=256M
CPUQuota=25%
# Sandbox: the agent reads /proc and /sys, talks HTTP(S) out, netlink (TCP states) and UDP
# (StatsD), and writes only its state directory.
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ReadWritePaths=-{state_dir}
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
UMask=0077

[Install]
WantedBy=multi-user.target
"""

_CONFIG = """\
# APM agent configuration. Every key may be overridden by an env var APM_AGENT_<KEY>
# (e.g. APM_AGENT_API_KEY). Written by `apm agent install`; see docs/agent.md.
[agent]
# server = "web-042"            # defaults to the host name
{ingest_lines}
# HTTPS to a private CA (docs/security.md): tls_ca replaces the system roots (without it an
# https:// ingest_url is checked against them). tls_cert and tls_key, both or neither, are
# the client certificate for an ingest that requires one; the key file 0640 root:apm-agent.
# tls_ca = "/etc/apm/ingest-ca.pem"
# tls_cert = "/etc/apm/agent.pem"
# tls_key = "/etc/apm/agent.key"
# tls_server_name = "ingest.example.internal"  # when the URL's host is not the cert's name
# insecure_skip_verify = false  # true: no certificate check at all (warned at every start)
interval_s = 1.0
collectors = ["cpu", "load", "memory", "disk", "network", "system", "agent"]
# Host tags sent with every snapshot, beside os, arch and agent_version (docs/agent.md);
# agent.d/ fragments add to them tag by tag.
# tags = {{ role = "web", dc = "eu-1" }}

# Unsent snapshots wait here, bounded; the oldest go first when it is full.
spool_dir = "{spool_dir}"
spool_max_bytes = 104857600

# Push: exponential backoff from 10 ms doubling to the cap, with jitter; backlog pacing.
backoff_initial_s = 0.01
backoff_cap_s = 30.0
drain_rate = 200.0
batch_max_snapshots = 300

# StatsD / DogStatsD listener for application metrics.
statsd_enabled = true
statsd_host = "127.0.0.1"
statsd_port = 8125
statsd_tags = "name"             # "name": tags become name parts; "drop": tags are ignored
statsd_drop_unbounded_tags = true # leave ids, uuids, hex, numbers-only values out of names

# Cardinality: every distinct name becomes a topic. Container interfaces and pod mounts are
# skipped (net_exclude, disk_exclude_mounts, disk_exclude_fstypes; see docs/agent.md).
max_metric_names = 10000
statsd_timer_stats = []          # any of "count", "avg", "p99" besides the per-second max
"""


@dataclass
class InstallPlan:
    unit_dir: Path = Path("/etc/systemd/system")
    config: Path = Path("/etc/apm/agent.toml")
    spool_dir: Path = Path("/var/lib/apm-agent/spool")
    ingest_url: str = "http://127.0.0.1:8080/v1/metrics"
    api_key: str = ""
    python: str = sys.executable
    user: str = "apm-agent"
    # Create the user and give it the config (root only; off in tests and for a dry render).
    manage_user: bool = False


def render_unit(plan: InstallPlan) -> str:
    return _UNIT.format(
        python=plan.python,
        config=plan.config,
        spool_dir=plan.spool_dir,
        state_dir=plan.spool_dir.parent,
        user=plan.user,
    )


def write_private(path: Path, text: str, *, replace: bool) -> bool:
    """Writes ``text`` to a file that is mode 0600 from the moment it exists (O_EXCL, never
    a chmod afterwards). Without ``replace`` an existing file is kept (returns False); with it
    the new file is written aside and renamed over the old one."""
    target = path if not replace else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        if not replace:
            return False
        raise
    try:
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), 0o600)  # the umask can only remove bits; be explicit
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(target, path)
    except BaseException:
        if replace:
            target.unlink(missing_ok=True)
        raise
    return True


def ensure_user(name: str, run: Callable[..., object] = subprocess.run) -> bool:
    """Creates the system user ``name`` unless it exists. Returns True if it created it."""
    import pwd

    try:
        pwd.getpwnam(name)
        return False
    except KeyError:
        pass
    useradd = shutil.which("useradd")
    if useradd is None:
        raise RuntimeError(f"useradd not found: create the system user {name!r} by hand")
    nologin = shutil.which("nologin") or "/usr/sbin/nologin"
    run([useradd, "--system", "--no-create-home", "--shell", nologin, name], check=True)
    return True


def render_config(plan: InstallPlan) -> str:
    """The commented config. Without an ingest URL (the Debian package's conffile) the URL and
    key are left as comments, so that the agent knows it has nowhere to push to yet."""
    if plan.ingest_url:
        lines = f'ingest_url = "{plan.ingest_url}"\napi_key = "{plan.api_key}"'
    else:
        lines = (
            "# Set both, then: systemctl enable --now apm-agent (check: apm-agent check-config)\n"
            '# ingest_url = "https://ingest.example.internal/v1/metrics"\n'
            '# api_key = "..."'
        )
    return _CONFIG.format(ingest_lines=lines, spool_dir=plan.spool_dir)


def install(plan: InstallPlan, *, force: bool = False, enable: bool = False) -> list[str]:
    """Writes the unit and (unless one exists, or ``force``) the config. Returns what it did."""
    done = []
    plan.unit_dir.mkdir(parents=True, exist_ok=True)
    unit = plan.unit_dir / UNIT_NAME
    unit.write_text(render_unit(plan))
    done.append(f"wrote {unit}")
    if plan.manage_user and ensure_user(plan.user):
        done.append(f"created system user {plan.user}")
    plan.config.parent.mkdir(parents=True, exist_ok=True)
    if write_private(plan.config, render_config(plan), replace=force):
        done.append(f"wrote {plan.config} (mode 0600)")
    else:
        done.append(f"kept existing {plan.config} (use --force to overwrite)")
    if plan.manage_user:
        import pwd

        entry = pwd.getpwnam(plan.user)
        os.chown(plan.config, entry.pw_uid, entry.pw_gid)  # still 0600: the agent's alone
    if enable:
        systemctl = shutil.which("systemctl")
        if systemctl is None:
            raise RuntimeError("systemctl not found: enable the unit by hand")
        subprocess.run([systemctl, "daemon-reload"], check=True)
        subprocess.run([systemctl, "enable", "--now", UNIT_NAME], check=True)
        done.append(f"enabled and started {UNIT_NAME}")
    else:
        done.append(f"next: systemctl daemon-reload && systemctl enable --now {UNIT_NAME}")
    return done
