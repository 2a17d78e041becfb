"""``apm agent install``: the systemd unit (Restart=always, watchdog) and a commented TOML
config. The files under deploy/systemd/ are these same renderings with the defaults."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["InstallPlan", "install", "render_config", "render_unit"]

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
ExecStart={python} -m apm.cli agent run --config {config}
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

[Install]
WantedBy=multi-user.target
"""

_CONFIG = """\
# APM agent configuration. Every key may be overridden by an env var APM_AGENT_<KEY>
# (e.g. APM_AGENT_API_KEY). Written by `apm agent install`; see docs/agent.md.
[agent]
# server = "web-042"            # defaults to the host name
ingest_url = "{ingest_url}"
api_key = "{api_key}"
interval_s = 1.0
collectors = ["cpu", "load", "memory", "disk", "network", "system", "agent"]

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


def render_unit(plan: InstallPlan) -> str:
    return _UNIT.format(python=plan.python, config=plan.config, spool_dir=plan.spool_dir)


def render_config(plan: InstallPlan) -> str:
    return _CONFIG.format(
        ingest_url=plan.ingest_url, api_key=plan.api_key, spool_dir=plan.spool_dir
    )


def install(plan: InstallPlan, *, force: bool = False, enable: bool = False) -> list[str]:
    """Writes the unit and (unless one exists, or ``force``) the config. Returns what it did."""
    done = []
    plan.unit_dir.mkdir(parents=True, exist_ok=True)
    unit = plan.unit_dir / UNIT_NAME
    unit.write_text(render_unit(plan))
    done.append(f"wrote {unit}")
    if plan.config.exists() and not force:
        done.append(f"kept existing {plan.config} (use --force to overwrite)")
    else:
        plan.config.parent.mkdir(parents=True, exist_ok=True)
        plan.config.write_text(render_config(plan))
        plan.config.chmod(0o600)  # it holds the API key
        done.append(f"wrote {plan.config}")
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
