"""How compose and k8s run the platform's processes, read from their YAML, and where that
disagrees with the tested cluster's ``ClusterLayout.env()`` (tests/deploy/test_agree.py).

A variable of ``env()`` must reach each process whose settings class reads it, with a value that
agrees: the same value, except the engines' addresses (loopback ports on the cluster, service
names elsewhere: the same number of them), heap sizes (per machine: set, any size) and the CQL
replication map (compared as a map).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic_settings import BaseSettings

from apm.settings import PROJECT_ROOT, env_names

__all__ = [
    "COMPOSE_DIR",
    "K8S",
    "ROLES",
    "Deploy",
    "classes",
    "compose_deploy",
    "disagreements",
    "k8s_deploy",
    "readers",
    "workload",
]

COMPOSE_DIR = PROJECT_ROOT / "deploy" / "compose"
K8S = PROJECT_ROOT / "deploy" / "k8s"
ADDRESS_LISTS = {"APM_KAFKA_BOOTSTRAP", "APM_STORAGE_HOSTS"}  # the count must agree
SIZES = {"APM_AGGREGATOR_DRIVER_MEMORY"}  # set, sized for the machine
MAPS = {"APM_STORAGE_REPLICATION"}  # CQL map literals, compared as maps
ROLES = ("ingest", "aggregator", "dashboard")
Deploy = dict[str, dict[str, dict[str, str]]]  # role -> service or workload name -> its env


def classes(role: str) -> tuple[type[BaseSettings], ...]:
    from aggregator.settings import AggregatorSettings
    from dashboard.settings import DashboardSettings
    from ingest.settings import IngestSettings
    from storage.settings import StorageSettings

    return {
        "ingest": (IngestSettings,),
        "aggregator": (AggregatorSettings, StorageSettings),
        "dashboard": (DashboardSettings, StorageSettings),
    }[role]


def readers(var: str) -> list[str]:
    """The roles whose settings classes read ``var``."""
    return [r for r in ROLES if any(var in env_names(c) for c in classes(r))]


def _agree(var: str, want: str, got: str) -> bool:
    if var in ADDRESS_LISTS:
        return len(got.split(",")) == len(want.split(","))
    if var in SIZES:
        return bool(re.fullmatch(r"\d+[kmgKMG]?", got))
    if var in MAPS:
        return bool(ast.literal_eval(got) == ast.literal_eval(want))
    return got == want


def disagreements(cluster: dict[str, str], deploy: Deploy) -> list[str]:
    """Where ``deploy`` does not run its processes with the cluster's variables."""
    out = []
    for var, want in sorted(cluster.items()):
        if not readers(var):
            out.append(f"{var}: no process reads it")
        for role in readers(var):
            if not deploy.get(role):
                out.append(f"{var}: no {role} to give it to")
            for name, env in sorted(deploy.get(role, {}).items()):
                if var not in env:
                    out.append(f"{name}: {var} is not set (the cluster: {want!r})")
                elif not _agree(var, want, env[var]):
                    out.append(f"{name}: {var}={env[var]!r}, the cluster: {want!r}")
    return out


def _role(command: str) -> str | None:
    for role, marker in (
        ("ingest", "ingest serve"),
        ("aggregator", "aggregator"),
        ("dashboard", "dashboard serve"),
    ):
        if marker in command:
            return role
    return None


def compose_deploy(compose: dict[str, Any]) -> Deploy:
    out: Deploy = {r: {} for r in ROLES}
    for name, service in compose["services"].items():
        role = _role(" ".join(map(str, service.get("command", []))))
        if role:
            env = service.get("environment", {})
            out[role][name] = {k: str(v) for k, v in env.items()}
    return out


def workload(k8s: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(
        o
        for o in k8s
        if o["kind"] in ("Deployment", "StatefulSet") and o["metadata"]["name"] == name
    )


def k8s_deploy(k8s: list[dict[str, Any]]) -> Deploy:
    """What each workload's container sees: its ConfigMaps (envFrom), then its own env."""
    configmaps = {o["metadata"]["name"]: o["data"] for o in k8s if o["kind"] == "ConfigMap"}
    out: Deploy = {r: {} for r in ROLES}
    for role in ROLES:
        name = f"apm-{role}"
        container = workload(k8s, name)["spec"]["template"]["spec"]["containers"][0]
        env: dict[str, str] = {}
        for ref in container.get("envFrom", []):
            if "configMapRef" in ref:
                env.update(configmaps[ref["configMapRef"]["name"]])
        env.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
        out[role][name] = {k: str(v) for k, v in env.items()}
    return out
